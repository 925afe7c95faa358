from __future__ import annotations

import ctypes
import platform

import pytest

from opencode_restore import heap

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


class NoSuchLibc:
    """A ``ctypes.CDLL`` stand-in whose library has none of the symbols asked for
    (macOS, musl)."""

    def __init__(self, name: object) -> None:
        pass

    def __getattr__(self, name: str) -> object:
        raise AttributeError(name)


def test_give_back_trims_the_heap_where_glibc_is_the_libc() -> None:
    heap._malloc_trim.cache_clear()
    assert heap.give_back() is GLIBC


def test_give_back_is_a_no_op_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", NoSuchLibc)
    try:
        assert heap.give_back() is False
    finally:
        heap._malloc_trim.cache_clear()


def test_hold_thresholds_sets_both_where_glibc_is_the_libc() -> None:
    assert heap.hold_thresholds() is GLIBC


def test_hold_thresholds_is_a_no_op_without_mallopt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", NoSuchLibc)
    assert heap.hold_thresholds() is False
