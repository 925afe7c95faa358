"""The restore timeline (``restore.timeline.v1``): the accumulated state of one restore.

Modelled on the "react v2" timeline (seed 001): an ordered stream of blocks (turn header,
turn summary, evidence, range summary, system note) plus a sources pool and metadata,
saved as one versioned JSON artifact after every turn. Blocks are id-linked (each names the
block before it, as seed 002's entries do), so a loaded file is checked for gaps.

*Contribute* adds a persistent block; *announce* adds an ephemeral notice that the next
render shows once and that is never saved. One ``anyio.Lock`` guards contribute, render,
compaction and persist so they never interleave.

Compaction (see ``budget``) replaces the blocks before a cut with one range summary; the
saved stream then starts at that summary. Every turn's summary is also kept in its
``TurnRecord``, so the restoration still lists them all and resuming can rebuild state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import anyio

from ...llm.base import LLMRequest
from ...model import Session
from ...timeline.numbering import Numbering
from ..prompting import render
from .store import SourceFile, TimelineStore

SCHEMA = "restore.timeline.v1"
VERSION = 1

#: Blocks older than the last few turns, this long or longer, are cut when the cache expired.
PRUNE_KEEP_TURNS = 4
PRUNE_MIN_CHARS = 600

Clock = Callable[[], float]


class TimelineFormatError(ValueError):
    """A saved timeline this version cannot use."""


def _now_iso(clock: Clock) -> str:
    return datetime.fromtimestamp(clock(), UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class Block:
    """One entry of the stream."""

    id: str
    kind: str
    text: str
    parent_id: str | None = None
    turn: int | None = None
    turn_id: str | None = None
    ts: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def view(self) -> render.BlockView:
        """What the renderer needs."""
        return render.BlockView(self.kind, self.text, self.turn, self.meta)


@dataclass(slots=True)
class TurnRecord:
    """A finished turn: identity, content hash, where its labels end, and its result."""

    number: int
    id: str
    hash: str
    labels: tuple[str, str] | None
    labels_end: int
    redactions: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        labels = data.get("labels")
        return cls(
            number=int(data["number"]),
            id=str(data["id"]),
            hash=str(data["hash"]),
            labels=(str(labels[0]), str(labels[1])) if labels else None,
            labels_end=int(data["labels_end"]),
            redactions={str(k): int(v) for k, v in (data.get("redactions") or {}).items()},
            summary=data.get("summary"),
            error=data.get("error"),
        )


@dataclass(slots=True)
class StageRecord:
    """A finished stage after the turns (evidence, synthesis, branches) and its output."""

    key: str
    labels_end: int
    data: dict[str, Any]


@dataclass(slots=True)
class CacheState:
    """When the provider's prompt cache was last written or read, and for how long it lives."""

    last_touch_at: float | None = None
    last_ttl_seconds: int | None = None
    loaded: bool = False  # the first render after a load uses the saved TTL


