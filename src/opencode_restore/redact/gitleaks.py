"""The gitleaks rule set (vendored in ``data/gitleaks.toml``, MIT) run by Python's ``re``.

Every rule of the public gitleaks config is loaded: its regex, keywords, entropy floor,
secret group and allowlists (regexes on the secret, the match or the line; stopwords),
with the global allowlist. Rules that name file paths are applied to any text: a log
string seldom says which file it came from. The path-only rule (``pkcs12-file``) finds
files, not text, and is left out.

The patterns are RE2 (Go). They run on ``re``, translated: the ``regex`` module compiles
them as written but reads them otherwise (its default mode makes a mid-pattern ``(?i)``
apply to the whole pattern; its other mode changes what ``[`` means in a class), and
google-re2 would be a new compiled dependency that copies every text to UTF-8 per call.
What differs is translated (see ``to_python``): a flag group ``(?i)`` in the middle of a
pattern applies to the end of its enclosing group in RE2 and is an error in ``re``, so it
becomes a scoped ``(?i:...)``; ``\\z`` is ``\\Z``; POSIX classes such as ``[[:alnum:]]``
are spelled out; ``[``, ``&``, ``~`` and ``|`` inside a class are escaped (``re`` reads
them as the start of set operations to come). ``re.ASCII`` gives ``\\w``, ``\\s`` and
``\\b`` their RE2 meaning.

Where a secret sits: the end most rules require after a secret (a quote, a blank, ``;``)
is widened to the ends a URL, an argument list or a JSON string gives it (``@``, ``&``,
``#``, ``,``, ``)``, ``\\"``...); text holding JSON escapes is searched decoded (see
``Redactor``), and a rule whose first group is only a piece of its match redacts the
match.

Speed: as in gitleaks, a rule runs only on a text that holds one of its keywords (any
case); every keyword a text holds, overlapping ones too, is found in one pass (see
``prefilter``: Hyperscan, or a trie-shaped alternation where it is missing). A rule whose
every match starts with a known literal is tried only where that literal is (``find``
on the lower-cased text, then ``match`` there), never at every position: the leading
``[\\w.-]{0,50}?`` of the keyword-context rules (a name before the keyword, never part
of the secret) made ``re`` try up to 50 lengths at every character, and is dropped; it
is put back only to check the allowlists that look at the whole match.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .prefilter import Prefilter, trie

#: The gitleaks release and commit the vendored config comes from.
GITLEAKS_VERSION = "v8.30.0-27-gb58d3f10"
GITLEAKS_COMMIT = "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b"
CONFIG = Path(__file__).parent / "data" / "gitleaks.toml"
#: No rule matches fewer characters (curl-auth-user's `curl -u a:b`; checked by a test).
SHORTEST_MATCH = 10

_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r"\t\n\v\f\r ",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}
_FLAGS = re.compile(r"\(\?([ims-]+)\)")
# The name before a keyword in the keyword-context rules: context, never the secret.
_NAME_PREFIX = re.compile(r"^((?:\(\?[a-z-]*:)*)\[\\w\.-\]\{0,50\}\?")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def trailing_name(text: str) -> str:
    r"""The run of name characters (``[A-Za-z0-9_.-]``) ``text`` ends with, maybe empty.

    Found in the reversed text: a search for ``[\w.-]+\Z`` tries every start and cost
    ~40 us on a 64-character window, at every assignment of a log.
    """
    found = _NOT_NAME.search(text[::-1])
    return text[len(text) - found.start() :] if found is not None else text


def to_python(pattern: str) -> str:
    """A gitleaks (RE2) pattern rewritten with the same meaning for ``re`` (see above)."""
    out: list[str] = []
    closes: list[int] = [0]  # per open group: scoped flag groups to close with it
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            pair = pattern[i : i + 2]
            out.append(r"\Z" if pair == r"\z" else pair)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\w+):\]", pattern[i:])
            if posix is not None:
                out.append(_POSIX[posix.group(1)])
                i += posix.end()
                continue
            if c == "]" and not (out[-1] == "[" or out[-1] == "[^"):
                in_class = False
                out.append(c)
            elif c in "[&~|":
                out.append("\\" + c)
            else:
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append("[^" if pattern.startswith("[^", i) else "[")
            i += 2 if pattern.startswith("[^", i) else 1
            continue
        flags = _FLAGS.match(pattern, i)
        if flags is not None:
            out.append(f"(?{flags.group(1)}:")
            closes[-1] += 1
            i = flags.end()
            continue
        if c == "(":
            closes.append(0)
        elif c == ")":
            out.append(")" * closes.pop())
        out.append(c)
        i += 1
    out.append(")" * closes.pop())
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Allow:
    target: str  # "secret", "match" or "line"
    regex: re.Pattern[str] | None
    #: The stopwords as one trie-shaped pattern (generic-api-key has 1,446 of them).
    stopwords: re.Pattern[str] | None

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        if self.regex is not None and self.regex.search(target):
            return True
        return self.stopwords is not None and self.stopwords.search(secret.lower()) is not None


@dataclass(frozen=True, slots=True)
class Rule:
    """One gitleaks rule, ready to run on a text that holds one of its keywords."""

    id: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    #: Lower-case literals every match starts with (None: try every position).
    starts: tuple[str, ...] | None
    #: The rule's ``[\w.-]{0,50}?`` name prefix was dropped (see the module docstring).
    named: bool
    #: The first group is repeated (it holds one piece of the secret): the match is it.
    whole: bool
    allows: tuple[_Allow, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret a rule found: its span in the text and the rule's id."""

    start: int
    end: int
    rule: str


