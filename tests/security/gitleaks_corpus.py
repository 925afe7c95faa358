"""An independent secret corpus: one sample per gitleaks rule, generated from the rule's own regex.

Our own corpus (tests/security/corpus.py) was written alongside our redaction rules, so it
measures 100 % by construction (issue 31). This one is built from the public gitleaks
config instead: for every ``[[rules]]`` entry with a ``regex``, a seeded regex-to-string
generator (``rstr``) writes a string the regex matches, and the sample is kept only when
gitleaks itself would report it:

* the translated regex (Go RE2 -> Python ``re``, see :func:`translate`) finds it;
* the text holds one of the rule's ``keywords`` (gitleaks' prefilter skips the rule
  otherwise);
* the secret (``secretGroup``, else the first non-empty group, else the match) has more
  Shannon entropy than the rule's ``entropy``;
* no allowlist of the rule or of the config (regexes, stopwords) lets it through.

Context around the secret (``[\\w.-]{0,50}`` before a keyword, the ``=``/``:`` between) is
drawn at its shortest and with spaces, so a sample reads like ``datadog_key = 3f…`` rather
than line noise; the secret part is drawn at random lengths and characters, so it looks
random as a real key does. Each rule has its own seed (``SEED``, the rule id, the attempt),
so adding a rule upstream does not change the others' samples.

The result is committed as ``fixtures/gitleaks_corpus.json`` with the gitleaks version and
commit it came from, so the tests need no network and are the same on every run. The
sample texts are stored base64-encoded: the file must not itself look like a leak to a
secret scanner or a push protection. Regenerate from a clone of gitleaks/gitleaks (its git
directory; the fixture records ``git describe`` and the commit) with::

    python -m tests.security.gitleaks_corpus --git-dir /path/to/gitleaks/.git [--rev HEAD]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import re
import string
import subprocess
import tomllib
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from re import _constants as _sre_constants  # type: ignore[attr-defined, unused-ignore]
from typing import Any

FIXTURE = Path(__file__).with_name("fixtures") / "gitleaks_corpus.json"
#: The seed every rule's generator starts from (the issue's number).
SEED = 31
#: Attempts per rule before it is reported as one the generator cannot satisfy.
ATTEMPTS = 400
#: Most extra repeats drawn for an unbounded or wide repeat inside the secret.
SECRET_SPREAD = 24
#: Shortest secret kept: a shorter one could occur in a sink's text by chance.
MIN_SECRET = 8


@dataclass(frozen=True, slots=True)
class Sample:
    """One gitleaks rule's sample: ``text`` as a log would hold it, ``secret`` the part
    that must not survive redaction."""

    rule: str
    keywords: tuple[str, ...]
    text: str
    secret: str

    @property
    def field(self) -> str:
        """The environment-style name a tool field holding this secret would have."""
        return re.sub(r"[^A-Z0-9]+", "_", self.rule.upper()).strip("_")


# --- Go RE2 -> Python re -------------------------------------------------------------------


#: RE2's POSIX classes (`[[:alnum:]]`) as Python class members.
_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "xdigit": "0-9a-fA-F",
    "upper": "A-Z",
    "lower": "a-z",
    "word": "\\w",
    "space": "\\s",
}


def translate(go: str) -> str:
    """The Python ``re`` form of a gitleaks (Go RE2) regex.

    RE2 lets a flag group like ``(?i)`` stand anywhere and apply to the end of its
    enclosing group; Python 3.11 accepts global flags only at the very start. Such a
    group becomes a scoped ``(?i:…)`` closed where the enclosing group closes. RE2's
    ``\\z`` (end of text) is Python's ``\\Z``; its POSIX classes are spelled out.
    """
    out: list[str] = []
    # For each open group, how many scoped flag groups were opened inside it.
    pending: list[int] = [0]
    i, in_class = 0, False
    while i < len(go):
        ch = go[i]
        if ch == "\\":
            pair = go[i : i + 2]
            out.append("\\Z" if pair == "\\z" and not in_class else pair)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\w+):\]", go[i:])
            if posix:
                out.append(_POSIX[posix.group(1)])
                i += posix.end()
                continue
            # The opening `[`, `^` and a literal leading `]` were taken with the `[`.
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            # A `]` right after `[` or `[^` is a literal member, not the end.
            j = i + 1
            if go[j : j + 1] == "^":
                out.append("^")
                j += 1
            if go[j : j + 1] == "]":
                out.append("\\]")
                j += 1
            i = j
            continue
        flag = re.match(r"\(\?([a-zA-Z]+)\)", go[i:])
        if flag and out:
            out.append(f"(?{flag.group(1)}:")
            pending[-1] += 1
            i += flag.end()
            continue
        if ch == "(":
            pending.append(0)
        elif ch == ")":
            out.append(")" * pending.pop())
        out.append(ch)
        i += 1
    out.append(")" * pending.pop())
    return "".join(out)


@cache
def compiled(go: str) -> re.Pattern[str]:
    """The translated regex, compiled (warnings are errors: a nested-set warning would
    mean the translation changed the pattern's meaning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return re.compile(translate(go))


# --- gitleaks' own checks ------------------------------------------------------------------


def shannon(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def secret_of(rule: dict[str, Any], match: re.Match[str]) -> str:
    """The secret gitleaks reports for ``match``: ``secretGroup``, else the first
    non-empty group, else the whole match."""
    group = int(rule.get("secretGroup", 0))
    if group:
        return match.group(group) or ""
    return next((g for g in match.groups() if g), match.group(0))


def measured(rule: dict[str, Any], match: re.Match[str]) -> str:
    """What a sink must not hold: gitleaks' secret, or the whole match when that secret is
    a short piece of it (the Teams webhook's group is one `abcd-` of its ids)."""
    secret = secret_of(rule, match)
    return secret if len(secret) >= MIN_SECRET else match.group(0)


def _allowed(allowlist: dict[str, Any], secret: str, match: str, line: str) -> bool:
    target = {"match": match, "line": line}.get(allowlist.get("regexTarget", ""), secret)
    by_regex = any(compiled(p).search(target) for p in allowlist.get("regexes", []))
    by_word = any(w.lower() in secret.lower() for w in allowlist.get("stopwords", []))
    if allowlist.get("condition", "OR").upper() == "AND":
        checks = [by_regex] if allowlist.get("regexes") else []
        checks += [by_word] if allowlist.get("stopwords") else []
        return bool(checks) and all(checks)
    return by_regex or by_word


def problem(config: dict[str, Any], rule: dict[str, Any], text: str) -> str | None:
    """Why gitleaks would not report ``text`` under ``rule`` (None: it would)."""
    found = compiled(rule["regex"]).search(text)
    if found is None:
        return "no match"
    keywords = [k.lower() for k in rule.get("keywords", [])]
    if keywords and not any(k in text.lower() for k in keywords):
        return "no keyword"
    secret = secret_of(rule, found)
    if len(measured(rule, found)) < MIN_SECRET:
        return "secret too short to be told from chance"
    if rule.get("entropy") and shannon(secret) <= float(rule["entropy"]):
        return "entropy too low"
    lists = [config.get("allowlist", {}), *rule.get("allowlists", [])]
    if any(_allowed(a, secret, found.group(0), text) for a in lists if a):
        return "allowlisted"
    return None


# --- the generator -------------------------------------------------------------------------


def _generator(rng: random.Random, secret_group: int, free_context: bool) -> Any:
    """An ``rstr`` Xeger that draws context short and plain and the secret at random."""
    from rstr.xeger import STAR_PLUS_LIMIT, Xeger

    class Sampler(Xeger):
        def __init__(self) -> None:
            super().__init__(rng)
            # No groups at all: the whole match is the secret.
            self.in_secret = secret_group == 0
            self._cases = {
                **self._cases,
                "branch": self._branch,
                "category": self._category,
                "any": self._any,
                # `[^"]` parses as a single negated literal: any printable but that one.
                "not_literal": lambda x: self._random.choice(
                    [c for c in _PASSWORD + " " if c != chr(x)]
                ),
            }

        def _any(self, _value: Any) -> str:
            # Outside a captured secret an unescaped `.` is nearly always a domain's dot
            # (`hooks.slack.com`); a captured `(.{8,})` is a password's characters.
            if self.in_secret and secret_group:
                return str(self._random.choice(_PASSWORD))
            return "."

        def _handle_group(self, value: Sequence[Any]) -> str:
            outer = self.in_secret
            self.in_secret = outer or value[0] == secret_group
            try:
                return str(super()._handle_group(value))
            finally:
                self.in_secret = outer

        def _handle_repeat(self, start_range: int, end_range: int, value: str) -> str:
            if self.in_secret:
                high = min(end_range, STAR_PLUS_LIMIT, start_range + SECRET_SPREAD)
                times = self._random.randint(start_range, max(start_range, high))
            else:
                times = start_range
            return "".join("".join(self._handle_state(s) for s in value) for _ in range(times))

        def _handle_in(self, value: Any) -> Any:
            # No control characters (`[\s\S]` or `[^"]` would draw form feeds and line
            # breaks); in context, a space where the class allows one.
            members = _members(self, value)
            printable = [c for c in members if c.isprintable()]
            if not self.in_secret and " " in printable:
                return " "
            return self._random.choice(printable or members)

        def _category(self, name: Any) -> Any:
            alphabet = self._categories[name]()
            return alphabet if self.in_secret or "space" not in name else " "

        def _branch(self, value: Any) -> str:
            options = value[1]
            # Context takes the first alternative, the one the rule's author wrote as the
            # usual form (`=` among the operators, a quote or space as the terminator).
            # (Half the attempts draw context branches at random too: a first alternative
            # can be one that never matches at its shortest, as `kind:secret` + `data:`
            # with no word boundary between.)
            usual = not self.in_secret and not free_context
            chosen = options[0] if usual else self._random.choice(options)
            return "".join(self._handle_state(s) for s in chosen)

    return Sampler()


_PASSWORD = string.ascii_letters + string.digits + "!#%&*+-./:;<=>?@^_~"


def _members(sampler: Any, value: Any) -> list[str]:
    """The characters a parsed class ``[...]`` allows (a negated one: of the printable)."""
    items = list(value)
    negated = bool(items) and items[0][0] == _NEGATE
    listed: list[str] = []
    for item in items[1:] if negated else items:
        got = sampler._handle_state(item)
        listed.extend(got if isinstance(got, list | str) else [])
    if negated:
        return [c for c in string.printable if c not in listed]
    return listed


#: The opcode of a negated class in the parse tree rstr walks (Python 3.11's re._parser).
_NEGATE = _sre_constants.NEGATE


def _secret_group(rule: dict[str, Any]) -> int:
    if rule.get("secretGroup"):
        return int(rule["secretGroup"])
    return 1 if compiled(rule["regex"]).groups else 0


def sample_rule(config: dict[str, Any], rule: dict[str, Any]) -> Sample:
    """The first of up to ``ATTEMPTS`` seeded draws that gitleaks would report."""
    pattern = translate(rule["regex"])
    why: Counter[str] = Counter()
    for attempt in range(ATTEMPTS):
        rng = random.Random(f"{SEED}:{rule['id']}:{attempt}")
        text = (
            _generator(rng, _secret_group(rule), attempt >= ATTEMPTS // 2).xeger(pattern).rstrip()
        )
        reason = problem(config, rule, text)
        if reason == "no keyword":
            # The branch drawn held none of the keywords: say the keyword first, as a
            # comment or a variable name would.
            text = f"{rule['keywords'][0]}: {text}"
            reason = problem(config, rule, text)
        if reason is None:
            found = compiled(rule["regex"]).search(text)
            assert found is not None
            return Sample(rule["id"], tuple(rule.get("keywords", [])), text, measured(rule, found))
        why[reason] += 1
    raise ValueError(f"{rule['id']}: no sample in {ATTEMPTS} attempts ({dict(why)})")


def build(config: dict[str, Any]) -> list[Sample]:
    """One sample per rule that has a regex (a path-only rule has nothing to plant)."""
    return [sample_rule(config, r) for r in config["rules"] if r.get("regex")]


# --- the fixture ---------------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def write_fixture(config: dict[str, Any], provenance: dict[str, str], path: Path) -> None:
    """Write the corpus and where it came from to ``path``."""
    from importlib.metadata import version

    samples = build(config)
    rules = {r["id"]: r for r in config["rules"]}
    data = {
        "source": provenance,
        "generator": {
            "module": "tests/security/gitleaks_corpus.py",
            "rstr": version("rstr"),
            "seed": SEED,
        },
        "encoding": "text_b64 and secret_b64 are base64 of UTF-8, so no scanner flags this file",
        # The config's global allowlist and each rule's own, so the tests check offline that
        # gitleaks would still report every sample.
        "allowlist": config.get("allowlist", {}),
        "samples": [
            {
                "rule": s.rule,
                "keywords": list(s.keywords),
                "regex": rules[s.rule]["regex"],
                "secretGroup": rules[s.rule].get("secretGroup", 0),
                "entropy": rules[s.rule].get("entropy", 0),
                "allowlists": rules[s.rule].get("allowlists", []),
                "text_b64": _b64(s.text),
                "secret_b64": _b64(s.secret),
            }
            for s in samples
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


@cache
def _fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def load_samples() -> list[Sample]:
    """The committed corpus: one sample per gitleaks rule (221 at gitleaks v8.30)."""
    return [
        Sample(
            s["rule"],
            tuple(s["keywords"]),
            base64.b64decode(s["text_b64"]).decode(),
            base64.b64decode(s["secret_b64"]).decode(),
        )
        for s in _fixture()["samples"]
    ]


def fixture_config() -> dict[str, Any]:
    """The part of the gitleaks config the fixture recorded: the global allowlist and,
    per sample, its rule (id, regex, keywords, entropy, secretGroup, allowlists)."""
    fields = ("regex", "keywords", "entropy", "secretGroup", "allowlists")
    return {
        "allowlist": _fixture()["allowlist"],
        "rules": [{k: s[k] for k in fields} | {"id": s["rule"]} for s in _fixture()["samples"]],
    }


def provenance() -> dict[str, str]:
    """Which gitleaks config the committed corpus was generated from."""
    source: dict[str, str] = _fixture()["source"]
    return source


#: Text that must survive every sink unchanged: ours (written for issue 14), and two that
#: sit next to gitleaks' own stopword and next to a keyword without being secrets.
def look_alikes() -> list[str]:
    """The 30 look-alikes: tests/security/corpus.py's and two gitleaks-flavoured ones."""
    from .corpus import LOOK_ALIKES

    extra = [
        "fixture uuid 014df517-39d1-4453-b7b3-9930c563627c (gitleaks' own stopword)",
        "The datadog dashboard shows the api latency per region.",
    ]
    return [*LOOK_ALIKES, *extra][:30]


def main(argv: list[str] | None = None) -> int:
    """Regenerate the fixture from a local gitleaks clone (or a config file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--git-dir", type=Path, help="a gitleaks clone's git directory")
    parser.add_argument("--rev", default="HEAD", help="revision of that clone (default HEAD)")
    parser.add_argument("--toml", type=Path, help="a gitleaks.toml instead of a clone")
    parser.add_argument("-o", "--output", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    if args.git_dir is not None:

        def git(*cmd: str) -> str:
            run = ["git", "--git-dir", str(args.git_dir), *cmd]
            return subprocess.run(run, capture_output=True, text=True, check=True).stdout

        text = git("show", f"{args.rev}:config/gitleaks.toml")
        source = {
            "repo": "gitleaks/gitleaks",
            "path": "config/gitleaks.toml",
            "commit": git("rev-parse", args.rev).strip(),
            "version": git("describe", "--tags", args.rev).strip(),
            "license": "MIT",
        }
    elif args.toml is not None:
        text = args.toml.read_text()
        source = {"repo": "gitleaks/gitleaks", "path": str(args.toml), "license": "MIT"}
    else:
        parser.error("give --git-dir or --toml")
    config = tomllib.loads(text)
    write_fixture(config, source, args.output)
    print(f"{len(config['rules'])} rules -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
