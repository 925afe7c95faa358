"""Message ids that name one message each, whatever the log's own ids are.

A message's ``id`` is the source's own id when it has one (``model.Message``). Some logs
hold ids that do not tell messages apart: an export whose upstream redaction replaced
every part id by ``REDACTED``, an id repeated by a tool that wrote one record twice. Such
ids would put many messages under one label (one ``[M#]``, one evidence reference), so a
placeholder id, and any id already given to an earlier message, falls back to the
positional ``"{file_index}:{entry_index}"`` (with ``#2``, ``#3``... when that is taken too).

The guard is applied where sessions and message streams leave ``sources``
(``open_session``, ``iter_messages``), always in conversation order, so the same log
gives the same ids on every read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import regex

from ..model import Message, Session, TimelineSpan
from .strindex import StrIndex

#: Ids that stand for a removed or unknown value, optionally with a ``:suffix``/``#k``
#: a reader added (``REDACTED:result``): ``REDACTED``, ``[redacted]``, ``<REMOVED>``,
#: ``***``, ``xxxx``, ``null``, ``undefined``...
_PLACEHOLDER = regex.compile(
    r"^[\[<({*_\-\s]*"
    r"(?:redacted|removed|hidden|anonymi[sz]ed|scrubbed|masked|null|none|undefined|unknown"
    r"|x{3,}|\*{3,}|\?+)"
    r"[\]>)}*_\-\s]*(?:[:#].*)?$",
    regex.IGNORECASE | regex.DOTALL,
)


def is_placeholder_id(value: str) -> bool:
    """True when ``value`` is empty or a stand-in for an id that was removed."""
    return not value.strip() or bool(_PLACEHOLDER.match(value))


def source_id(value: object) -> str | None:
    """``value`` when it is a usable id of the source (a non-empty string that is not a
    placeholder), else ``None`` (the caller then uses a positional id)."""
    if isinstance(value, str) and value and not is_placeholder_id(value):
        return value
    return None


class IdGuard:
    """Gives each message it sees an id no earlier message has (see the module doc)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # One id per message of a stream of any length: compact text, not a set.
        self._seen = StrIndex()

    def fix(self, m: Message) -> Message:
        """``m`` with a unique id (changed in place only when it was a placeholder or taken)."""
        seen = self._seen
        mid = m.id
        count = len(seen)
        # ``add`` keeps a new id at once (one probe); a placeholder is never kept.
        if is_placeholder_id(mid) or seen.add(mid) != count:
            if "original_id" not in m.meta:
                m.meta["original_id"] = mid
            base = f"{m.file_index}:{m.entry_index}"
            mid, n = base, 1
            while mid in seen:
                n += 1
                mid = f"{base}#{n}"
            m.id = mid
            seen.add(mid)
        return m

    def stream(self, messages: Iterable[Message]) -> Iterator[Message]:
        """``messages`` with unique ids, in order."""
        fix = self.fix
        for m in messages:
            yield fix(m)


def _walk(span: TimelineSpan, guard: IdGuard) -> None:
    for m in span.messages():
        guard.fix(m)
    for item in span.content:
        if isinstance(item, TimelineSpan):
            _walk(item, guard)
    for branch in span.branches:
        _walk(branch, guard)


def unique_ids(session: Session) -> Session:
    """Make every message id of ``session`` unique, in place: the active conversation first
    (so it keeps the ids a stream of it gets), then sub-agents, side chains and branches.

    A hollow session's ``bodies`` get the same ids as the messages they fill.
    """
    _walk(session.timeline.root, IdGuard())
    bodies = session.bodies
    if bodies is not None:
        session.bodies = lambda: IdGuard().stream(bodies())
    return session
