from __future__ import annotations

import ctypes
import platform

import pytest

from opencode_restore import heap


def test_give_back_trims_the_heap_where_glibc_is_the_libc() -> None:
    heap._malloc_trim.cache_clear()
    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert heap.give_back() is expected


def test_give_back_is_a_no_op_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoTrim:
        def __init__(self, name: object) -> None:
            pass

        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", NoTrim)
    try:
        assert heap.give_back() is False
    finally:
        heap._malloc_trim.cache_clear()


def test_hold_thresholds_sets_both_where_glibc_is_the_libc() -> None:
    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert heap.hold_thresholds() is expected


def test_hold_thresholds_is_a_no_op_without_mallopt(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoMallopt:
        def __init__(self, name: object) -> None:
            pass

        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert heap.hold_thresholds() is False
