"""Where opencode keeps sessions: one database or storage tree holds them all.

``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``): ``opencode.db`` and
the ``storage/`` tree. Each top-level session is listed; sub-agent sessions stay
inside their parent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...fields import non_empty
from ..base import Found


def default_roots(home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return [Path(xdg) / "opencode" if xdg else home / ".local" / "share" / "opencode"]


def session_files(root: Path) -> list[Path]:
    """The databases and storage trees under ``root``, sorted."""
    found = [p for p in root.rglob("opencode.db") if p.is_file()]
    found += [p for p in root.rglob("storage") if (p / "session").is_dir()]
    return sorted(found)


def top_level(path: Path, infos: list[dict[str, Any]]) -> list[Found]:
    """The top-level sessions among ``infos`` (rows of ``reader.list_sessions``) of ``path``."""
    found = []
    for info in infos:
        sid = info.get("id")
        if not isinstance(sid, str) or info.get("parent_id"):
            continue
        found.append(
            Found(
                "opencode",
                sid,
                path,
                non_empty(info.get("directory")),
                non_empty(info.get("title")),
                info.get("created"),
                info.get("updated"),
            )
        )
    return found
