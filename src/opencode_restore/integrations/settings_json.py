"""Hook entries in an agent's ``settings.json`` (Claude Code, Gemini CLI): merge and remove.

Both agents read ``{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command",
"command": ...}]}]}}``. An entry is ``(event, command, matcher)`` (matcher None: none, the
group runs on every occurrence; Gemini CLI compares a lifecycle event's matcher with its
trigger, so ``("PreCompress", cmd, "manual")`` never runs before an automatic check).
Merging adds one group per entry holding our command, unless a group with that matcher
already runs it (so installing twice changes nothing); every other key, event and group
is left as it was. Removing takes out exactly the groups that run only our command with
that matcher, then the event lists and the ``hooks`` object that this left empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..errors import UsageError

#: One hook group: (event, command, matcher or None).
Entry = tuple[str, str, str | None]


class SettingsError(UsageError):
    """A settings file we refuse to rewrite (not JSON, or an unexpected shape)."""


def parse_settings(text: str, where: str) -> dict[str, Any]:
    """The settings object in ``text``; an empty file is an empty object."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{where}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno});"
            " fix it first, nothing was written"
        ) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{where}:1: the settings are not a JSON object; nothing was written")
    return data


def _event_groups(settings: dict[str, Any], where: str) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise SettingsError(f'{where}: "hooks" is not an object; nothing was written')
    return hooks


def _ours(group: Any, command: str, matcher: str | None) -> bool:
    """A group with ``matcher`` whose every hook runs ``command`` (and nothing else)."""
    if not isinstance(group, dict) or set(group) - {"matcher", "hooks"}:
        return False
    if group.get("matcher") != matcher:
        return False
    hooks = group.get("hooks")
    return (
        isinstance(hooks, list)
        and bool(hooks)
        and all(isinstance(h, dict) and h == {"type": "command", "command": command} for h in hooks)
    )


def _runs(group: Any, command: str, matcher: str | None) -> bool:
    if not isinstance(group, dict) or group.get("matcher") != matcher:
        return False
    hooks = group.get("hooks")
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and h.get("command") == command for h in hooks
    )


def _copy(settings: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(settings))
    return copy


def group(command: str, matcher: str | None) -> dict[str, Any]:
    """The hook group ``merge_hooks`` writes."""
    one = {"hooks": [{"type": "command", "command": command}]}
    return one if matcher is None else {"matcher": matcher, **one}


def merge_hooks(settings: dict[str, Any], entries: Iterable[Entry], where: str) -> dict[str, Any]:
    """``settings`` with a group per entry of ``entries`` added."""
    out = _copy(settings)
    hooks = _event_groups(out, where)
    if hooks is None:
        hooks = out["hooks"] = {}
    for event, command, matcher in entries:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{where}: hooks.{event} is not a list; nothing was written")
        if not any(_runs(g, command, matcher) for g in groups):
            groups.append(group(command, matcher))
    return out


def remove_hooks(settings: dict[str, Any], entries: Iterable[Entry], where: str) -> dict[str, Any]:
    """``settings`` without the groups ``merge_hooks`` adds for ``entries``."""
    out = _copy(settings)
    hooks = _event_groups(out, where)
    if hooks is None:
        return out
    for event, command, matcher in entries:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept = [g for g in groups if not _ours(g, command, matcher)]
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def dump_settings(settings: dict[str, Any]) -> str:
    """The settings as the agents write them: two-space indent, a final newline."""
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