class RestoreTimeline:
    """Blocks, sources pool and metadata of one session's restore."""

    def __init__(
        self,
        session: Session,
        fingerprint: str,
        *,
        key: str | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.session_id = session.id
        self.key = key or session.id
        self.agent = session.agent
        self.title = session.title
        self.started_at = session.started_at.isoformat() if session.started_at else None
        self.fingerprint = fingerprint
        self.clock = clock
        self.blocks: list[Block] = []
        self.sources_pool: list[dict[str, Any]] = []
        self.turns: list[TurnRecord] = []
        self.stages: dict[str, StageRecord] = {}
        self.source_files: list[SourceFile] = []
        #: The label map as loaded; once a run numbers messages, ``labels`` is saved instead.
        self.numbering: dict[str, Any] = {"version": 1, "labels": []}
        self.labels: Numbering | None = None
        self.state: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.token_factor = 1.0
        self.cache = CacheState()
        self.next_block = 1
        self._announcements: list[str] = []
        self._lock: anyio.Lock | None = None
        #: Snapshot generation on disk; changes after it go to the store's journal.
        self.generation = 0
        #: Turns, blocks and labels the disk holds; None: the next persist is a snapshot.
        self._saved: tuple[int, int, int] | None = None

    @property
    def lock(self) -> anyio.Lock:
        """The lock of contribute/render/persist (made lazily, inside the event loop)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    # -- contribute / announce -------------------------------------------------------

    def _append(self, kind: str, text: str, **kw: Any) -> Block:
        block = Block(
            id=f"b{self.next_block}",
            kind=kind,
            text=text,
            parent_id=self.blocks[-1].id if self.blocks else None,
            ts=_now_iso(self.clock),
            **kw,
        )
        self.next_block += 1
        self.blocks.append(block)
        return block

    async def contribute(
        self,
        kind: str,
        text: str,
        *,
        turn: int | None = None,
        turn_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Block:
        """Append a persistent block."""
        async with self.lock:
            return self._append(kind, text, turn=turn, turn_id=turn_id, meta=meta or {})

    def announce(self, text: str) -> None:
        """An ephemeral notice for the next render only; never saved."""
        self._announcements.append(text)

    def clear_announcements(self) -> None:
        """Drop the pending announcements (they were rendered)."""
        self._announcements.clear()

    def _turn_blocks(self, record: TurnRecord) -> None:
        self._append(
            "turn.header",
            render.header_text(record.number, record.labels),
            turn=record.number,
            turn_id=record.id,
        )
        text = (
            render.summary_text(record.summary)
            if record.summary is not None
            else render.failed_text(record.error or "unknown error")
        )
        meta = {} if record.summary is not None else {"failed": True}
        self._append("turn.summary", text, turn=record.number, turn_id=record.id, meta=meta)

    async def add_turn(self, record: TurnRecord) -> None:
        """Record a finished turn and contribute its header and summary blocks."""
        async with self.lock:
            self.turns.append(record)
            self._turn_blocks(record)

    # -- render --------------------------------------------------------------------

    def history(self) -> list[Block]:
        """The blocks a render shows (the saved stream)."""
        return self.blocks

    def touch(self, ttl_seconds: int) -> None:
        """The provider's cache was just written or read."""
        self.cache.last_touch_at = self.clock()
        self.cache.last_ttl_seconds = ttl_seconds

    def _maybe_prune(self, ttl_seconds: int, buffer_seconds: int) -> None:
        ttl = ttl_seconds
        if self.cache.loaded and self.cache.last_ttl_seconds:
            ttl = self.cache.last_ttl_seconds
        self.cache.loaded = False
        touched = self.cache.last_touch_at
        if ttl <= 0 or touched is None or self.clock() - touched < ttl - buffer_seconds:
            return
        recent = {r.number for r in self.turns[-PRUNE_KEEP_TURNS:]}
        pruned = 0
        for block in self.blocks:
            bulky = block.kind in ("turn.summary", "evidence") and len(block.text) > PRUNE_MIN_CHARS
            if bulky and block.turn not in recent and not block.meta.get("pruned"):
                block.meta["pruned"] = True
                pruned += 1
        # The cache is gone either way; a new touch starts the next TTL window.
        self.cache.last_touch_at = None
        if not pruned:
            return
        self._saved = None  # saved blocks changed: the next persist writes a snapshot
        idle = int(self.clock() - touched)
        self._append(
            "system.message",
            f"Context was pruned because the provider's prompt cache (TTL {ttl}s) expired "
            f"after {idle}s idle: {pruned} older blocks are shown truncated. The full turn "
            "summaries are kept in the restore state and the final restoration.",
        )
        self._announcements.append(
            f"{pruned} older blocks were truncated after the prompt cache expired."
        )

    async def render(
        self,
        base: LLMRequest,
        *,
        system: str,
        header: str,
        task: str,
        ttl_seconds: int = 0,
        prune_buffer_seconds: int = 0,
        announcements: Sequence[str] = (),
        consume: bool = True,
    ) -> LLMRequest:
        """``base`` filled with the rendered stream.

        Pending announcements are shown after the stable part and then dropped, unless
        ``consume`` is False (the caller may render again and calls ``clear_announcements``).
        """
        async with self.lock:
            self._maybe_prune(ttl_seconds, prune_buffer_seconds)
            notes = [*self._announcements, *announcements]
            if consume:
                self._announcements.clear()
            return render.build_request(
                system=system,
                header=header,
                blocks=[b.view() for b in self.blocks],
                announcements=notes,
                task=task,
                base=base,
            )

    # -- compaction and truncation -------------------------------------------------

    async def compact(self, cut: int, text: str, meta: dict[str, Any]) -> Block:
        """Replace ``blocks[:cut]`` with one range summary block at the cut."""
        async with self.lock:
            kept = self.blocks[cut:]
            summary = Block(
                id=f"b{self.next_block}",
                kind="range.summary",
                text=text,
                ts=_now_iso(self.clock),
                meta=meta | {"replaced": cut},
            )
            self.next_block += 1
            if kept:
                kept[0].parent_id = summary.id  # relinked: its old parent is gone
            self.blocks = [summary, *kept]
            self._saved = None
            return summary

    def keep_turns(self, count: int) -> None:
        """Forget every turn after the first ``count`` and everything derived from them.

        Blocks of later turns, evidence and stage results go. When a range summary covers
        a dropped turn its text is no longer true, so the kept turns' blocks are rebuilt
        from their records instead.
        """
        self.turns = self.turns[:count]
        self._saved = None
        self.state = {}
        self.stages.clear()
        self.sources_pool.clear()
        self._announcements.clear()
        blocks = [b for b in self.blocks if b.kind != "evidence"]
        ranges = [b for b in blocks if b.kind == "range.summary"]
        if any(int(r.meta.get("last_turn", 0)) > count for r in ranges):
            self.blocks = []
            for record in self.turns:
                self._turn_blocks(record)
            return
        self.blocks = [b for b in blocks if b.turn is None or b.turn <= count]
        self._relink()

    def _relink(self) -> None:
        for before, block in zip([None, *self.blocks], self.blocks, strict=False):
            block.parent_id = before.id if before is not None else None
        self._saved = None

    def drop_evidence(self) -> None:
        """Remove evidence blocks and the sources pool (a new evidence search replaces them)."""
        self.blocks = [b for b in self.blocks if b.kind != "evidence"]
        self.sources_pool.clear()
        self._relink()

    # -- persistence ---------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The ``restore.timeline.v1`` payload (announcements are never included)."""
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "generation": self.generation,
            "ts": _now_iso(self.clock),
            "session_id": self.session_id,
            "key": self.key,
            "agent": self.agent,
            "title": self.title,
            "started_at": self.started_at,
            "fingerprint": self.fingerprint,
            "source_files": [f.to_dict() for f in self.source_files],
            "turn_ids": [t.id for t in self.turns],
            "turns": [_turn_dict(t) for t in self.turns],
            "blocks": [_plain(b) for b in self.blocks],
            "next_block": self.next_block,
            "sources_pool": self.sources_pool,
            "stages": {name: _plain(s) for name, s in self.stages.items()},
            "numbering": self.labels.to_dict() if self.labels is not None else self.numbering,
            "state": self.state,
            "usage": self.usage,
            "token_factor": self.token_factor,
            "cache_last_touch_at": self.cache.last_touch_at,
            "cache_last_ttl_seconds": self.cache.last_ttl_seconds,
        }

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        session: Session,
        *,
        key: str | None = None,
        clock: Clock = time.time,
    ) -> RestoreTimeline:
        """A timeline from a saved payload.

        Raises:
            TimelineFormatError: another schema or version, or a broken block chain.
        """
        if data.get("schema") != SCHEMA or data.get("version") != VERSION:
            raise TimelineFormatError(f"not a {SCHEMA} payload")
        try:
            tl = cls(session, str(data["fingerprint"]), key=key, clock=clock)
            tl.source_files = [SourceFile.from_dict(f) for f in data["source_files"]]
            tl.turns = [TurnRecord.from_dict(t) for t in data["turns"]]
            tl.blocks = [Block(**{**b, "meta": dict(b.get("meta") or {})}) for b in data["blocks"]]
            tl.next_block = int(data["next_block"])
            tl.sources_pool = list(data["sources_pool"])
            tl.stages = {k: StageRecord(**v) for k, v in data["stages"].items()}
            tl.numbering = dict(data["numbering"])
            tl.state = dict(data["state"])
            tl.usage = dict(data["usage"])
            tl.token_factor = float(data["token_factor"])
            tl.generation = int(data.get("generation", 0))
            touch, ttl = data.get("cache_last_touch_at"), data.get("cache_last_ttl_seconds")
            tl.cache = CacheState(
                float(touch) if touch is not None else None,
                int(ttl) if ttl is not None else None,
                loaded=True,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TimelineFormatError(f"bad {SCHEMA} payload: {exc}") from exc
        before: str | None = None
        for block in tl.blocks:
            if block.parent_id != before:
                raise TimelineFormatError(f"block {block.id} does not follow {before}")
            before = block.id
        return tl

    async def persist(self, store: TimelineStore, *, snapshot: bool = False) -> None:
        """Save (under the lock, so no contribution lands half-way).

        When only turns, blocks and labels were added since the last save, they go to
        the store's journal: one small fsynced line. Rewriting the whole artifact after
        every turn made a long restore quadratic in its length. Anything else (a range
        summary, pruning, cut turns, stages) and ``snapshot=True`` write the whole
        artifact atomically, which also empties the journal.
        """
        async with self.lock:
            labels = len(self.labels) if self.labels is not None else self._loaded_labels()
            now = (len(self.turns), len(self.blocks), labels)
            saved = self._saved
            write: Callable[[str, dict[str, Any]], object]
            if snapshot or saved is None or any(n < was for n, was in zip(now, saved, strict=True)):
                self.generation += 1
                write, data = store.save, self.to_dict()
            else:
                write, data = store.append, self._change(saved)
            if store.in_memory:  # a thread hop costs more than keeping the data
                write(self.key, data)
            else:
                await anyio.to_thread.run_sync(write, self.key, data)
            self._saved = now

    def _loaded_labels(self) -> int:
        labels = self.numbering.get("labels", [])
        return len(labels) if isinstance(labels, list) else 0

    def _change(self, saved: tuple[int, int, int]) -> dict[str, Any]:
        turns, blocks, label_count = saved
        new_turns = self.turns[turns:]
        # Only the labels issued since the last save are built: the whole map is made
        # for snapshots alone (copying it after every turn grew with the session).
        labels = (
            self.labels.entries(label_count)
            if self.labels is not None
            else self.numbering["labels"][label_count:]
        )
        return {
            "generation": self.generation,
            "append": {
                "turn_ids": [t.id for t in new_turns],
                "turns": [_turn_dict(t) for t in new_turns],
                "blocks": [_plain(b) for b in self.blocks[blocks:]],
                "numbering.labels": labels,
            },
            "set": {
                "ts": _now_iso(self.clock),
                "next_block": self.next_block,
                "state": self.state,
                "usage": self.usage,
                "token_factor": self.token_factor,
                "cache_last_touch_at": self.cache.last_touch_at,
                "cache_last_ttl_seconds": self.cache.last_ttl_seconds,
            },
        }


def _plain(record: Block | TurnRecord | StageRecord) -> dict[str, Any]:
    """A record's fields as a dict, sharing its values.

    ``asdict`` deep-copies every nested dict, and the timeline is saved after every turn:
    on a long session that copying was most of the run. The payload is serialized at
    once, under the lock, so sharing the values is safe.
    """
    return {name: getattr(record, name) for name in _FIELDS[type(record)]}


def _turn_dict(record: TurnRecord) -> dict[str, Any]:
    return _plain(record) | {"labels": list(record.labels or []) or None}


_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (Block, TurnRecord, StageRecord)
}
