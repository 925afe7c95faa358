"""Giving freed memory back to the operating system.

CPython hands strings over 512 bytes to the C allocator. When a long restore drops the
bodies of the turns it has summarized (``RestoreOptions.keep_messages``), glibc keeps the
freed pages inside its heap, where the many small objects the later turns create (pymalloc
arenas are mapped apart) never reuse them: the RSS stayed at the high-water mark of the
read. ``malloc_trim`` returns those pages.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to call
        return None
    return trim


def give_back() -> bool:
    """Return the C heap's free pages to the system; False where the libc cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
