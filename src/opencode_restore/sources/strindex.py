"""Strings numbered in the order they were first seen, held in compact arrays.

Reading a log keeps one id per entry (uuids to link parents, message ids to keep them
unique): with a ``dict[str, int]`` that cost ~200 bytes per entry (the string object,
its number as an int object, the dict's slots), 150 MB for a 1 GB log. Here the text
sits in one ``bytearray`` (UTF-8) and the numbers in an open-addressing table of
machine ints: the text plus ~30 bytes per string, and no Python object per string.
"""

from __future__ import annotations

from array import array

#: Free table slot.
_FREE = -1


class StrIndex:
    """A set of strings, each numbered 0, 1, 2... in the order it was added."""

    __slots__ = ("_blob", "_ends", "_hashes", "_mask", "_table")

    def __init__(self) -> None:
        self._blob = bytearray()
        #: end of each string's text in ``_blob`` (it starts where the one before ends)
        self._ends: array[int] = array("q")
        self._hashes: array[int] = array("q")
        self._table: array[int] = array("i", [_FREE]) * 8
        self._mask = 7

    def __len__(self) -> int:
        return len(self._ends)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) != _FREE

    def get(self, key: str) -> int:
        """``key``'s number, or -1 when it was never added."""
        h = hash(key)
        table, mask, hashes = self._table, self._mask, self._hashes
        i = h & mask
        encoded: bytes | None = None
        while (n := table[i]) != _FREE:
            if hashes[n] == h:
                if encoded is None:
                    encoded = key.encode("utf-8", "surrogatepass")
                if self._text(n) == encoded:
                    return n
            i = (i + 1) & mask
        return _FREE

    def add(self, key: str) -> int:
        """``key``'s number: its old one when it was added before, else the next."""
        h = hash(key)
        table, mask = self._table, self._mask
        i = h & mask
        n = table[i]
        while n != _FREE:
            if self._hashes[n] == h and self._text(n) == key.encode("utf-8", "surrogatepass"):
                return n
            i = (i + 1) & mask
            n = table[i]
        hashes, blob = self._hashes, self._blob
        n = len(hashes)
        table[i] = n
        hashes.append(h)
        blob += key.encode("utf-8", "surrogatepass")
        self._ends.append(len(blob))
        if n + n > mask:
            self._grow()
        return n

    def __getitem__(self, n: int) -> str:
        """The string numbered ``n``."""
        return self._text(n).decode("utf-8", "surrogatepass")

    def _text(self, n: int) -> bytearray:
        ends = self._ends
        return self._blob[ends[n - 1] if n else 0 : ends[n]]

    def _grow(self) -> None:
        """Grow the table fourfold (it is kept at most half full, so probes stay short;
        fourfold, each string is placed again a third of a time on average, not once)."""
        size = 4 * (self._mask + 1)
        mask = size - 1
        table = array("i", [_FREE]) * size
        for n, h in enumerate(self._hashes):
            i = h & mask
            while table[i] != _FREE:
                i = (i + 1) & mask
            table[i] = n
        self._table, self._mask = table, mask