def _allow(table: dict[str, Any]) -> _Allow | None:
    """An allowlist entry, or None when it needs a file path or commit we never have."""
    # An OR list checks its paths apart (we have none); an AND list with paths cannot hold.
    needs_path = table.get("paths") or table.get("commits")
    if needs_path and table.get("condition", "OR").upper() == "AND":
        return None
    regexes = [to_python(p) for p in table.get("regexes", [])]
    regex = re.compile("|".join(f"(?:{p})" for p in regexes), re.ASCII) if regexes else None
    words = {w.lower() for w in table.get("stopwords", [])}
    stopwords = re.compile(trie(sorted(words))) if words else None
    if regex is None and stopwords is None:
        return None
    return _Allow(table.get("regexTarget", "secret"), regex, stopwords)


def _literal_starts(pattern: str) -> tuple[str, ...] | None:
    """Lower-case literals (2+ characters) that every match of ``pattern`` starts with."""
    try:
        parser: Any = importlib.import_module("re._parser")
        starts, _ = _starts(list(parser.parse(pattern, re.ASCII)), parser)
    except Exception:  # a private module that may change: then no shortcut
        return None
    if not starts or any(len(s) < 2 for s in starts):
        return None
    return tuple(sorted(set(starts)))


def _starts(items: list[Any], p: Any) -> tuple[list[str], bool]:
    """The literal prefixes of a parsed sequence (``re._parser`` items), and whether
    each is the whole sequence (then what follows the sequence extends them)."""
    prefixes = [""]
    for op, arg in items:
        if op is p.AT:
            continue  # a boundary takes no character
        if op is p.LITERAL:
            prefixes = [s + chr(arg).lower() for s in prefixes]
            continue
        if op is p.IN and len(arg) <= 2 and all(o is p.LITERAL for o, _ in arg):
            inner, whole = sorted({chr(c).lower() for _, c in arg}), True  # [Aa]
        elif op is p.SUBPATTERN:
            inner, whole = _starts(list(arg[-1]), p)
        elif op is p.BRANCH:
            inner, whole = [], True
            for branch in arg[1]:
                got, complete = _starts(list(branch), p)
                inner, whole = inner + got, whole and complete
        else:
            return prefixes, False
        if len(prefixes) * len(inner) > 32:
            return prefixes, False
        prefixes = [s + t for s in prefixes for t in inner]
        if not whole:
            return prefixes, False
    return prefixes, True


# The end most rules require after a secret (a quote, a blank, `;`, an escaped line
# break, the end), widened to where a secret also ends in a URL, an argument list or a
# JSON string: `@host`, `&page=2`, `#frag`, `,`, `)`, `}`, `]`, `>`, `|` and `\"`.
_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
_WIDER_END = r"""(?:[\x60'"\s;@&#,)}\]<>|]|\\[nrt"]|$)"""
# The same for a secret that must end at a blank (`curl -u "user:pass"` in an `echo "…"`).
_BLANK_END = r"(?:\s|\Z)"


def _first_group_repeated(pattern: str) -> bool:
    """True when the first capturing group of ``pattern`` sits inside a repeat."""
    try:
        parser: Any = importlib.import_module("re._parser")
        return _repeated(list(parser.parse(pattern, re.ASCII)), parser, inside=False)
    except Exception:  # a private module that may change: then the group is the secret
        return False


def _repeated(items: list[Any], p: Any, *, inside: bool) -> bool:
    for op, arg in items:
        if op is p.SUBPATTERN and arg[0] == 1:
            return inside
        if op in (p.MAX_REPEAT, p.MIN_REPEAT) and _repeated(list(arg[2]), p, inside=True):
            return True
        if op is p.SUBPATTERN and _repeated(list(arg[-1]), p, inside=inside):
            return True
        if op is p.BRANCH and any(_repeated(list(b), p, inside=inside) for b in arg[1]):
            return True
    return False


