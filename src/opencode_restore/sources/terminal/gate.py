"""A cheap test that tells which lines cannot match any of a set of regexes.

The line scanner tries some twenty patterns on every line, yet in a real capture most
lines are plain prose or tool output that none of them match. The patterns are user
data (the ``[terminal]`` config section), so no fast path can be written by hand;
instead each pattern is read apart (``re._parser``) into top-level alternatives, and for
each alternative two necessary conditions are derived:

* the literal strings of which a match must hold at least one (``Read``, ``M)``);
* for an alternative anchored at ``^``, the characters that can be the first
  non-blank one of the line (``❯``, ``●``; any, when the match can be all blank).

A line passes the gate when some alternative admits its first non-blank character and
it holds one of that alternative's literals; an unanchored alternative's literals are
looked for in a whole block of lines at once (``str.find`` runs at memory speed).
A line that does not pass matches none of the patterns, so the scanner may treat it
as plain text. A construct the analysis does not know, a case-insensitive or ASCII
pattern, or an unanchored alternative with no literal makes the gate unavailable
(``None``), and every line is tested as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import import_module
from operator import itemgetter
from typing import Any

# The parser behind ``re`` itself; ``sre_parse`` is only its deprecated alias (3.11). It
# is private and untyped: should the shape of its trees change, ``line_gate`` gives None
# and every line is tried against every pattern (the property tests pin both the same).
# Loaded by name: typeshed has no stubs for them, and mypy's verdict on an ignore comment
# for a plain import of them differs between a whole-tree and a single-file run.
sc: Any = import_module("re._constants")
_parser: Any = import_module("re._parser")

#: A predicate on a line (truthy: the line may match); None: no line can match.
LinePredicate = Callable[[str], object] | None

_REPEATS = (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT)
_UNSAFE_FLAGS = re.IGNORECASE | re.ASCII | re.LOCALE
#: Character classes of more members than this are no literal requirement.
_MAX_CLASS_LITERALS = 4
#: A repeated literal ``─{10,}`` is required this many times at most.
_MAX_REPEATED = 16
_SPACES = tuple(chr(c) for c in range(0x3001) if chr(c).isspace())
_NEVER_SPACE = (sc.CATEGORY_DIGIT, sc.CATEGORY_WORD, sc.CATEGORY_NOT_SPACE)


class _Unsupported(Exception):
    """The pattern uses a construct the analysis does not follow."""


@dataclass(frozen=True, slots=True)
class _Alternative:
    #: The name of the pattern this is an alternative of.
    name: str
    #: Literals a match holds at least one of (None: no requirement found).
    literals: frozenset[str] | None
    #: Nodes one of which the first non-blank character must satisfy (None: any).
    firsts: tuple[Any, ...] | None
    #: False when the match starts at column 0 with a non-blank (``^❯``).
    spaced: bool = True


def _flat(items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """The items of a sequence with plain groups inlined (a group's text is contiguous)."""
    for op, av in items:
        if op is sc.SUBPATTERN:
            if av[1] & _UNSAFE_FLAGS:
                raise _Unsupported("local flags")
            yield from _flat(av[3])
        else:
            yield op, av


def _better(cand: frozenset[str], best: frozenset[str] | None) -> bool:
    if best is None:
        return True
    return (min(map(len, cand)), -len(cand)) > (min(map(len, best)), -len(best))


def _required(items: Iterable[Any]) -> frozenset[str] | None:
    """The best set of literals a match of ``items`` must hold one of."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(cand: frozenset[str] | None) -> None:
        nonlocal best
        if cand and all(cand) and _better(cand, best):
            best = cand

    for op, av in _flat(items):
        if op is sc.LITERAL:
            run.append(chr(av))
            continue
        consider(frozenset(["".join(run)]) if run else None)
        run = []
        if op is sc.BRANCH:
            alts = [_required(b) for b in av[1]]
            if all(alts):
                consider(frozenset().union(*(a for a in alts if a)))
        elif op in _REPEATS and av[0] >= 1:
            inner = list(_flat(av[2]))
            if len(inner) == 1 and inner[0][0] is sc.LITERAL:
                consider(frozenset([chr(inner[0][1]) * min(av[0], _MAX_REPEATED)]))
            else:
                consider(_required(inner))
        elif op is sc.ATOMIC_GROUP:
            consider(_required(av))
        elif op is sc.IN and len(av) <= _MAX_CLASS_LITERALS and all(o is sc.LITERAL for o, _ in av):
            consider(frozenset(chr(v) for _, v in av))
    consider(frozenset(["".join(run)]) if run else None)
    return best


def _class_may_be_space(av: Sequence[Any]) -> bool:
    """False when no whitespace character is in the class (unknown: True)."""
    if any(o is sc.NEGATE for o, _ in av):
        return not any(o is sc.CATEGORY and v is sc.CATEGORY_SPACE for o, v in av)
    for o, v in av:
        if o is sc.LITERAL:
            if chr(v).isspace():
                return True
        elif o is sc.RANGE:
            if any(v[0] <= ord(s) <= v[1] for s in _SPACES):
                return True
        elif not (o is sc.CATEGORY and v in _NEVER_SPACE):
            return True
    return False


def _only_space(op: Any, av: Any) -> bool:
    if op is sc.CATEGORY:
        return av is sc.CATEGORY_SPACE
    return op is sc.LITERAL and chr(av).isspace()


def _firsts(items: Iterable[Any]) -> tuple[list[Any], bool]:
    """Nodes the first non-blank character of a match satisfies; True if it may have none."""
    nodes: list[Any] = []
    for op, av in _flat(items):
        if op is sc.AT or op is sc.ASSERT or op is sc.ASSERT_NOT:
            continue
        if op is sc.LITERAL:
            if chr(av).isspace():
                continue
            nodes.append((op, av))
            return nodes, False
        if op is sc.NOT_LITERAL or op is sc.ANY:
            nodes.append((op, av))
        elif op is sc.IN:
            if all(_only_space(o, v) for o, v in av):
                continue
            nodes.append((op, av))
            if not _class_may_be_space(av):
                return nodes, False
        elif op is sc.BRANCH:
            blank = False
            for b in av[1]:
                sub, sub_blank = _firsts(b)
                nodes += sub
                blank = blank or sub_blank
            if not blank:
                return nodes, False
        elif op in _REPEATS:
            sub, sub_blank = _firsts(av[2])
            nodes += sub
            if av[0] >= 1 and not sub_blank:
                return nodes, False
        elif op is sc.ATOMIC_GROUP:
            sub, sub_blank = _firsts(av)
            nodes += sub
            if not sub_blank:
                return nodes, False
        else:
            raise _Unsupported(str(op))
    return nodes, True


_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    sc.CATEGORY_DIGIT: str.isdecimal,
    sc.CATEGORY_NOT_DIGIT: lambda c: not c.isdecimal(),
    sc.CATEGORY_SPACE: str.isspace,
    sc.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sc.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sc.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}


def _admits(node: tuple[Any, Any], c: str) -> bool:
    """True when character ``c`` can be matched by ``node`` (unknown: True)."""
    op, av = node
    if op is sc.LITERAL:
        return bool(ord(c) == av)
    if op is sc.NOT_LITERAL:
        return bool(ord(c) != av)
    if op is not sc.IN:
        return True
    negate, hit = False, False
    for o, v in av:
        if o is sc.NEGATE:
            negate = True
        elif o is sc.LITERAL:
            hit = hit or ord(c) == v
        elif o is sc.RANGE:
            hit = hit or v[0] <= ord(c) <= v[1]
        elif o is sc.CATEGORY and v in _CATEGORIES:
            hit = hit or _CATEGORIES[v](c)
        else:
            return True
    return hit != negate


def _broad(node: tuple[Any, Any]) -> bool:
    op, av = node
    if op is sc.IN:
        return any(o is sc.CATEGORY or o is sc.NEGATE for o, _ in av)
    return op is not sc.LITERAL


def _spaced(items: list[Any]) -> bool:
    """False when the first character of a match (after ``^``) cannot be blank."""
    for op, av in items:
        if op is sc.AT:
            continue
        if op is sc.LITERAL:
            return chr(av).isspace()
        return op is not sc.IN or _class_may_be_space(av)
    return True


def _alternatives(pattern: re.Pattern[str]) -> Iterator[tuple[bool, list[Any]]]:
    """``(anchored, items)`` of each top-level alternative of ``pattern``."""
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    if parsed.state.flags & _UNSAFE_FLAGS:
        raise _Unsupported("flags")
    items = list(_flat(parsed.data))
    branches = (
        [list(b) for b in items[0][1][1]]
        if len(items) == 1 and items[0][0] is sc.BRANCH
        else [items]
    )
    for branch in branches:
        flat = list(_flat(branch))
        anchored = (
            bool(flat)
            and flat[0][0] is sc.AT
            and flat[0][1]
            in (
                sc.AT_BEGINNING,
                sc.AT_BEGINNING_STRING,
            )
        )
        yield anchored, flat


class _LeadTable(dict[str, LinePredicate]):
    """First non-blank character of a line → predicate on the line, built on first use.

    :attr:`names` keeps, for the same characters, the names of the patterns admitted.
    """

    def __init__(self, alternatives: Sequence[_Alternative]) -> None:
        super().__init__()
        self._alternatives = alternatives
        self.names: dict[str, frozenset[str]] = {}

    def __missing__(self, key: str) -> LinePredicate:
        admitted = [
            a
            for a in self._alternatives
            if a.firsts is None or (key and any(_admits(n, key) for n in a.firsts))
        ]
        pred: LinePredicate = None
        if any(a.literals is None for a in admitted):
            pred = _always
        elif admitted:
            literals = sorted(set().union(*(a.literals or () for a in admitted)))
            pred = re.compile("|".join(map(re.escape, literals))).search
        if pred is not None and not any(a.spaced for a in admitted):
            pred = _at_column_0(key, pred)
        self[key] = pred
        self.names[key] = frozenset(a.name for a in admitted)
        return pred


def _at_column_0(key: str, pred: Callable[[str], object]) -> Callable[[str], object]:
    """``pred``, for lines that are not indented (``^❯`` matches no indented line)."""

    def at_0(line: str) -> object:
        return line.startswith(key) and pred(line)

    return at_0


def _always(line: str) -> bool:
    return True


class LineGate:
    """Tells which lines of a block may match which of the patterns it was built from."""

    def __init__(self, anywhere: dict[str, set[str]], anchored: Sequence[_Alternative]) -> None:
        #: Literal looked for anywhere in a block → names of the patterns that need it.
        self.anywhere = {lit: frozenset(names) for lit, names in sorted(anywhere.items())}
        self._lead = _LeadTable(anchored)
        self._anchored = bool(anchored)

    def maybe(self, lines: Sequence[str]) -> list[tuple[int, frozenset[str]]]:
        """``(index, names)`` of each line that may match, in order; ``names`` are the
        patterns that may match it. Every other line matches none of the patterns."""
        lead = self._lead
        found: dict[int, frozenset[str]] = {}
        if self._anchored:
            hits = [i for i, ln in enumerate(lines) if (f := lead[ln.lstrip()[:1]]) and f(ln)]
            found = {i: lead.names[lines[i].lstrip()[:1]] for i in hits}
        if self.anywhere:
            for i, lit_names in _lines_holding("\n".join(lines), self.anywhere).items():
                found[i] = found.get(i, frozenset()) | lit_names
        return sorted(found.items())


def _lines_holding(text: str, literals: dict[str, frozenset[str]]) -> dict[int, frozenset[str]]:
    """Index of each ``\\n``-separated line of ``text`` that holds one of ``literals``
    → the union of the names of the literals it holds.

    The hits of every literal are found first (``str.find``, at memory speed) and sorted,
    so that the newlines before them are counted in one pass over the text, not one per
    literal (that second pass per literal was half the cost of the gate).
    """
    hits: list[tuple[int, frozenset[str]]] = []
    find = text.find
    for literal, names in literals.items():
        pos = find(literal)
        while pos >= 0:
            hits.append((pos, names))
            end = find("\n", pos)
            if end < 0:
                break
            pos = find(literal, end + 1)
    hits.sort(key=itemgetter(0))
    out: dict[int, frozenset[str]] = {}
    count = text.count
    line, counted = 0, 0
    for pos, names in hits:
        line += count("\n", counted, pos)
        counted = pos
        out[line] = out[line] | names if line in out else names
    return out


def line_gate(patterns: dict[str, re.Pattern[str]]) -> LineGate | None:
    """The gate of the named ``patterns``, or None when one cannot be gated safely."""
    anywhere: dict[str, set[str]] = {}
    anchored: list[_Alternative] = []
    try:
        for name, pattern in patterns.items():
            for is_anchored, items in _alternatives(pattern):
                literals = _required(items)
                firsts: tuple[Any, ...] | None = None
                if is_anchored:
                    nodes, blank = _firsts(items)
                    firsts = None if blank else tuple(nodes)
                # A first character of a broad class (``\S``, ``\W``) filters nothing:
                # such an alternative is cheaper to find by its literals.
                broad = firsts is None or any(_broad(n) for n in firsts)
                if is_anchored and (not broad or literals is None):
                    anchored.append(_Alternative(name, literals, firsts, _spaced(items)))
                elif literals is None:
                    return None
                else:
                    for lit in literals:
                        anywhere.setdefault(lit, set()).add(name)
    except (_Unsupported, re.error, RecursionError, AttributeError, TypeError, IndexError):
        return None
    return LineGate(anywhere, anchored)
