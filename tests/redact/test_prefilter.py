"""The one-pass literal finder: Hyperscan's answers are those of asking one by one."""

from __future__ import annotations

import platform
import re
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from opencode_restore.redact.prefilter import FOLDS_TO_ASCII, Prefilter

CASED = ["sk-", "AKIA", "gh", "://", "=", "\\n", '"auth']
CASELESS = ["key", "api", "api-key", "s.", "bcd", "ab", "token", "secret_key"]
PATTERNS = ["-us[0-9]", "[0-9]:AA", "[_-]KEY[\"']?[ \\t]*=", "[pP][aA][sS][sS]"]
_PIECES = [
    *CASED,
    *CASELESS,
    *(w.upper() for w in CASELESS),
    "Api-Key",
    "-us1",
    "12:AA",
    "DB_KEY =",
    "PaSs",
    "\u212aey",  # the Kelvin sign: lower-cased, it is "k"
    "\u0130",  # "İ" lower-cases to two characters
    "\u017f",  # "ſ": an "s" to ``re`` ignoring case, not to ``lower()``
    "\u0131",  # "ı": an "i" to ``re`` ignoring case
    "→",  # (a Read tool's line numbers: text outside ASCII searched as ASCII)
    "é",
    "\ud800",  # a lone surrogate (a JSON "\\ud800" decodes to one)
    " ",
    "\n",
    "x",
]
_TEXT = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12).map("".join)


def _plain_answers(text: str) -> set[str]:
    """What each question asked apart answers (the definition the scan must keep)."""
    lower = text.lower()
    return {
        *(literal for literal in CASED if literal in text),
        *(literal for literal in CASELESS if literal in lower),
        *(pattern for pattern in PATTERNS if re.search(pattern, text)),
    }


FAST = Prefilter(CASED, CASELESS, PATTERNS, compile_after=0)
PLAIN = Prefilter(CASED, CASELESS, PATTERNS, fast=False)


@pytest.mark.skipif(
    not (sys.platform == "linux" and platform.machine() == "x86_64"),
    reason="hyperscan is a dependency on Linux x86_64 only",
)
def test_hyperscan_answers_where_it_is_a_dependency() -> None:
    assert FAST.fast
    assert not PLAIN.fast


@given(_TEXT)
@example("ABCD")  # overlapping: "ab" and "bcd" both (a leftmost scan finds "ab" only)
@example("API-KEY")  # "api" and "api-key", one a prefix of the other
@example("\u212aEY \u0130 s.")
@example("1→AKIA api-key \u212aEY")
def test_the_scan_finds_what_asking_one_by_one_finds(text: str) -> None:
    expected = _plain_answers(text)
    assert PLAIN.found(text) == expected
    if FAST.fast:
        assert FAST.found(text) == expected


def test_the_characters_that_fold_to_ascii_are_all_known() -> None:
    # Where ``re`` (ignoring case) or ``lower()`` reads a character as an ASCII letter,
    # or ``lower()`` changes its length, a text is not searched as ASCII: a new Python
    # whose Unicode tables add one must add it to the list.
    letter = re.compile("(?i)[a-z]")
    folding = set()
    for point in range(0x80, 0x110000):
        char = chr(point)
        lower = char.lower()
        if letter.match(char) or len(lower) != 1 or lower.isascii():
            folding.add(char)
    assert folding == set(FOLDS_TO_ASCII)


def test_overlapping_caseless_literals_are_all_found() -> None:
    # Regression: the gitleaks keyword scan (a leftmost-longest findall) reported "ab"
    # in "abcd" and never "bcd", so a rule gated by "bcd" did not run.
    for prefilter in (PLAIN, FAST):
        assert prefilter.found("xABCDx") >= {"ab", "bcd"}


def test_a_caseless_literal_is_one_the_lower_cased_text_holds() -> None:
    for prefilter in (PLAIN, FAST):
        assert "key" in prefilter.found("my \u212aEY")  # Kelvin sign, lower-cased "k"
        assert "key" not in prefilter.found("k\u00e9y")


@pytest.mark.parametrize(
    ("cased", "caseless", "error"),
    [
        ([""], [], "ASCII literal"),
        (["é"], [], "ASCII literal"),
        ([], ["Key"], "lower-case"),
        (["key"], ["key"], "twice"),
    ],
    ids=["empty", "not ascii", "upper-case caseless", "twice"],
)
def test_bad_literals_are_refused(cased: list[str], caseless: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Prefilter(cased, caseless)


def test_the_database_is_compiled_only_after_enough_text() -> None:
    # A hook redacts one prompt: it must not pay the compile (and the answers are the
    # same before and after it).
    prefilter = Prefilter(CASED, CASELESS, PATTERNS, compile_after=100)
    assert prefilter.found("x AKIA y" * 10) == {"AKIA"}
    assert not prefilter.fast
    assert prefilter.found("api-key " * 5) == {"api", "api-key", "key"}
    assert prefilter.fast == FAST.fast
    assert prefilter.found("x AKIA y") == {"AKIA"}


def test_compile_now_compiles_before_any_text() -> None:
    # An index build redacts megabytes: the first one looked through literal by literal
    # cost more than the compile.
    prefilter = Prefilter(CASED, CASELESS, PATTERNS)
    prefilter.compile_now()
    assert prefilter.fast == FAST.fast
    assert prefilter.found("x AKIA y") == {"AKIA"}
    plain = Prefilter(CASED, CASELESS, PATTERNS, fast=False)
    plain.compile_now()
    assert not plain.fast


def test_without_glibc_the_database_still_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    # After compiling, the memory Hyperscan's compiler freed is handed back with glibc's
    # malloc_trim; where there is no glibc (musl, macOS) loading it fails, and that is all.
    import ctypes

    def no_glibc(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", no_glibc)
    prefilter = Prefilter(CASED, CASELESS, PATTERNS, compile_after=0)
    assert prefilter.fast == FAST.fast
    assert prefilter.found("AKIA") == {"AKIA"}
