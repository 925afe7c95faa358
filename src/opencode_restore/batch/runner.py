"""Restore many sessions concurrently, resumably, one failure never stopping the others.

``concurrency`` workers take sessions from one loader that reads them (in a worker
thread: parsing is synchronous) at most two ahead, so memory stays flat however many
sessions there are. Per session: ``restore_session``, then, while the worker goes on
with its next session, write ``<key>.md`` and ``<key>.json`` atomically and append
its manifest line. A session whose manifest says ``done``
with the same content hash and provider is skipped, so a batch killed at any point
and started again redoes no finished session and loses none.

With `BatchJournals` (``[restore] resume``, the default) each restore continues the
session's journal under its lock (`journal_lock`): a session that grew
by a turn since it was last restored (by a batch, nightly or ``restore``) has only the
new turn summarized. The journal is written once, when the session's restore ends.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from anyio import to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..atomic import atomic_write, output_refusal, remove_stale_temporaries
from ..config import Config
from ..diagnostics import WarningSink
from ..llm.base import Provider
from ..model import Session
from ..pipeline.journal.batch_store import BatchJournals
from ..pipeline.journal.identity import journal_key
from ..pipeline.journal.lock import journal_lock
from ..pipeline.restoration import Restoration, UsageReport
from ..pipeline.run import RestoreOptions, restore_session
from ..report.summary import summary_markdown
from .items import BatchItem
from .manifest import Manifest

#: Called (in a worker thread) with a finished restoration before its manifest line is
#: written; what it returns is added to the line. An exception fails the session.
ResultHook = Callable[[BatchItem, Restoration], dict[str, Any]]


@dataclass(slots=True)
class Outcome:
    """What happened to one item; ``skipped`` items were already done."""

    item: BatchItem
    status: str
    error: str | None = None
    usage: UsageReport = field(default_factory=UsageReport)
    duration: float = 0.0
    #: Turns taken from the saved journal instead of asking the model again.
    turns_reused: int = 0

    @property
    def ok(self) -> bool:
        """True for a session done now or before."""
        return self.status in ("done", "skipped")


@dataclass(slots=True)
class BatchReport:
    """Every outcome of a batch, in completion order, and the wall time."""

    outcomes: list[Outcome]
    wall: float = 0.0
    #: The ``provider:model`` that restored (``offline:rules``: no model was called).
    provider: str = ""

    def count(self, status: str) -> int:
        """How many items ended with ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[Outcome]:
        """Items that failed or restored with failed turns."""
        return [o for o in self.outcomes if not o.ok]

    @property
    def exit_code(self) -> int:
        """0 when every session succeeded (now or before), 1 otherwise."""
        return 1 if self.failed else 0


#: Sessions read and waiting for a worker, at most (one more may be being read).
_READ_AHEAD = 2


@dataclass(slots=True)
class _Loaded:
    """An item read ahead of its restore: its session, or why it could not be read."""

    item: BatchItem
    session: Session | None
    error: str | None
    seconds: float


def _load(item: BatchItem) -> _Loaded:
    """Read ``item`` (in a worker thread); an unreadable one carries its error."""
    start = time.perf_counter()
    session = None
    error = item.error
    if error is None:
        try:
            session = item.load(WarningSink())
        except Exception as exc:  # a session's failure is data, never the batch's end
            error = f"{type(exc).__name__}: {exc}"
    return _Loaded(item, session, error, time.perf_counter() - start)


