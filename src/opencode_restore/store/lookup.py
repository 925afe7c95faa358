"""Sessions without paths: a session id, a unique prefix of one, or the latest session.

A reference is looked up in the store first; when the store does not know it, each
agent's default locations are scanned into the store (``discovery.scan``, file heads
only) and the store is asked again. ``--latest`` always scans first, so a session
started a minute ago is found. Two sessions matching one prefix are an error that
lists both, never a silent pick.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..diagnostics import WarningSink
from ..errors import UsageError
from ..redact import redact_optional
from .discovery import AGENTS, scan
from .paths import cwd_variants
from .store import SessionRow, Store
from .transcript_paths import read_refusal

#: Formats whose one file holds many sessions: the session must be chosen inside it.
CONTAINER_AGENTS = frozenset({"opencode", "inspect"})
#: Candidates shown in an ambiguity error at most.
_SHOWN = 10


@dataclass(slots=True)
class Target:
    """A session found without a path: its id, agent and transcript chain (oldest first)."""

    id: str
    agent: str
    paths: list[Path]
    #: True when ``paths`` is a container (opencode database or storage, Inspect log)
    #: holding other sessions too: read session ``id`` inside it.
    container: bool = False


class SessionNotFound(UsageError):
    """No stored or discoverable session matches the reference."""


class AmbiguousSession(UsageError):
    """Several sessions match: the message lists them."""

    def __init__(self, what: str, rows: list[SessionRow]) -> None:
        self.what = what
        self.rows = rows
        lines = [f"{what} matches {len(rows)} sessions; give more of the id:"]
        lines += candidate_lines(rows[:_SHOWN])
        if len(rows) > _SHOWN:
            more = len(rows) - _SHOWN
            lines.append(f"  ... and {more} more (see `opencode-restore sessions list`)")
        super().__init__("\n".join(lines))

    def one_line(self) -> str:
        """The error in one line, the candidates by id and agent (an MCP tool error, an
        HTTP error's detail)."""
        shown = ", ".join(f"{r.id} ({r.agent})" for r in self.rows[:_SHOWN])
        more = f" and {len(self.rows) - _SHOWN} more" if len(self.rows) > _SHOWN else ""
        return f"{self.what} matches {len(self.rows)} sessions; give more of the id: {shown}{more}"


def chain_size(row: SessionRow) -> int:
    """The bytes of a session's transcript files that still exist."""
    total = 0
    for f in row.files:
        try:
            total += os.stat(f.path).st_size
        except OSError:
            continue
    return total


def human_size(size: int) -> str:
    """``1.2 MB`` style."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def candidate_lines(rows: list[SessionRow]) -> list[str]:
    """One line per session: id, agent, cwd, last activity, title, size (the cwd and
    title redacted: a hook registers them raw)."""
    return [
        f"  {r.id}  {r.agent}  {redact_optional(r.cwd) or '-'}"
        f"  {r.updated_at[:19].replace('T', ' ')}"
        f"  {redact_optional(r.title) or '(no title)'!r}  {human_size(chain_size(r))}"
        for r in rows
    ]


def _target(store: Store, row: SessionRow, sink: WarningSink | None = None) -> Target:
    """The session's chain; a hook-registered file is checked again now (a symlink
    re-pointed since registration is refused: `transcript_paths.read_refusal`)."""
    full = store.session(row.id) or row
    if not full.files:
        raise SessionNotFound(f"session {row.id} ({row.agent}) has no transcript file recorded")
    paths: list[Path] = []
    refused: list[str] = []
    for f in full.files:
        why = read_refusal(f.path, row.agent, f.source)
        if why is None:
            paths.append(Path(f.path))
            continue
        refused.append(f"{f.path}: {why}")
        if sink is not None:
            sink.warn(f.path, 0, f"registered by a hook, but {why}; not read")
    if not paths:
        raise SessionNotFound(
            f"session {row.id} ({row.agent}): no transcript file may be read ({refused[0]})"
        )
    return Target(row.id, row.agent, paths, container=row.agent in CONTAINER_AGENTS)


def _matches(store: Store, ref: str, agent: str | None) -> list[SessionRow]:
    exact = store.session(ref)
    if exact is not None and (agent is None or exact.agent == agent):
        return [exact]
    return store.sessions_by_prefix(ref, agent=agent)


def find_session(
    store: Store,
    ref: str,
    *,
    agent: str | None = None,
    sink: WarningSink | None = None,
    discover: bool = True,
) -> Target:
    """The session whose id is ``ref`` or starts with it (the store, then discovery)."""
    row = match_session(store, ref, agent=agent, sink=sink, discover=discover)
    return _target(store, row, sink)


def match_session(
    store: Store,
    ref: str,
    *,
    agent: str | None = None,
    sink: WarningSink | None = None,
    discover: bool = True,
) -> SessionRow:
    """The stored row whose id is ``ref`` or the one id starting with it (the store, then
    discovery unless ``discover`` is False); `SessionNotFound` or `AmbiguousSession`."""
    if not ref.strip():
        raise SessionNotFound("an empty session id")
    rows = _matches(store, ref, agent)
    if not rows and discover:
        scan(store, agent=agent, sink=sink or WarningSink())
        rows = _matches(store, ref, agent)
    if not rows:
        where = ", ".join([agent] if agent else AGENTS)
        raise SessionNotFound(
            f"{ref}: no such file, and no session id starts with it "
            f"(looked in the store and the default locations of {where})"
        )
    if len(rows) > 1:
        shown = [store.session(r.id) or r for r in rows[:_SHOWN]] + rows[_SHOWN:]
        raise AmbiguousSession(f"session id prefix {ref!r}", shown)
    return store.session(rows[0].id) or rows[0]  # with its files (a prefix match has none)


def latest_session(
    store: Store,
    *,
    cwd: str | None = None,
    agent: str | None = None,
    here: str | None = None,
    sink: WarningSink | None = None,
    discover: bool = True,
) -> Target:
    """The most recently active session, of ``cwd`` and ``agent`` when given.

    Without ``cwd``, ``here`` (the current directory) narrows the choice when it has
    sessions; otherwise every directory counts.
    """
    if discover:
        scan(store, agent=agent, sink=sink or WarningSink())
    if cwd is not None:
        rows, _ = store.sessions(agent=agent, cwds=cwd_variants(cwd), limit=1)
        if not rows:
            raise SessionNotFound(f"no {agent or 'agent'} session recorded in {cwd}")
        return _target(store, rows[0], sink)
    if here is not None:
        rows, _ = store.sessions(agent=agent, cwds=cwd_variants(here), limit=1)
        if rows:
            return _target(store, rows[0], sink)
    rows, _ = store.sessions(agent=agent, limit=1)
    if not rows:
        raise SessionNotFound(
            f"no {agent or 'agent'} sessions found in the store or the default locations"
        )
    row = rows[0]
    if here is not None and sink is not None:
        # Another project's context could otherwise be restored (and injected into an
        # agent) without anyone noticing: say which session was taken, and from where.
        where = redact_optional(row.cwd) or "an unknown folder"
        sink.warn(
            here,
            0,
            f"no session recorded in this folder; --latest took the newest of any project: "
            f"{row.id} ({row.agent}, in {where}); narrow it with --cwd DIR",
        )
    return _target(store, row, sink)
