"""Saving and loading a journal: the ``restore.timeline.v1`` payload and its changes.

The payload keeps the name it had before the saved restore state was called a journal, so
journals written by earlier versions still resume. After a turn only what it added goes
to the store's change file (one small fsynced line); anything else writes the whole
payload atomically (see `store.JournalStore`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import anyio

from ...model import Session
from ...timeline.numbering import STATE_VERSION
from .data import Block, CacheState, Clock, Journal, StageRecord, TurnRecord, now_iso
from .store import JournalStore, SourceFile, Streamed

SCHEMA = "restore.timeline.v1"
VERSION = 1


class JournalFormatError(ValueError):
    """A saved journal this version cannot use."""


def to_payload(journal: Journal, *, streamed: bool = False) -> dict[str, Any]:
    """The ``restore.timeline.v1`` payload (pending notices are never included).

    ``streamed``: the labels are made while the payload is written (``store.Streamed``),
    for a store that writes it and keeps nothing.
    """
    labels = journal.labels
    numbering: dict[str, Any]
    if labels is None:
        numbering = journal.numbering
    elif streamed:
        entries = Streamed(lambda: labels.iter_entries(0), len(labels))
        numbering = {"version": STATE_VERSION, "labels": entries}
    else:
        numbering = labels.to_dict()
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "generation": journal.generation,
        "ts": now_iso(journal.clock),
        "session_id": journal.session_id,
        "key": journal.key,
        "agent": journal.agent,
        "title": journal.title,
        "started_at": journal.started_at,
        "fingerprint": journal.fingerprint,
        "source_files": [f.to_dict() for f in journal.source_files],
        "turn_ids": [t.id for t in journal.turns],
        "turns": [_turn_dict(t) for t in journal.turns],
        "blocks": [_plain(b) for b in journal.blocks],
        "next_block": journal.next_block,
        "sources_pool": journal.sources_pool,
        "stages": {name: _plain(s) for name, s in journal.stages.items()},
        "numbering": numbering,
        "state": journal.state,
        "usage": journal.usage,
        "token_factor": journal.token_factor,
        "cache_last_touch_at": journal.cache.last_touch_at,
        "cache_last_ttl_seconds": journal.cache.last_ttl_seconds,
    }


def from_payload(
    data: dict[str, Any],
    session: Session,
    *,
    key: str | None = None,
    clock: Clock = time.time,
) -> Journal:
    """A journal from a saved payload.

    Raises:
        JournalFormatError: another schema or version, or a broken block chain.
    """
    if data.get("schema") != SCHEMA or data.get("version") != VERSION:
        raise JournalFormatError(f"not a {SCHEMA} payload")
    try:
        journal = Journal(session, str(data["fingerprint"]), key=key, clock=clock)
        journal.source_files = [SourceFile.from_dict(f) for f in data["source_files"]]
        journal.turns = [TurnRecord.from_dict(t) for t in data["turns"]]
        journal.blocks = [Block(**{**b, "meta": dict(b.get("meta") or {})}) for b in data["blocks"]]
        journal.next_block = int(data["next_block"])
        journal.sources_pool = list(data["sources_pool"])
        journal.stages = {k: StageRecord(**v) for k, v in data["stages"].items()}
        journal.numbering = dict(data["numbering"])
        journal.state = dict(data["state"])
        journal.usage = dict(data["usage"])
        journal.token_factor = float(data["token_factor"])
        journal.generation = int(data.get("generation", 0))
        touch, ttl = data.get("cache_last_touch_at"), data.get("cache_last_ttl_seconds")
        journal.cache = CacheState(
            float(touch) if touch is not None else None,
            int(ttl) if ttl is not None else None,
            loaded=True,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise JournalFormatError(f"bad {SCHEMA} payload: {exc}") from exc
    before: str | None = None
    for block in journal.blocks:
        if block.parent_id != before:
            raise JournalFormatError(f"block {block.id} does not follow {before}")
        before = block.id
    return journal


async def persist(journal: Journal, store: JournalStore, *, snapshot: bool = False) -> None:
    """Save (under the lock, so no contribution lands half-way).

    When only turns, blocks and labels were added since the last save, they go to the
    store's change file: one small fsynced line. Rewriting the whole payload after every
    turn made a long restore quadratic in its length. Anything else (a range summary,
    pruning, cut turns, stages) and ``snapshot=True`` write the whole payload atomically,
    which also empties the change file.
    """
    async with journal.lock:
        labels = len(journal.labels) if journal.labels is not None else _loaded_labels(journal)
        now = (len(journal.turns), len(journal.blocks), labels)
        saved = journal.saved
        write: Callable[[str, dict[str, Any]], object]
        if snapshot or saved is None or any(n < was for n, was in zip(now, saved, strict=True)):
            journal.generation += 1
            write, data = store.save, to_payload(journal, streamed=not store.in_memory)
        else:
            write, data = store.append, _change(journal, saved)
        if store.in_memory:  # a thread hop costs more than keeping the data
            write(journal.key, data)
        else:
            await anyio.to_thread.run_sync(write, journal.key, data)
        journal.saved = now


def _loaded_labels(journal: Journal) -> int:
    labels = journal.numbering.get("labels", [])
    return len(labels) if isinstance(labels, list) else 0


def _change(journal: Journal, saved: tuple[int, int, int]) -> dict[str, Any]:
    turns, blocks, label_count = saved
    new_turns = journal.turns[turns:]
    # Only the labels issued since the last save are built: the whole map is made
    # for snapshots alone (copying it after every turn grew with the session).
    labels = (
        journal.labels.entries(label_count)
        if journal.labels is not None
        else journal.numbering["labels"][label_count:]
    )
    return {
        "generation": journal.generation,
        "append": {
            "turn_ids": [t.id for t in new_turns],
            "turns": [_turn_dict(t) for t in new_turns],
            "blocks": [_plain(b) for b in journal.blocks[blocks:]],
            "numbering.labels": labels,
        },
        "set": {
            "ts": now_iso(journal.clock),
            "next_block": journal.next_block,
            "state": journal.state,
            "usage": journal.usage,
            "token_factor": journal.token_factor,
            "cache_last_touch_at": journal.cache.last_touch_at,
            "cache_last_ttl_seconds": journal.cache.last_ttl_seconds,
        },
    }


def _plain(record: Block | TurnRecord | StageRecord) -> dict[str, Any]:
    """A record's fields as a dict, sharing its values.

    ``asdict`` deep-copies every nested dict, and the journal is saved after every turn:
    on a long session that copying was most of the run. The payload is serialized at
    once, under the lock, so sharing the values is safe.
    """
    return {name: getattr(record, name) for name in _FIELDS[type(record)]}


def _turn_dict(record: TurnRecord) -> dict[str, Any]:
    return _plain(record) | {"labels": list(record.labels or []) or None}


_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (Block, TurnRecord, StageRecord)
}