@dataclass
class BatchJob:
    """One batch: the items, where outputs go, and how to restore."""

    items: Sequence[BatchItem]
    out_dir: Path
    config: Config
    provider: Provider
    manifest: Manifest
    concurrency: int = 4
    options: RestoreOptions = field(default_factory=RestoreOptions)
    force: bool = False
    on_result: ResultHook | None = None
    #: A second manifest that gets a copy of every line (nightly: the dated folder's).
    mirror: Manifest | None = None
    #: Called in the event loop when a session's restore starts, when it ends (its worker
    #: then takes the next session while the outputs are written) and when the session is
    #: recorded.
    on_start: Callable[[BatchItem], None] | None = None
    on_restored: Callable[[BatchItem], None] | None = None
    on_finish: Callable[[Outcome], None] | None = None
    #: Saved journals to continue (None: every restore starts from turn 1).
    journals: BatchJournals | None = None

    @property
    def provider_spec(self) -> str:
        return f"{self.provider.name}:{self.provider.model}"

    def plan(self) -> tuple[list[BatchItem], list[BatchItem]]:
        """(to restore, already done) under the manifest."""
        todo: list[BatchItem] = []
        done: list[BatchItem] = []
        for item in self.items:
            finished = self.manifest.is_done(item.key, item.content_hash, self.provider_spec)
            (done if finished and not self.force else todo).append(item)
        return todo, done

    async def run(self) -> BatchReport:
        """Restore every item not already done; never raises for a session's failure."""
        start = time.perf_counter()
        todo, done = self.plan()
        report = BatchReport(
            [Outcome(item, "skipped") for item in done], provider=self.provider_spec
        )
        self.out_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.out_dir)  # outputs half-written when a batch was killed
        workers = max(1, min(self.concurrency, len(todo)))
        # Sessions are read ahead, so a worker that finishes a session starts the next
        # one's first LLM call without waiting for the parse. Only a few: a session of
        # a large log holds its text, and the workers already hold one each.
        send, receive = anyio.create_memory_object_stream[_Loaded](_READ_AHEAD)

        async def worker(sessions: MemoryObjectReceiveStream[_Loaded]) -> None:
            writing: anyio.Event | None = None
            async with sessions:
                async for loaded in sessions:
                    if self.on_start is not None:
                        self.on_start(loaded.item)
                    outcome, restoration = await self._restore(loaded)
                    if self.on_restored is not None:
                        self.on_restored(loaded.item)
                    # The outputs and the manifest line are written while this worker
                    # goes on with its next session; one write in flight per worker.
                    if writing is not None:
                        await writing.wait()
                    writing = anyio.Event()
                    tg.start_soon(self._finish, outcome, restoration, report, writing)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._load_all, todo, send)
                with receive:
                    for _ in range(workers):
                        tg.start_soon(worker, receive.clone())
        except BaseExceptionGroup as group:
            # A full disk fails every worker's manifest write at once: the batch ends with
            # the first one, which names its file (one line from the CLI), not the group's
            # traceback. Any other failure stays a group, as it is a bug.
            raise _only_os_error(group) from None
        finally:
            self.manifest.close()
            if self.mirror is not None:
                self.mirror.close()
        report.wall = time.perf_counter() - start
        return report

    async def _load_all(
        self, todo: Sequence[BatchItem], send: MemoryObjectSendStream[_Loaded]
    ) -> None:
        async with send:
            for item in todo:
                await send.send(await to_thread.run_sync(_load, item))

    async def _restore(self, loaded: _Loaded) -> tuple[Outcome, Restoration | None]:
        start = time.perf_counter()
        item = loaded.item
        outcome = Outcome(item, "failed", error=loaded.error)
        restoration = None
        if loaded.session is not None:
            try:
                restoration = await self._restore_session(item, loaded.session)
            except Exception as exc:  # a session's failure is data, never the batch's end
                outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.duration = loaded.seconds + time.perf_counter() - start
        return outcome, restoration

    async def _finish(
        self,
        outcome: Outcome,
        restoration: Restoration | None,
        report: BatchReport,
        written: anyio.Event,
    ) -> None:
        """Write a restored session's outputs, then its manifest line; shielded, so a
        cancelled batch still records a restore it finished."""
        start = time.perf_counter()
        extra: dict[str, Any] = {}
        with anyio.CancelScope(shield=True):
            try:
                if restoration is not None:
                    extra = await to_thread.run_sync(self._save, outcome.item, restoration)
                    outcome.status = "done" if restoration.complete else "incomplete"
                    outcome.usage = restoration.usage
                    if restoration.timeline is not None:
                        outcome.turns_reused = restoration.timeline.turns_reused
                    if not restoration.complete:
                        turns = ", ".join(str(f.turn) for f in restoration.failed_turns)
                        first = restoration.failed_turns[0].error
                        outcome.error = f"turns {turns} failed: {first}"
            except Exception as exc:  # an output that cannot be written fails the session
                outcome.error = f"{type(exc).__name__}: {exc}"
            outcome.duration += time.perf_counter() - start
            await to_thread.run_sync(self._record, outcome, extra)
        report.outcomes.append(outcome)
        written.set()
        if self.on_finish is not None:
            self.on_finish(outcome)

    async def _restore_session(self, item: BatchItem, session: Session) -> Restoration:
        store = self.journals
        if store is None:
            return await restore_session(session, self.config, self.provider, options=self.options)
        # The journal is named as for `restore` (`journal_key`: the id and the file), so
        # every command continues one another's work, and another session with the same
        # id (an eval log reusing a sample id, a copy) gets a journal of its own.
        key = journal_key(session)
        async with journal_lock(store, key):
            try:
                return await restore_session(
                    session, self.config, self.provider, options=self.options, store=store
                )
            finally:
                # Done or failed, what was summarized is kept for the next run; shielded
                # so that a cancelled batch still writes it before releasing the lock.
                with anyio.CancelScope(shield=True):
                    await to_thread.run_sync(store.flush, key)

    def _save(self, item: BatchItem, restoration: Restoration) -> dict[str, Any]:
        md, js = self.out_dir / f"{item.key}.md", self.out_dir / f"{item.key}.json"
        for target in (md, js):
            # --out the input folder: a session's log may bear its output's name.
            if (why := output_refusal(target, item.files)) is not None:
                raise OSError(errno.EINVAL, why, str(target))
        atomic_write(md, summary_markdown(restoration).encode())
        atomic_write(js, restoration.model_dump_json(indent=2).encode())
        return self.on_result(item, restoration) if self.on_result is not None else {}

    def _record(self, outcome: Outcome, extra: dict[str, Any]) -> None:
        item = outcome.item
        written = outcome.status != "failed"
        record: dict[str, Any] = {
            "key": item.key,
            "session": item.session_id,
            "agent": item.agent,
            "source_files": [str(p) for p in item.files],
            "hash": item.content_hash,
            "provider": self.provider_spec,
            "status": outcome.status,
            "error": outcome.error,
            "usage": outcome.usage.model_dump(),
            "turns_reused": outcome.turns_reused,
            "duration_s": round(outcome.duration, 3),
            "outputs": [f"{item.key}.md", f"{item.key}.json"] if written else [],
            "finished_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            **extra,
        }
        self.manifest.append(record)
        if self.mirror is not None:
            self.mirror.append(record)


def _only_os_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first `OSError` of ``group`` when it holds nothing else, else ``group`` itself."""
    matched, rest = group.split(OSError)
    if matched is None or rest is not None:
        return group
    leaf: BaseException = matched
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf
