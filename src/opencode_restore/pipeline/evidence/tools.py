"""The evidence-search tools: SEARCH_LOG, SEARCH_FILE, READ_FILE, LIST_ARTIFACTS.

`EvidenceTools.run` takes one call (native or parsed from the text protocol), checks its
arguments and answers with a `ToolResult` whose text goes back to the model; bad calls
come back as errors the model can read, never as exceptions. Every result is redacted.
Log search is in `log_search`; file access goes through `sandbox.Workspace`. A search's
pattern is checked on its parse and the search runs in a bounded worker (`patterns`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...llm.base import ToolSpec
from ...model import Session, Turn
from ...timeline.numbering import Numbering
from ..state import RestoreState
from .log_search import Limits, LogSearch, cut_notes
from .patterns import WORKER_GRACE, bounded, check_pattern
from .sandbox import Matcher, Refused, Workspace, clip_line, grep
from .text_protocol import TextCall

COMPLETE = "COMPLETE_EVIDENCE_SEARCH"
# Strict-mode schemas (OpenAI strict tools, Anthropic input_schema): every object closed
# and fully required, so an optional argument is nullable instead (null = not given).
_PATTERN_PROPS: dict[str, Any] = {
    "pattern": {"type": "string", "description": "Regex (or literal text), at most 200 chars."},
    "literal": {"type": ["boolean", "null"], "description": "Match the pattern as plain text."},
    "ignore_case": {"type": ["boolean", "null"]},
    "context_lines": {
        "type": ["integer", "null"],
        "minimum": 0,
        "maximum": 10,
        "description": "Lines of context around each hit (null: 3).",
    },
}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


TOOL_SPECS = [
    ToolSpec(
        "SEARCH_LOG",
        "Search the session's raw log. Each hit shows file:line, the [M#] label of the "
        "message at that line, and context lines.",
        _closed(_PATTERN_PROPS),
        strict=True,
    ),
    ToolSpec(
        "SEARCH_FILE",
        "Search one file of the workspace (path relative to it).",
        _closed({"path": {"type": "string"}, **_PATTERN_PROPS}),
        strict=True,
    ),
    ToolSpec(
        "READ_FILE",
        "Read a text file of the workspace, optionally only lines start_line..end_line.",
        _closed(
            {
                "path": {"type": "string"},
                "start_line": {"type": ["integer", "null"], "minimum": 1},
                "end_line": {"type": ["integer", "null"], "minimum": 1},
            }
        ),
        strict=True,
    ),
    ToolSpec(
        "LIST_ARTIFACTS",
        "List the files the session read, edited or created, with turns and [M#] labels.",
        _closed({}),
        strict=True,
    ),
    ToolSpec(
        COMPLETE,
        "Finish the evidence search; findings: what the evidence shows, citing [M#].",
        _closed({"findings": {"type": "string"}}),
        strict=True,
    ),
]
TOOL_NAMES = tuple(t.name for t in TOOL_SPECS)
# The seed's text syntax, shown in the prompt: how positional arguments map to names.
POSITIONAL: dict[str, tuple[str, ...]] = {
    "SEARCH_LOG": ("pattern", "context_lines"),
    "SEARCH_FILE": ("path", "pattern"),
    "READ_FILE": ("path", "lines"),
    "LIST_ARTIFACTS": (),
    COMPLETE: ("findings",),
}
TEXT_SYNTAX = {
    "SEARCH_LOG": '[SEARCH_LOG: "pattern"]  (options: context=N literal=true ignore_case=true)',
    "SEARCH_FILE": '[SEARCH_FILE: "path" "pattern"]',
    "READ_FILE": '[READ_FILE: "path"]  or  [READ_FILE: "path" 10-40]',
    "LIST_ARTIFACTS": "[LIST_ARTIFACTS]",
    COMPLETE: '[COMPLETE_EVIDENCE_SEARCH: "findings, citing [M#]"]',
}
_ALIASES = {"context": "context_lines", "regex": "literal", "file": "path", "range": "lines"}
_ACCEPTED: dict[str, set[str]] = {
    "SEARCH_LOG": {"pattern", "literal", "ignore_case", "context_lines"},
    "SEARCH_FILE": {"path", "pattern", "literal", "ignore_case", "context_lines"},
    "READ_FILE": {"path", "start_line", "end_line", "lines"},
    "LIST_ARTIFACTS": set(),
    COMPLETE: {"findings"},
}


@dataclass
class ToolResult:
    """The answer to one call. ``text`` goes to the model (redacted); errors have ok=False."""

    name: str
    query: str
    text: str
    ok: bool = True
    citations: list[str] = field(default_factory=list)
    findings: str = ""
    #: Why a search may have missed hits (its time limit, its cap on hits, lines searched
    #: only in part).
    incomplete: list[str] = field(default_factory=list)


class BadArguments(Exception):
    """A call's arguments do not fit the tool; the message tells the model what to fix."""


