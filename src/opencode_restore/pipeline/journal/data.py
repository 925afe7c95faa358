"""The journal: the accumulated state of one restore, kept between runs.

Modelled on the "react v2" timeline of seed 001 (the saved payload keeps its schema name,
``restore.timeline.v1``): an ordered stream of blocks (turn header, turn summary,
evidence, range summary, system note) plus a sources pool and metadata. Blocks are
id-linked (each names the block before it, as seed 002's entries do), so a loaded
journal is checked for gaps.

This module holds the data and its structural edits; `policy` decides when blocks are
pruned or folded and renders them, `persist` saves and loads them. One ``anyio.Lock``
guards contributions, rendering, compaction and saving so they never interleave.

Every turn's summary is also kept in its ``TurnRecord``, so after a compaction the
restoration still lists them all and resuming can rebuild state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio

from ...llm.base import ChatMessage
from ...model import Session
from ...timeline.numbering import Numbering
from ..prompting import render
from .identity import journal_key
from .store import SourceFile

Clock = Callable[[], float]


def now_iso(clock: Clock) -> str:
    """The clock's time as an ISO timestamp (seconds), as blocks and payloads carry it."""
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


class Journal:
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
        self.key = key or journal_key(session)
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
        #: Ephemeral notices for the next render (never saved); see `policy.render`.
        self.notices: list[str] = []
        self._lock: anyio.Lock | None = None
        #: Snapshot generation on disk; changes after it go to the store's change file.
        self.generation = 0
        #: Turns, blocks and labels the disk holds; None: the next save is a snapshot.
        self.saved: tuple[int, int, int] | None = None
        #: The rendered stream of ``_streamed`` blocks of the list ``_stream_of``.
        self._stream = render.Stream()
        self._stream_of: list[Block] | None = None
        self._streamed = 0

    @property
    def lock(self) -> anyio.Lock:
        """The lock of contribute/render/persist (made lazily, inside the event loop)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def stream(self) -> Sequence[str]:
        """The blocks rendered as the stable stream of a request (`render.Stream`).

        Blocks appended since the last call are rendered and added; when the list was
        replaced (a compaction, cut turns, a load) or a block changed in place
        (`edited`), the stream is rendered again from the first block.
        """
        if self._stream_of is not self.blocks or self._streamed > len(self.blocks):
            self._stream, self._stream_of, self._streamed = render.Stream(), self.blocks, 0
        for block in self.blocks[self._streamed :]:
            self._stream.add(block.view())
        self._streamed = len(self.blocks)
        return self._stream.texts

    def stream_messages(self) -> Sequence[ChatMessage]:
        """`stream` as one message per text, shared by every request (`render.Stream`)."""
        self.stream()
        return self._stream.messages

    def edited(self) -> None:
        """Blocks were changed in place (pruned): the next save writes a snapshot, and
        the stream is rendered again."""
        self.saved = None
        self._stream_of = None

    def new_block(self, kind: str, text: str, **kw: Any) -> Block:
        """A block with the next id (not yet in the stream)."""
        block = Block(id=f"b{self.next_block}", kind=kind, text=text, ts=now_iso(self.clock), **kw)
        self.next_block += 1
        return block

    def append(self, kind: str, text: str, **kw: Any) -> Block:
        """Add a block at the end of the stream (the caller holds the lock)."""
        block = self.new_block(
            kind, text, parent_id=self.blocks[-1].id if self.blocks else None, **kw
        )
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
            return self.append(kind, text, turn=turn, turn_id=turn_id, meta=meta or {})

    def _turn_blocks(self, record: TurnRecord) -> None:
        self.append(
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
        self.append("turn.summary", text, turn=record.number, turn_id=record.id, meta=meta)

    async def add_turn(self, record: TurnRecord) -> None:
        """Record a finished turn and contribute its header and summary blocks."""
        async with self.lock:
            self.turns.append(record)
            self._turn_blocks(record)

    async def compact(self, cut: int, text: str, meta: dict[str, Any]) -> Block:
        """Replace ``blocks[:cut]`` with one range summary block at the cut.

        Where to cut is the context budget's choice (`pipeline.budget`).
        """
        async with self.lock:
            kept = self.blocks[cut:]
            summary = self.new_block("range.summary", text, meta=meta | {"replaced": cut})
            if kept:
                kept[0].parent_id = summary.id  # relinked: its old parent is gone
            self.blocks = [summary, *kept]
            self.saved = None
            return summary

    def keep_turns(self, count: int) -> None:
        """Forget every turn after the first ``count`` and everything derived from them.

        Blocks of later turns, evidence and stage results go. When a range summary covers
        a dropped turn its text is no longer true, so the kept turns' blocks are rebuilt
        from their records instead.
        """
        self.turns = self.turns[:count]
        self.saved = None
        self.state = {}
        self.stages.clear()
        self.sources_pool.clear()
        self.notices.clear()
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
        self.saved = None

    def drop_evidence(self) -> None:
        """Remove evidence blocks and the sources pool (a new evidence search replaces them)."""
        self.blocks = [b for b in self.blocks if b.kind != "evidence"]
        self.sources_pool.clear()
        self._relink()
