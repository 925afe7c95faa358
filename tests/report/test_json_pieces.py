"""The restoration's JSON written in pieces is ``model_dump_json(indent=2)``, exactly."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.report.json_pieces import model_json_pieces, model_python_json
from opencode_restore.report.summary import render_restoration, restoration_json
from opencode_restore.sources import open_session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = [
    FIXTURES / "claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    FIXTURES / "claude-code/claude-code-log/edge_cases.jsonl",
    next((FIXTURES / "codex/recorded/exec-resume").glob("rollout-*.jsonl")),
]


class Item(BaseModel):
    name: str
    when: datetime | None = None
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, int] = Field(default_factory=dict)


class Doc(BaseModel):
    title: str
    items: list[Item] = Field(default_factory=list)
    count: int = 0
    note: Item | None = None
    words: list[str] = Field(default_factory=list)
    score: float | None = None


_items = st.builds(
    Item,
    name=st.text(),
    when=st.none() | st.datetimes(timezones=st.just(UTC)),
    tags=st.lists(st.text(), max_size=3),
    extra=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
_docs = st.builds(
    Doc,
    title=st.text(),
    items=st.lists(_items, max_size=4),
    count=st.integers(),
    note=st.none() | _items,
    words=st.lists(st.text(), max_size=4),
    score=st.none() | st.floats(allow_nan=False),
)


def _restored(path: Path) -> Restoration:
    session = open_session([path], WarningSink())
    return anyio.run(
        lambda: restore_session(
            session,
            load_config(env={}),
            OfflineProvider(),
            options=RestoreOptions(workspace="none"),
        )
    )


@given(_docs, st.none() | st.sets(st.sampled_from(sorted(Doc.model_fields))))
def test_pieces_join_to_the_whole_dump(doc: Doc, include: set[str] | None) -> None:
    assert "".join(model_json_pieces(doc, include)) == doc.model_dump_json(
        indent=2, include=include
    )


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_real_restoration_is_written_as_pydantic_writes_it(path: Path) -> None:
    restoration = _restored(path)
    assert restoration.references  # the list fields are really written item by item
    whole = restoration.model_dump_json(indent=2)
    assert "".join(restoration_json(restoration)) == whole
    assert render_restoration(restoration, "json") == whole
    turns = restoration.model_dump_json(indent=2, include={"session", "turns", "failed_turns"})
    assert "".join(restoration_json(restoration, dump_turns=True)) == turns


@given(_docs)
def test_the_stored_text_joins_to_json_dumps_of_the_whole_dump(doc: Doc) -> None:
    assert model_python_json(doc) == json.dumps(doc.model_dump(mode="json"), default=str)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_real_restoration_is_stored_as_json_dumps_writes_it(path: Path) -> None:
    restoration = _restored(path)
    assert restoration.references
    whole = json.dumps(restoration.model_dump(mode="json"), default=str)
    assert model_python_json(restoration) == whole


def test_the_stored_text_never_holds_the_whole_dump(tmp_path: Path) -> None:
    restoration = _restored(LOGS[0])
    # Many turns and references, so the dump is large next to one item of it.
    restoration.references *= 40
    restoration.turns *= 40
    whole = json.dumps(restoration.model_dump(mode="json"), default=str)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        model_python_json(restoration)
        text_peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        json.dumps(restoration.model_dump(mode="json"), default=str)
        dict_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    # The pieces and the joined text (ASCII): about twice the text; the whole dump as
    # dicts and its text took 1.6 times that.
    assert text_peak < 2.5 * len(whole), (text_peak, len(whole))
    assert text_peak < 0.7 * dict_peak, (dict_peak, text_peak)