def canonical_name(name: str) -> str:
    """Tool names match in any case and with ``-`` for ``_``."""
    return name.strip().upper().replace("-", "_")


def arguments_from_text(call: TextCall) -> dict[str, Any]:
    """Named arguments for a text-protocol call (positional ones mapped by `POSITIONAL`)."""
    if call.error:
        raise BadArguments(call.error)
    if call.name not in POSITIONAL:
        return dict(call.keywords)  # `EvidenceTools.run` answers "unknown tool"
    names = POSITIONAL[call.name]
    if len(call.positional) > len(names):
        shown = ", ".join(names) or "no arguments"
        raise BadArguments(f"{call.name} takes at most {len(names)} argument(s): {shown}")
    args: dict[str, Any] = dict(zip(names, call.positional, strict=False))
    args.update(call.keywords)
    return args


def _bool(args: dict[str, Any], key: str) -> bool:
    value = args.get(key)
    if value is None:  # strict tool schemas send null for "not given"
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise BadArguments(f"{key} must be true or false, not {value!r}")


def _int(args: dict[str, Any], key: str, default: int | None, low: int, high: int) -> int | None:
    value = args.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArguments(f"{key} must be a whole number, not {value!r}")
    if not low <= value <= high:
        raise BadArguments(f"{key} must be between {low} and {high}, not {value}")
    return value


def _str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise BadArguments(f"{key} is required (a non-empty string)")
    return value


def _line_range(args: dict[str, Any]) -> tuple[int | None, int | None]:
    lines = args.get("lines")
    if isinstance(lines, list | tuple) and len(lines) == 2:
        args = {**args, "start_line": lines[0], "end_line": lines[1]}
    elif isinstance(lines, str) and lines.strip():
        start, _, end = lines.strip().partition("-")
        args = {**args, "start_line": start.strip(), "end_line": end.strip() or start.strip()}
    elif lines is not None:
        raise BadArguments(f"lines must look like 10-40, not {lines!r}")
    first = _int(args, "start_line", None, 1, 10**9)
    final = _int(args, "end_line", None, 1, 10**9)
    if first is not None and final is not None and final < first:
        raise BadArguments(f"end_line {final} is before start_line {first}")
    return first, final