def _rule(table: dict[str, Any]) -> Rule:
    pattern = to_python(table["regex"]).replace(_END, _WIDER_END)
    pattern = pattern.replace(_BLANK_END, _WIDER_END)
    named = False
    while (stripped := _NAME_PREFIX.sub(r"\1", pattern, count=1)) != pattern:
        pattern, named = stripped, True
    allows = tuple(a for a in map(_allow, table.get("allowlists", [])) if a is not None)
    return Rule(
        id=table["id"],
        regex=re.compile(pattern, re.ASCII),
        keywords=tuple(k.lower() for k in table.get("keywords", [])),
        entropy=float(table.get("entropy", 0.0)),
        secret_group=int(table.get("secretGroup", 0)),
        starts=_literal_starts(pattern),
        named=named,
        whole=_first_group_repeated(pattern),
        allows=allows,
    )


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules, the keyword scanner and the global allowlist.

    A rule is compiled when a text first holds one of its keywords: compiling all 221
    (three parses each: the regex, its literal starts, its groups) took 0.3 s, paid by
    every short-lived process that redacts one line (a hook).
    """

    tables: tuple[dict[str, Any], ...]
    #: Finds which keywords a text holds, any case (see ``prefilter``).
    keywords: Prefilter
    #: For each keyword the scanner can report, the rules (their indexes) that any
    #: keyword it holds gates (``api_org_`` holds ``api``: the scan reports the longest).
    gated: dict[str, frozenset[int]]
    allows: tuple[_Allow, ...]
    built: dict[int, Rule]
    #: Allowlist verdicts by (rule, secret, match): see ``_allowed``.
    verdicts: dict[tuple[int, str, str], bool]

    def rule(self, index: int) -> Rule:
        """The ``index``-th rule, compiled on first use."""
        rule = self.built.get(index)
        if rule is None:
            rule = self.built[index] = _rule(self.tables[index])
        return rule

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule, compiled."""
        return tuple(map(self.rule, range(len(self.tables))))

    def findings(self, text: str, holds: Iterable[str] | None = None) -> Iterator[Finding]:
        """The secrets in ``text``, rule by rule, as gitleaks finds them. ``holds``: the
        keywords ``text`` holds (with other literals), when a caller's scan found them."""
        if len(text) < SHORTEST_MATCH:
            return  # (most strings of a log: ids, names, `ok`)
        found = [
            k for k in (self.keywords.found(text) if holds is None else holds) if k in self.gated
        ]
        if not found:
            return
        lower = text.lower()
        # Offsets in ``lower`` are those of ``text`` unless a letter lower-cased to two
        # characters (``İ``); none shrinks, so equal lengths say none did.
        aligned = len(lower) == len(text)
        gated = frozenset().union(*(self.gated[k] for k in found))
        for index in sorted(gated):
            rule = self.rule(index)
            if rule.starts is not None and aligned:
                matches: Iterable[re.Match[str]] = _matches_at(rule, text, lower)
            else:
                matches = rule.regex.finditer(text)
            for match in matches:
                finding = self._check(index, rule, match)
                if finding is not None:
                    yield finding

    def _check(self, index: int, rule: Rule, match: re.Match[str]) -> Finding | None:
        group = rule.secret_group
        if not group and match.re.groups:
            group = next((g for g in range(1, match.re.groups + 1) if match.group(g)), 0)
        secret = match.group(group)
        if group and not rule.secret_group and (rule.whole or secret in rule.regex.pattern):
            # The first group is a piece of the pattern (a repeated ``([a-z0-9]{4}-)``, a
            # named literal: the Teams webhook and jwt-base64 rules), not the secret: the
            # whole match goes.
            group, secret = 0, match.group(0)
        start, end = match.span(group)
        if group == 0:  # gitleaks trims line breaks from a whole match
            stripped = secret.strip("\n")
            start += secret.index(stripped) if stripped else 0
            end, secret = start + len(stripped), stripped
        if not secret or (rule.entropy and _entropy(secret) <= rule.entropy):
            return None
        text = match.string
        whole = match.group(0)
        if rule.named:  # the name the dropped prefix would have matched
            whole = trailing_name(text[max(0, match.start() - 50) : match.start()]) + whole
        if self._allowed(index, rule, secret, whole):
            return None
        lines = [a for a in rule.allows if a.target == "line"]
        if lines:
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            if any(allow.allows(secret, whole, line) for allow in lines):
                return None
        return Finding(start, end, rule.id)

    def _allowed(self, index: int, rule: Rule, secret: str, whole: str) -> bool:
        """True when an allowlist that reads the secret or the match lets it through.

        Remembered: a session repeats its secrets (each prompt quotes the log again),
        and the generic rule's allowlist of the match costs ~40 us a search.
        """
        key = (index, secret, whole)
        verdict = self.verdicts.get(key)
        if verdict is None:
            allows = (*self.allows, *(a for a in rule.allows if a.target != "line"))
            verdict = any(allow.allows(secret, whole, "") for allow in allows)
            if len(self.verdicts) >= 4096:
                self.verdicts.clear()
            self.verdicts[key] = verdict
        return verdict


def _matches_at(rule: Rule, text: str, lower: str) -> Iterator[re.Match[str]]:
    """The matches of ``rule`` that start where one of its literals is, left to right."""
    assert rule.starts is not None
    positions: set[int] = set()
    for literal in rule.starts:
        at = lower.find(literal)
        while at >= 0:
            positions.add(at)
            at = lower.find(literal, at + 1)
    done = 0
    for at in sorted(positions):
        if at < done:
            continue
        match = rule.regex.match(text, at)
        if match is not None:
            done = max(match.end(), at + 1)
            yield match


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character, as gitleaks computes it."""
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


@functools.cache
def rule_set() -> RuleSet:
    """The vendored rules, loaded once (on first use: ~40 ms; each rule compiles later)."""
    config = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    tables = tuple(table for table in config["rules"] if table.get("regex"))
    keywords = [tuple(k.lower() for k in t.get("keywords", [])) for t in tables]
    words = sorted({k for ks in keywords for k in ks}, key=lambda k: (-len(k), k))
    gated = {
        found: frozenset(i for i, ks in enumerate(keywords) if any(k in found for k in ks))
        for found in words
    }
    allow = _allow(config.get("allowlist", {}))
    return RuleSet(
        tables=tables,
        keywords=Prefilter(caseless=words),
        gated=gated,
        allows=(allow,) if allow is not None else (),
        built={},
        verdicts={},
    )
