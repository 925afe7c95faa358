"""Background restores started through the API; their state lives in the store's ``runs``.

A restore costs model calls, so the API never runs two for one session: a POST while the
session's job is queued or running gets that job back. At most ``max_jobs`` run at once
(the others wait, ``queued``), and at most ``max_queued`` exist at all. A job restores like
the ``restore`` command: under the session's journal lock and from its saved journal,
so a restore started meanwhile by the CLI, ``batch`` or another server waits and then
reuses the turns instead of paying for them again.
"""

from __future__ import annotations

import asyncio

from anyio import to_thread

from ..config import Config
from ..diagnostics import WarningSink
from ..llm.registry import close_provider, get_provider
from ..llm.settings import ProviderSettings
from ..model import Session
from ..pipeline.run import RestoreOptions, journal_store, restore_locked
from ..report.saved import save_restoration
from ..sources import is_container, open_session
from ..store.fetch import existing_files, no_readable_file
from ..store.store import RunRow, SessionRow, Store


class TooManyJobs(Exception):
    """Every job slot, running and waiting, is taken."""


def load_session(row: SessionRow) -> Session:
    """Read a stored session from the files of its chain that still exist."""
    files, _, _ = existing_files(row)
    if not files:
        raise no_readable_file(row)
    # A container (an opencode database) holds many sessions: this one is named by id.
    session = row.id if is_container(row.agent) else None
    return open_session(files, WarningSink(), row.agent, session=session)


async def run_restore(
    store: Store, config: Config, row: SessionRow, run_id: str, max_turns: int | None
) -> None:
    """Restore ``row`` with the configured provider and store the result (never raises)."""
    try:
        await to_thread.run_sync(store.update_run, run_id, "running")
        session = await to_thread.run_sync(load_session, row)
        provider = get_provider(config.llm.model, ProviderSettings.from_config(config))
        try:
            restoration = await restore_locked(
                session,
                config,
                provider,
                store=journal_store(config),
                options=RestoreOptions(max_turns),
            )
        finally:
            await close_provider(provider)

        def save() -> int:
            return save_restoration(store, row.id, restoration, config.restore.redact)

        restoration_id = await to_thread.run_sync(save)
        await to_thread.run_sync(
            lambda: store.update_run(run_id, "done", restoration_id=restoration_id)
        )
    except asyncio.CancelledError:
        await asyncio.shield(
            to_thread.run_sync(lambda: store.update_run(run_id, "failed", error="cancelled"))
        )
        raise
    except Exception as exc:  # a job reports its failure in its status
        message = f"{type(exc).__name__}: {exc}"
        await to_thread.run_sync(lambda: store.update_run(run_id, "failed", error=message))


class JobQueue:
    """The API's restore jobs: one per session, ``max_jobs`` running, ``max_queued`` in all.

    Lives in one event loop (the server's); ``submit`` and ``close`` are called from it.
    """

    def __init__(self, store: Store, max_jobs: int, max_queued: int) -> None:
        self.store = store
        self.max_queued = max_queued
        self._max_jobs = max_jobs
        self._slots: asyncio.Semaphore | None = None
        self._submitting: asyncio.Lock | None = None
        #: Session id -> run id of its queued or running job.
        self._active: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(
        self, config: Config, row: SessionRow, max_turns: int | None
    ) -> tuple[RunRow, bool]:
        """The session's job and whether it is new: its current one, else a new one queued.

        Raises ``TooManyJobs`` when ``max_queued`` jobs exist already.
        """
        if self._submitting is None:
            self._submitting = asyncio.Lock()
            self._slots = asyncio.Semaphore(self._max_jobs)
        # Held across the store write: two POSTs for one session must not both find
        # no job and both create one.
        async with self._submitting:
            run_id = self._active.get(row.id)
            created = run_id is None
            if run_id is None:
                if len(self._active) >= self.max_queued:
                    raise TooManyJobs
                run_id = await to_thread.run_sync(self.store.create_run, row.id, "restore")
                self._active[row.id] = run_id
                task = asyncio.create_task(self._run(config, row, run_id, max_turns))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            run = await to_thread.run_sync(self.store.run, run_id)
        assert run is not None
        return run, created

    async def _run(
        self, config: Config, row: SessionRow, run_id: str, max_turns: int | None
    ) -> None:
        assert self._slots is not None
        try:
            async with self._slots:
                await run_restore(self.store, config, row, run_id, max_turns)
        except asyncio.CancelledError:
            # Cancelled while still waiting for a slot: run_restore never marked it.
            current = await asyncio.shield(to_thread.run_sync(self.store.run, run_id))
            if current is not None and current.status == "queued":
                await asyncio.shield(
                    to_thread.run_sync(
                        lambda: self.store.update_run(run_id, "failed", error="cancelled")
                    )
                )
            raise
        finally:
            self._active.pop(row.id, None)

    async def close(self) -> None:
        """Cancel every job (server shutdown): each is marked ``failed`` / ``cancelled``."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
