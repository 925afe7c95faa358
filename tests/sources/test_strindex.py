"""sources.strindex: a compact string set numbered in insertion order, same answers as a dict."""

from __future__ import annotations

import tracemalloc
import uuid

from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.sources.strindex import StrIndex

#: Short texts that collide often, odd characters (a lone surrogate, NUL, non-ASCII).
texts = st.one_of(st.sampled_from(["", "a", "b", "ab", "\x00", "é", "\ud800"]), st.text(max_size=8))


@given(st.lists(st.tuples(st.booleans(), texts), max_size=200))
def test_answers_as_a_dict_numbering_first_sightings(ops: list[tuple[bool, str]]) -> None:
    index = StrIndex()
    plain: dict[str, int] = {}
    for adding, key in ops:
        if adding:
            assert index.add(key) == plain.setdefault(key, len(plain))
        else:
            assert index.get(key) == plain.get(key, -1)
            assert (key in index) == (key in plain)
    assert len(index) == len(plain)
    assert [index[n] for n in range(len(index))] == list(plain)


def test_a_number_is_no_member() -> None:
    index = StrIndex()
    index.add("1")
    assert 1 not in index


def test_many_uuids_cost_a_fraction_of_a_dict() -> None:
    keys = [str(uuid.UUID(int=n * 7919 + 1)) for n in range(100_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = StrIndex()
        for k in keys:
            index.add(k)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 36 bytes of text, 16 of hash and end, ~8 of table: a dict[str, int] of fresh
    # strings took ~200 (the strings, their int numbers, its slots).
    assert held / len(keys) < 80
    assert index.get(keys[12345]) == 12345
