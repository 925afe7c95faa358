"""How the rules word what they found: citations, caps on lists, short forms."""

from __future__ import annotations

from ..timeline.numbering import uncite

#: The verb of an attempted file action ("tried to create").
VERB = {"edited": "edit", "created": "create", "deleted": "delete"}


def cite(text: str, label: str | None) -> str:
    """``text`` with its citation; log text copied into a summary must not cite: only the
    labels added here do."""
    return f"{uncite(text)} [{label}]" if label else uncite(text)


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


def short(text: str, limit: int = 240) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    # Only a bounded head is flattened: a fact never needs more of a huge text.
    head = text[: limit * 4]
    flat = " ".join(head.split())
    if len(flat) <= limit and len(head) == len(text):
        return flat
    return flat[: limit - 1] + "…"


def order(label: str | None) -> int:
    """Where a label stands in the log (``M12`` → 12); -1 for none: labels are issued in
    the log's order, so they order a turn's events."""
    return int(label[1:]) if label and label[1:].isdigit() else -1
