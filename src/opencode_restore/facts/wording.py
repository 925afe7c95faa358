"""How the rules word what they found: citations, caps on lists, short forms."""

from __future__ import annotations

from ..timeline.numbering import uncite

#: The verb of an attempted file action ("tried to create").
VERB = {"edited": "edit", "created": "create", "deleted": "delete"}


def cite(text: str, label: str | None) -> str:
    """``text`` with its citation; log text copied into a summary must not cite: only the
    labels added here do."""
    return f"{uncite(text)} [{label}]" if label else uncite(text)


def short(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut to ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def capped(items: list[str], limit: int, what: str, keep_last: bool = False) -> list[str]:
    """At most ``limit`` items; when some are left out, a last (or first) line says how many."""
    if len(items) <= limit:
        return items
    left_out = len(items) - (limit - 1)
    if keep_last:
        return [f"({left_out} earlier {what} not listed here)", *items[-(limit - 1) :]]
    return [*items[: limit - 1], f"(and {left_out} more {what} not listed here)"]


def cites(labels: list[str | None]) -> str:
    """`` [M1, M2]`` for the first three distinct labels, or nothing."""
    shown = [label for label in dict.fromkeys(labels) if label]
    return f" [{', '.join(shown[:3])}]" if shown else ""


def clip_flat(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    # Only a bounded head is flattened: a fact never needs more of a huge text.
    head = text[: limit * 4]
    flat = " ".join(head.split())
    if len(flat) <= limit and len(head) == len(text):
        return flat
    return flat[: limit - 1] + "…"
