"""Whether two Claude Code files are one session continued (``sources.chain``).

A resumed or forked session is written to a new file under a new ``sessionId``. Its
first lines point back: ``summary`` lines name the earlier conversation's leaf
(``leafUuid``), the first entries hang off entries of the earlier file
(``parentUuid``/``logicalParentUuid``), copied entries keep the earlier ``sessionId``,
and a plan carried into a cleared context keeps the ``slug``. The leaf a later file
continues from is among the last entries of the earlier one, so only its tail is read.
"""

from __future__ import annotations

from pathlib import Path

from ..chain import ChainLink, head_objects, tail_objects, text_values


def chain_link(path: Path) -> ChainLink:
    """The session ``path`` records and what it points back to (a bounded read)."""
    head = list(head_objects(path))
    tail = list(tail_objects(path))
    sessions = [s for obj in head for s in text_values([obj], "sessionId", "session_id")]
    own = sessions[0] if sessions else None
    slugs = text_values(head, "slug") | text_values(tail, "slug")
    defined = text_values(head, "uuid")
    refs = text_values(head, "parentUuid", "logicalParentUuid", "leafUuid") - defined
    return ChainLink(
        own,
        names=frozenset(slugs | set(sessions) | text_values(tail, "uuid")),
        points_to=frozenset(slugs | (set(sessions) - {own}) | refs),
    )