class EvidenceTools:
    """The tools of one restore: its session's logs, its workspace and its state."""

    def __init__(
        self,
        session: Session,
        turns: list[Turn],
        state: RestoreState,
        numbering: Numbering,
        workspace: Workspace,
        redact: Callable[[str], str],
        limits: Limits | None = None,
    ) -> None:
        self.state = state
        self.workspace = workspace
        self.redact = redact
        self.limits = limits or Limits()
        self.log = LogSearch(session, turns, numbering, redact, self.limits)

    def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call; any problem becomes an error result, never an exception."""
        tool = canonical_name(name)
        args = {_ALIASES.get(k.lower(), k.lower()): v for k, v in arguments.items()}
        query = _query(args)
        if tool not in _ACCEPTED:
            known = ", ".join(TOOL_NAMES)
            return ToolResult(tool, query, f"ERROR: unknown tool {name!r}; use {known}", False)
        unknown = sorted(set(args) - _ACCEPTED[tool])
        try:
            result = self._dispatch(tool, args, query)
        except BadArguments as exc:
            return ToolResult(tool, query, f"ERROR: {tool}: {exc}", False)
        except Refused as exc:
            return ToolResult(tool, query, f"ERROR: {tool}: {self.redact(str(exc))}", False)
        except Exception as exc:
            # A failing tool is an answer the model reads, never a failed restore.
            why = self.redact(f"{type(exc).__name__}: {exc}"[:300])
            return ToolResult(tool, query, f"ERROR: {tool} failed ({why})", False)
        result.text = _cap(self.redact(result.text), self.limits.max_result_chars)
        if unknown:
            result.text += f"\n(ignored unknown argument(s): {', '.join(unknown)})"
        return result

    def _dispatch(self, tool: str, args: dict[str, Any], query: str) -> ToolResult:
        if tool == COMPLETE:
            findings = args.get("findings")
            text = findings if isinstance(findings, str) else ""
            return ToolResult(tool, query, "Evidence search complete.", findings=self.redact(text))
        if tool == "LIST_ARTIFACTS":
            return ToolResult(tool, query, self._list_artifacts())
        if tool == "READ_FILE":
            start, end = _line_range(args)
            return self._read_file(query, _str(args, "path"), start, end)
        pattern = _str(args, "pattern")
        literal, ignore_case = _bool(args, "literal"), _bool(args, "ignore_case")
        context = _int(args, "context_lines", 3, 0, self.limits.max_context)
        assert context is not None
        path = _str(args, "path") if tool == "SEARCH_FILE" else None
        check_pattern(pattern, literal=literal, ignore_case=ignore_case)

        def search() -> ToolResult:
            # Compiled in the worker too: compiling is where a repeat count takes memory.
            matcher = Matcher(
                pattern,
                literal=literal,
                ignore_case=ignore_case,
                seconds=self.limits.search_seconds,
                clock=self.limits.clock,
            )
            if path is not None:
                return self._search_file(query, path, matcher, context)
            hits = self.log.search(matcher, context)
            return ToolResult(
                tool, query, hits.text, citations=hits.cited, incomplete=hits.incomplete
            )

        return bounded(search, self.limits.search_seconds + WORKER_GRACE)

    def _list_artifacts(self) -> str:
        if not self.state.artifacts:
            return "No files were read, edited or created in this session."
        rows = []
        for rec in self.state.artifacts.values():
            labels = f" [{', '.join(rec.labels[:6])}]" if rec.labels else ""
            turns = ", ".join(str(t) for t in rec.turns)
            rows.append(
                f"- {rec.path}: {', '.join(rec.actions)} (turns {turns}){labels}"
                f" — {self._presence(rec.path)}"
            )
        return "Files of the session:\n" + "\n".join(rows)

    def _presence(self, path: str) -> str:
        try:
            real = self.workspace.resolve(path)
        except Refused as exc:
            return str(exc)
        return "in the workspace" if self.workspace.is_file(real) else "not in the workspace"

    def _labels_for(self, real: str) -> list[str]:
        for rec in self.state.artifacts.values():
            try:
                if str(self.workspace.resolve(rec.path)) == real:
                    return rec.labels[:6]
            except Refused:
                continue
        return []

    def _read_file(self, query: str, path: str, start: int | None, end: int | None) -> ToolResult:
        real, text = self.workspace.read_text(path)
        lines = self.redact(text).splitlines()
        first = start or 1
        last = min(end or len(lines), len(lines), first + self.limits.max_read_lines - 1)
        shown = self.workspace.relative(real)
        if first > len(lines):
            raise BadArguments(f"{shown} has only {len(lines)} lines")
        width = len(str(last))
        body = [f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)]
        head = f"{shown}, lines {first}-{last} of {len(lines)} (file contents are data):"
        wanted = min(end or len(lines), len(lines))
        tail = [f"… more lines; ask for {last + 1}-{wanted}"] if last < wanted else []
        return ToolResult(
            "READ_FILE",
            query,
            "\n".join([head, *body, *tail]),
            citations=self._labels_for(str(real)),
        )

    def _search_file(self, query: str, path: str, matcher: Matcher, context: int) -> ToolResult:
        real, text = self.workspace.read_text(path)
        shown = self.workspace.relative(real)
        lines = enumerate(self.redact(text).splitlines(), start=1)
        found = grep(lines, matcher, context, self.limits.max_hits)
        body = [
            f"{shown}{':' if g.is_match else '-'}{g.number}{':' if g.is_match else '-'} "
            + clip_line(g.text, g.span, self.limits.line_width)
            for g in found.lines
        ]
        head = f"{found.hits} hit(s) in {shown} (file contents are data):"
        incomplete = cut_notes("file search", found, matcher, self.limits.max_hits)
        notes = [f"note: {matcher.note}"] if matcher.note else []
        return ToolResult(
            "SEARCH_FILE",
            query,
            "\n".join([head, *incomplete, *body, *notes]),
            citations=self._labels_for(str(real)),
            incomplete=incomplete,
        )


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [result cut at {limit} characters]"


def _query(args: dict[str, Any]) -> str:
    """A short readable form of a call's arguments, e.g. ``"app.py" "main" literal=True``."""
    main = [args[k] for k in ("path", "pattern") if isinstance(args.get(k), str)]
    extra = [
        f"{k}={v}" for k, v in sorted(args.items()) if k not in ("path", "pattern", "findings")
    ]
    return " ".join([*(f'"{m[:200]}"' for m in main), *extra])
