"""Giving freed memory back to the operating system.

CPython hands strings over 512 bytes to the C allocator. When a long restore drops the
bodies of the turns it has summarized (``RestoreOptions.keep_messages``), glibc keeps the
freed pages inside its heap, where the many small objects the later turns create (pymalloc
arenas are mapped apart) never reuse them: the RSS stayed at the high-water mark of the
read. ``malloc_trim`` returns those pages.

glibc also raises its mmap threshold each time a mapped block is freed (up to 32 MB), so
after the first big tool outputs the later ones are carved from the heap too, where the
small objects around them keep the pages pinned. ``hold_thresholds`` fixes both
thresholds instead (bench/scale.py: about 50 MB less at the end of a 200 MB restore).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

#: ``mallopt`` parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks from this size up are mapped apart (and unmapped when freed); free space over
#: this size at the top of the heap goes back at once. glibc's own starting value.
THRESHOLD = 128 * 1024


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to call
        return None
    return trim


def hold_thresholds() -> bool:
    """Keep glibc's mmap and trim thresholds at ``THRESHOLD`` for the rest of the
    process (see the module docstring); False where the libc has no ``mallopt``."""
    try:
        mallopt: Callable[[int, int], int] = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, THRESHOLD) == 1 and ok


def give_back() -> bool:
    """Return the C heap's free pages to the system; False where the libc cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
