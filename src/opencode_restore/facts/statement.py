"""Whether a model's text states anything: the rule that holds schema-valid garbage out.

A small model fills a required string with whatever passes the schema: a label (``"M19"``,
``"[M19]"``, ``"turn 3"``), a number, a placeholder (``"N/A"``, ``"..."``, ``"none"``), the
field's own name, or nothing at all. None of them is a goal, a next step or a summary, and
a merge that took them would put them where the rules' value belongs. One rule, here, for
every place a model's text is taken (synthesis, turn summaries, branch summaries, evidence
findings): the deterministic value stands in wherever it fails.
"""

from __future__ import annotations

import re

#: Labels and references that point at something without saying anything: a citation's
#: labels (``M19``, ``M3-M5``; its brackets are left as punctuation), a candidate or source
#: id (``C2``, ``S1``), a turn, message, step or item number, a bare number.
_POINTERS = re.compile(
    r"\b[MCS]\d+(?:\s*[-–—]\s*[MCS]?\d+)?\b"
    r"|\b(?:turn|message|msg|step|item|candidate|source|id)s?\s*#?\s*\d+\b"
    r"|#?\d+(?:[.,:]\d+)*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]{2,}")
#: Words that fill a field without saying anything: placeholders, yes/no, and the names of
#: the fields a model is asked for (a model that echoes "goal" or "next step" says nothing).
_EMPTY_WORDS = frozenset(
    (  # noqa: SIM905  (a word list reads best as words)
        "na none null nil nothing empty unknown undefined tbd todo placeholder etc same "
        "ok okay yes no true false string text value lorem ipsum see above below "
        "goal summary next step current work request response outcome outcomes decision "
        "reason finding findings question questions turn message label citation"
    ).split()
)


def is_statement(text: str) -> bool:
    """True when ``text`` says something: at least one word that is no label, number,
    placeholder or field name. ``"M19"``, ``"[M19]"``, ``"2"``, ``"turn 3"``, ``"N/A"``,
    ``"..."``, ``"none"`` and ``""`` say nothing; ``"None pending [M4]"`` does."""
    plain = _POINTERS.sub(" ", text[:2000])
    return any(w.lower() not in _EMPTY_WORDS for w in _WORD.findall(plain))
