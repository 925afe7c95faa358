"""Which of many literals (and a few small patterns) a text holds, found in one pass.

A redaction runs every rule only where the text can hold a match: a vendor token where
its prefix is, a context pattern where its anchor is, a gitleaks rule where one of its
keywords is. Asked one by one (``literal in text`` for ~70 prefixes, a trie-shaped
``re`` scan for ~240 keywords) these questions cost more than the rules they skip: the
text is read once per literal (a restore of a 50 MB log redacts ~66,000 strings, most
of them short: ~50 us each).

With the ``hyperscan`` package (Intel's Hyperscan: every literal of a set found in one
pass, at GB/s) one scan answers them all; without it (a platform with no wheel) each
question is asked as before. Both answer the same (a property test pins them): a
*cased* literal is found as ``literal in text``, a *caseless* one (lower-case ASCII) as
``literal in text.lower()``, a pattern as ``re.search(pattern, text)``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
from _thread import get_ident
from collections.abc import Iterable
from typing import Any

#: Characters a prefilter looks through literal by literal before it compiles its
#: Hyperscan database (~40 ms for ours, and ~15 ms to import the module): a process that
#: redacts a few prompts (a hook) never pays it.
COMPILE_AFTER = 1 << 20
#: Up to this many caseless literals, the path without Hyperscan looks for each apart.
_ONE_BY_ONE = 32


@functools.cache
def _engine() -> Any:
    """The ``hyperscan`` module, or None where it is not installed (or does not load)."""
    try:
        return importlib.import_module("hyperscan")
    except ImportError:
        return None


def _give_back_freed_memory() -> None:
    """Return to the system the memory Hyperscan's compiler freed (~13 MB for ours, a
    database of 0.2 MB): glibc kept ~9 MB of it in the process, in every later peak RSS
    of a restore. Where there is no glibc, nothing to do."""
    import ctypes  # (only here: a process that never compiles does not load it)

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


#: The characters outside ASCII that ``re`` matches to an ASCII letter when it ignores
#: case (``ſ`` is an ``s``, the Kelvin sign a ``k``, ``ı`` and ``İ`` an ``i``), or that
#: ``lower()`` turns into one or into two characters (a test checks every code point).
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def cased_as_ascii(text: str) -> bool:
    """True when the ASCII words ``text`` holds in any case (as ``re`` ignoring case, or
    Hyperscan's caseless scan, finds them) are where ``text.lower()`` holds them, and
    nowhere else: ASCII text, or text with none of ``FOLDS_TO_ASCII``.

    Most of a log's text is not ASCII for one arrow: a Read tool's output numbers its
    lines with ``→``. Treated as foreign, such a text was scanned twice here (as written
    and lower-cased) and had the word-anchored and name-checked patterns of the redactor
    scan all of it (half the redactor's time on an index build).
    """
    return text.isascii() or not any(c in text for c in FOLDS_TO_ASCII)


def trie(words: Iterable[str]) -> str:
    """An alternation of ``words`` shaped as a trie: ``re`` tries one branch per letter."""
    by_first: dict[str, list[str]] = {}
    for word in words:
        by_first.setdefault(word[0], []).append(word[1:])
    parts = []
    for first, rests in sorted(by_first.items()):
        longer = [r for r in rests if r]
        tail = trie(longer) if longer else ""
        if tail and "" in rests:
            tail = f"(?:{tail})?"
        parts.append(re.escape(first) + tail)
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


class Prefilter:
    """Finds which of its literals and patterns a text holds (see the module docstring)."""

    def __init__(
        self,
        cased: Iterable[str] = (),
        caseless: Iterable[str] = (),
        patterns: Iterable[str] = (),
        *,
        fast: bool = True,
        compile_after: int = COMPILE_AFTER,
    ) -> None:
        """``cased`` and ``caseless`` literals (ASCII; caseless ones lower-case) and
        ``patterns`` (regexes Hyperscan and ``re`` read alike); ``fast=False`` asks
        each question apart, as a platform without Hyperscan does, and so does a fast
        one until it has looked through ``compile_after`` characters."""
        self.cased = tuple(dict.fromkeys(cased))
        self.caseless = tuple(dict.fromkeys(caseless))
        self.patterns = tuple(dict.fromkeys(patterns))
        for literal in (*self.cased, *self.caseless):
            if not literal or not literal.isascii():
                raise ValueError(f"not a non-empty ASCII literal: {literal!r}")
        if any(literal != literal.lower() for literal in self.caseless):
            raise ValueError("a caseless literal must be lower-case")
        answers = (*self.cased, *self.caseless, *self.patterns)
        if len(set(answers)) < len(answers):
            raise ValueError("a literal or pattern is given twice (answers would be ambiguous)")
        self._compiled = [re.compile(pattern) for pattern in self.patterns]
        # Without Hyperscan many caseless literals (gitleaks' ~240 keywords) are found in
        # one scan of the lower-cased text: the longest one starting at each position (a
        # trie-shaped alternation in a look-ahead), then every literal that is a prefix of
        # one found; a few are looked for one by one (a scan tries every position).
        many = len(self.caseless) > _ONE_BY_ONE
        self._longest = re.compile(f"(?=({trie(self.caseless)}))") if many else None
        self._prefixes = {
            word: frozenset(other for other in self.caseless if word.startswith(other))
            for word in self.caseless
        }
        # Every answer the scan can give, by Hyperscan id: cased, caseless, patterns.
        self._answers = answers
        self._first_caseless = len(self.cased)
        self._first_pattern = len(self.cased) + len(self.caseless)
        self._database: Any = None
        self._wanted = fast
        self._until = compile_after
        if self._wanted and compile_after <= 0:
            self._database = self._compile()
        # A scratch space per thread: Hyperscan's may not be shared by two scans at once.
        self._scratches: dict[int, Any] = {}

    @property
    def fast(self) -> bool:
        """True when one Hyperscan pass answers (else each literal is looked for apart)."""
        return self._database is not None

    def compile_now(self) -> None:
        """Compile the one-pass scan now, not after ``compile_after`` characters: for a
        caller about to look through many megabytes (an index build redacted its first
        one literal by literal: ~0.17 s of CPU more than the compile)."""
        if self._database is None and self._wanted:
            self._database = self._compile()

    def _compile(self) -> Any:
        hs = _engine()
        if hs is None:  # not installed: asked one by one from now on
            self._wanted = False
            return None
        expressions, flags = [], []
        for index, answer in enumerate(self._answers):
            if index < self._first_pattern:  # a literal: every byte escaped
                expressions.append("".join(f"\\x{b:02x}" for b in answer.encode()).encode())
            else:
                expressions.append(answer.encode())
            caseless = self._first_caseless <= index < self._first_pattern
            flags.append(hs.HS_FLAG_SINGLEMATCH | (hs.HS_FLAG_CASELESS if caseless else 0))
        database = hs.Database()
        database.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=flags,
        )
        _give_back_freed_memory()
        return database

    def found(self, text: str) -> set[str]:
        """The literals and patterns ``text`` holds (caseless literals as given)."""
        if self._database is None and self._wanted:
            self._until -= len(text)
            if self._until <= 0:
                self._database = self._compile()
        if self._database is None:
            found = {literal for literal in self.cased if literal in text}
            found.update(
                p
                for p, regex in zip(self.patterns, self._compiled, strict=True)
                if regex.search(text)
            )
            if self._longest is not None:
                for word in set(self._longest.findall(text.lower())):
                    found |= self._prefixes[word]
            elif self.caseless:
                lower = text.lower()
                found.update(literal for literal in self.caseless if literal in lower)
            return found
        ids = self._scan(text.encode("utf-8", "surrogatepass"))
        if self.caseless and not cased_as_ascii(text):
            # A caseless literal is one ``text.lower()`` holds, and lower-casing is not
            # only ASCII's (the Kelvin sign ``K`` becomes ``k``): those are looked for
            # in the lower-cased text, the others in the text as it is.
            first, last = self._first_caseless, self._first_pattern
            ids = {i for i in ids if not first <= i < last} | {
                i
                for i in self._scan(text.lower().encode("utf-8", "surrogatepass"))
                if first <= i < last
            }
        return {self._answers[i] for i in ids}

    def _scan(self, data: bytes) -> set[int]:
        scratch = self._scratches.get(get_ident())
        if scratch is None:
            scratch = self._scratches[get_ident()] = _engine().Scratch(self._database)
        ids: set[int] = set()

        def on_match(index: int, start: int, end: int, flags: int, context: Any) -> None:
            ids.add(index)

        self._database.scan(data, match_event_handler=on_match, scratch=scratch)
        return ids
