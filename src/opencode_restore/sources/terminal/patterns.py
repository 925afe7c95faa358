"""The text patterns of raw terminal logs, kept in the ``[terminal]`` section of config.toml.

They are data, not code: a new TUI version usually needs a changed pattern, not a new
parser. The packaged ``config.toml`` holds the defaults.

Because they are data, the fast path of the line scanner cannot hard-code them: a
:class:`LineGate` is derived from the compiled patterns themselves (see
:mod:`.gate`) and tells, a block of lines at a time, which lines can match
none of them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ...resources import data_path
from .gate import LineGate, line_gate

_SINGLE = (
    "user_message",
    "username_timestamp",
    "agent_working",
    "read_file",
    "edit_file",
    "write_file",
    "shell",
    "assistant_footer",
    "compaction_divider",
    "composer_edge",
    "sidebar_marker",
    "prompt",
    "bullet",
    "tool_output",
    "rule",
    "tool_call",
    "codex_tool",
    "collapsed_tool",
    "compacted",
    "banner",
    "placeholder",
)
# The patterns the scanner tries on a whole line in its ordinary state. Left out: the
# ones tried only in a given state (``composer_edge`` right after a rail block,
# ``placeholder`` after ``prompt``), the sidebar finder, and the sub-patterns applied to
# a bullet's text (``tool_call``, ``codex_tool``); ``noise`` is a list of its own.
_NOT_LINE = ("composer_edge", "sidebar_marker", "placeholder", "tool_call", "codex_tool")
LINE_KEYS = (*(key for key in _SINGLE if key not in _NOT_LINE), "noise")


@dataclass(frozen=True, slots=True)
class TerminalPatterns:
    """Compiled patterns of the ``[terminal]`` config section (see config.toml for each)."""

    user_message: re.Pattern[str]
    username_timestamp: re.Pattern[str]
    agent_working: re.Pattern[str]
    read_file: re.Pattern[str]
    edit_file: re.Pattern[str]
    write_file: re.Pattern[str]
    shell: re.Pattern[str]
    assistant_footer: re.Pattern[str]
    compaction_divider: re.Pattern[str]
    composer_edge: re.Pattern[str]
    sidebar_marker: re.Pattern[str]
    prompt: re.Pattern[str]
    bullet: re.Pattern[str]
    tool_output: re.Pattern[str]
    rule: re.Pattern[str]
    tool_call: re.Pattern[str]
    codex_tool: re.Pattern[str]
    collapsed_tool: re.Pattern[str]
    compacted: re.Pattern[str]
    banner: re.Pattern[str]
    placeholder: re.Pattern[str]
    #: Any one of the noise patterns (joined), for a single search per line.
    noise: re.Pattern[str]
    #: Which lines can match a line pattern of the scanner (None: no gate, test all).
    gate: LineGate | None = field(default=None, compare=False)
    #: Which lines can hold a sidebar marker.
    sidebar_gate: LineGate | None = field(default=None, compare=False)

    def is_noise(self, line: str) -> bool:
        """True for spinner, status, hint and logo rows."""
        return bool(self.noise.search(line) or self.agent_working.search(line))


def load_terminal_patterns(config_path: Path | None = None) -> TerminalPatterns:
    """Compile the ``[terminal]`` patterns of ``config_path`` (default: the packaged config).

    Keys missing from a user file fall back to the packaged defaults; an invalid
    pattern raises ``re.error`` naming the key.
    """
    section = dict(_packaged_section())
    if config_path is not None:
        with config_path.open("rb") as fh:
            section.update(tomllib.load(fh).get("terminal", {}))
    compiled: dict[str, re.Pattern[str]] = {}
    for key in _SINGLE:
        try:
            compiled[key] = re.compile(str(section[key]))
        except re.error as exc:
            raise re.error(f"[terminal] {key}: {exc.msg}", exc.pattern, exc.pos) from exc
    noise = section.get("noise", [])
    parts = [str(p) for p in noise] if isinstance(noise, list) else [str(noise)]
    compiled["noise"] = re.compile("|".join(f"(?:{p})" for p in parts) or r"(?!)")
    gate = line_gate({key: compiled[key] for key in LINE_KEYS})
    sidebar_gate = line_gate({"sidebar_marker": compiled["sidebar_marker"]})
    return TerminalPatterns(**compiled, gate=gate, sidebar_gate=sidebar_gate)


@lru_cache(maxsize=1)
def _packaged_section() -> tuple[tuple[str, object], ...]:
    with data_path("config.toml").open("rb") as fh:
        return tuple(tomllib.load(fh).get("terminal", {}).items())


@lru_cache(maxsize=1)
def default_patterns() -> TerminalPatterns:
    """The packaged patterns, compiled once."""
    return load_terminal_patterns()
