"""Key decisions: what the agent chose (with its reason when it gives one), what the user
chose among options the agent offered, and what the user decided in so many words. A
decision that later work took back (a name later removed, renamed, reverted or replaced)
is left out: a stale decision reads as the current design."""

from __future__ import annotations

import re
from typing import Any

from .text import clip, names, sentences
from .turn_summary import turn_decisions
from .wording import cite

#: Decisions listed, the latest kept.
DECISION_ITEMS = 8
#: A reply this short, after the agent offered options or asked, chooses among them.
CHOICE_WORDS = 15
CHOICE_CHARS = 200

_SUPERSEDED = re.compile(
    r"\b(?:remov(?:e|ed|ing)|drop(?:ped|ping)?|revert(?:ed|ing)?|renam(?:e|ed|ing)"
    r"|replac(?:e|ed|ing)|instead|no longer|delet(?:e|ed|ing)|scrap(?:ped)?|rather than)\b",
    re.I,
)
# A choice in the user's words ("let's …", "go ahead with …", "skip the flag", "instead");
# a plain imperative ("Use the browser to …") is the task itself.
_USER_DECIDES = re.compile(
    r"^(?:ok(?:ay)?,?\s+)?(?:let'?s|let us|go (?:ahead )?with|we(?:'ll| will) (?:go|use)"
    r"|skip\b|switch to|stick with)|\b(?:decided|decision|instead)\b",
    re.I,
)


def later_texts(turns: list[dict[str, Any]]) -> dict[int, list[str]]:
    """For each turn number, the sentences of every later turn (requests and the agent's
    texts) that withdraw something: what a stale check reads."""
    per_turn = []
    for t in turns:
        texts = [t.get("user_request") or ""] + [a["text"] for a in t.get("assistant_texts", [])]
        per_turn.append([s for x in texts for s in sentences(x) if _SUPERSEDED.search(s)])
    out: dict[int, list[str]] = {}
    for i, t in enumerate(turns):
        out[t.get("turn_number", i + 1)] = [s for later in per_turn[i + 1 :] for s in later]
    return out


def stale(text: str, later: list[str], named: list[str] | None = None) -> bool:
    """True when a later sentence withdraws a code name that ``text`` relies on (or one of
    ``named``, the names of the whole sentence ``text`` was cut from)."""
    mentioned = set(names(text)) | set(named or ())
    return bool(mentioned) and any(n in s for s in later for n in mentioned)


def _user_choices(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user's decisions: a short reply to the options or question the agent ended the
    previous turn with, and a request that states a choice ("let's …", "go with …")."""
    out = []
    for i, t in enumerate(turns):
        request = " ".join((t.get("user_request") or "").split())
        labels = t.get("user_labels") or [None]
        if not i or not request or request.endswith("?"):
            continue  # the first request is the goal, with its rules
        asked = turns[i - 1].get("questions", []) if i else []
        if asked and len(request.split()) <= CHOICE_WORDS:
            q = asked[-1]
            out.append(
                {
                    "decision": cite(f"The user chose “{clip(request, CHOICE_CHARS)}”", labels[0])
                    + f" when asked: {cite(q['text'], q.get('label'))}",
                    "reason": "",
                    "turn": t.get("turn_number"),
                }
            )
            continue
        for s in sentences(request)[:6]:
            if _USER_DECIDES.search(s) and not s.endswith("?") and len(s) <= 300:
                out.append(
                    {
                        "decision": cite(f"The user decided: “{clip(s, CHOICE_CHARS)}”", labels[0]),
                        "reason": "",
                        "turn": t.get("turn_number"),
                    }
                )
                break
    return out


def key_decisions(turns: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The session's decisions in order, stale ones left out, the latest kept."""
    later = later_texts(turns)
    found: list[tuple[int, dict[str, str]]] = []
    for t in turns:
        n = t.get("turn_number", 0)
        for d in turn_decisions(t):
            if not stale(d["text"], later.get(n, []), d.get("names")):
                item = {"decision": cite(d["text"], d.get("label")), "reason": d.get("reason", "")}
                found.append((n, item))
    for c in _user_choices(turns):
        if not stale(c["decision"], later.get(c["turn"], [])):
            found.append((c["turn"], {"decision": c["decision"], "reason": ""}))
    found.sort(key=lambda x: x[0])
    return [d for _, d in found][-DECISION_ITEMS:]
