"""Turn plain screen lines of a TUI capture into unified messages.

One state machine serves three layouts, told apart line by line by their markers:

* opencode: a left rail ``┃`` marks user prompts and tool blocks (old builds: a
  ``┃ … ┃`` box closed by ``username (3:41 PM)``); ``→ Read path``, ``← Edit path``,
  ``$ cmd`` are tools; ``▣  Build · model`` closes an assistant turn; a
  ``── Compaction ──`` divider starts a summary closed by ``▣  Compaction · …``;
* Claude Code: ``❯ text`` prompts, ``● text`` replies and ``● Tool(args)`` calls,
  ``⎿`` tool output, a composer between two rules;
* Codex: ``› text`` prompts, ``• text`` replies, ``• Ran cmd`` / ``• Edited path``
  tools and ``└`` output.

Each message is identified by the raw line it starts on (``"{file_index}:{line}"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ...model import Compaction, Message, MessageType, Role
from ..slash import is_local_command
from .layout import dedent, tool_call
from .patterns import LINE_KEYS, TerminalPatterns

#: Preamble lines (shell prompt, banner) held back until the agent's UI shows up.
PREAMBLE_LIMIT = 400

#: ``may`` of a line on which every line pattern is tried, or none.
_ALL = frozenset(LINE_KEYS)
_NONE: frozenset[str] = frozenset()
_CODEX_VERBS = {"Ran": "Bash", "Edited": "Edit", "Added": "Write", "Deleted": "Delete"}
_COLLAPSED_VERBS = {"Read": "Read", "Searched": "Grep", "Listed": "LS", "Wrote": "Write"}


@dataclass(slots=True)
class _Block:
    kind: str  # text | user | result | summary | args
    line: int
    lines: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: The first line came after a marker (``● ``, ``❯ ``): its indent is not comparable.
    marked: bool = False


class LineScanner:
    """Feed ``(raw_line, text)`` screen lines in order; collect messages from :meth:`drain`."""

    def __init__(self, patterns: TerminalPatterns, file_index: int = 0) -> None:
        self.p = patterns
        self.file_index = file_index
        #: The model named by the last assistant footer, if any.
        self.model: str | None = None
        self._out: list[Message] = []
        self._held: list[Message] = []
        self._preamble = True
        self._held_lines = 0
        self._ids: set[str] = set()
        self._block: _Block | None = None
        self._rail: list[tuple[int, str, bool]] = []
        self._last_tool: Message | None = None
        self._last_user: Message | None = None
        self._pending_rule = False
        self._in_composer = False
        self._after_composer = False
        self._explored = False
        #: Column of a tool output's text: deeper lines continue it across blank lines.
        self._result_indent = -1

    # -- output ------------------------------------------------------------------

    def drain(self) -> list[Message]:
        """The messages completed so far (each is returned once)."""
        out, self._out = self._out, []
        return out

    def finish(self) -> list[Message]:
        """Flush everything still open; return the remaining messages."""
        if self._rail:
            self._close_rail("")
        self._flush()
        self._end_preamble()
        return self.drain()

    def _emit(self, role: Role, type_: MessageType, text: str, line: int, **kw: Any) -> Message:
        mid = f"{self.file_index}:{line}"
        n = 1
        while mid in self._ids:
            n += 1
            mid = f"{self.file_index}:{line}.{n}"
        self._ids.add(mid)
        msg = Message(
            id=mid,
            role=role,
            type=type_,
            text=text,
            file_index=self.file_index,
            entry_index=line,
            **kw,
        )
        if msg.type == "tool_use":
            msg.tool_call_id = mid
            self._last_tool = msg
        elif msg.type == "tool_result" and self._last_tool is not None:
            msg.tool_call_id = self._last_tool.tool_call_id
            msg.tool_name = self._last_tool.tool_name
        else:
            self._last_tool = None
        if role == "user":
            self._last_user = msg
        elif role == "assistant":
            self._last_user = None
        (self._held if self._preamble else self._out).append(msg)
        return msg

    def _end_preamble(self) -> None:
        if self._preamble:
            self._preamble = False
            self._out.extend(self._held)
            self._held.clear()

    # -- blocks ------------------------------------------------------------------

    def _flush(self) -> None:
        b, self._block = self._block, None
        if b is None:
            return
        while b.lines and not b.lines[-1].strip():
            b.lines.pop()
        if b.marked and b.lines:
            text = "\n".join([b.lines[0], dedent(b.lines[1:])]).strip("\n")
        else:
            text = dedent(b.lines)
        if b.kind == "summary":
            comp = Compaction(kind="summary", summary=text or None)
            self._emit("system", "compaction", text, b.line, compaction=comp)
        elif not text.strip():
            return
        elif b.kind == "text":
            self._emit("assistant", "text", text, b.line, model=self.model)
        elif b.kind == "result":
            self._emit("tool", "tool_result", text, b.line, meta=b.meta)
        elif b.kind == "user":
            self._emit_user(text, b.line, b.meta)
        else:  # args: a tool call whose arguments ran over several lines
            self._emit_tool(b.meta["name"], text, b.line)

    def _emit_user(self, text: str, line: int, meta: dict[str, Any]) -> None:
        prev = self._last_user
        if prev is not None and prev.meta.get("command") and not prev.meta.get("synthetic"):
            # A prompt command's expanded prompt follows it with no reply in between.
            meta = {**meta, "synthetic": True, "expansion_of": prev.meta["command"]}
        elif text.startswith("/"):
            command, _, args = text.partition(" ")
            meta = {**meta, "command": command}
            if args.strip():
                meta["args"] = args.strip()
            if is_local_command(command):
                meta["synthetic"] = True  # acts on the program: no request
        self._emit("user", "text", text, line, meta=meta)

    def _emit_tool(self, name: str, args: str, line: int, collapsed: bool = False) -> None:
        tool, tool_input = tool_call(name, args, collapsed)
        text = args if collapsed else f"{name} {args}".strip()
        meta = {"collapsed": True} if collapsed else {}
        self._emit(
            "assistant", "tool_use", text, line, tool_name=tool, tool_input=tool_input, meta=meta
        )

    def _start(self, kind: str, line: int, first: str | None = None, **meta: Any) -> None:
        self._flush()
        lines = [] if first is None else [first]
        self._block = _Block(kind, line, lines, dict(meta), marked=first is not None)

    # -- opencode rail blocks -----------------------------------------------------

    def _close_rail(self, next_line: str) -> bool:
        """Classify the finished rail block; True when ``next_line`` was consumed too."""
        rail, self._rail = self._rail, []
        if self.p.composer_edge.match(next_line):
            self._after_composer = True
            return True
        self._end_preamble()
        contents = [t for _, t, _ in rail]
        user_line = next(
            (i for i, t in enumerate(contents) if self.p.username_timestamp.match(t)), None
        )
        consumed = bool(self.p.username_timestamp.match(next_line))
        if user_line is not None:
            contents = contents[:user_line]
        first = next((i for i, t in enumerate(contents) if t.strip()), None)
        if first is None:
            return consumed
        head = contents[first].strip()
        line = rail[first][0]
        if user_line is None and not consumed and self._rail_tool(head, line):
            rest = [i for i in range(first + 1, len(contents)) if contents[i].strip()]
            if rest:
                body = dedent(contents[rest[0] : rest[-1] + 1])
                self._emit("tool", "tool_result", body, rail[rest[0]][0])
            return False
        text = dedent(contents[first:]).strip("\n")
        if user_line is not None or consumed or first > 0 or rail[first][2]:
            self._emit_user(text, line, {})
        else:  # output of a tool block whose header scrolled off the top
            self._emit("tool", "tool_result", text, line, meta={"orphan": True})
        return consumed

    def _rail_tool(self, head: str, line: int) -> bool:
        if (m := self.p.shell.match(head)) is not None:
            self._emit_tool("Bash", m.group("cmd") or m.group("cmd2"), line)
        elif (m := self.p.read_file.match(head)) is not None:
            self._emit_tool("Read", m.group("path"), line)
        elif (m := self.p.edit_file.match(head)) is not None:
            self._emit_tool("Edit", m.group("path"), line)
        elif (m := self.p.write_file.match(head)) is not None:
            self._emit_tool("Write", m.group("path"), line)
        elif head[:1] in "→←" and len(head) > 2:
            name, _, args = head[1:].strip().partition(" ")
            self._emit_tool(name, args.strip(), line)
        else:
            return False
        return True

    # -- the line dispatcher --------------------------------------------------------

    def feed_block(self, numbers: Sequence[int], lines: list[str]) -> None:
        """Take a block of screen lines, as :func:`.cut_sidebar_blocks` gives them.

        Same result as :meth:`feed` on each line, but the lines that the pattern gate
        clears (most of a capture) are taken as plain text in runs, with no pattern
        tried on them. ``lines`` must be right-stripped (blank lines empty).
        """
        gate = self.p.gate
        if gate is None:
            for lineno, line in zip(numbers, lines, strict=True):
                self.feed(lineno, line)
            return
        start = 0
        for i, names in gate.maybe(lines):
            if i > start:
                self._plain_run(numbers, lines, start, i)
            self._feed(numbers[i], lines[i], names)
            start = i + 1
        if start < len(lines):
            self._plain_run(numbers, lines, start, len(lines))

    def _plain_run(self, numbers: Sequence[int], lines: list[str], i: int, end: int) -> None:
        """:meth:`feed` on lines ``i:end``, none of which any line pattern matches."""
        if self._rail:  # the first line closes the rail block and may be consumed
            self._feed(numbers[i], lines[i], _NONE)
            i += 1
            if i == end:
                return
        if self._preamble:
            self._held_lines += end - i
            if self._held_lines > PREAMBLE_LIMIT:
                self._end_preamble()
        if self._in_composer:
            return
        self._pending_rule = False
        if self._after_composer:
            return
        while i < end:
            b = self._block
            if b is None:
                while i < end and not lines[i]:
                    i += 1
                if i < end:
                    self._block = _Block("text", numbers[i], [lines[i]])
                    i += 1
            elif b.kind in ("text", "user", "summary"):
                b.lines += lines[i:end]
                return
            elif (
                b.kind == "result"
                and lines[i]
                and (self._result_indent < 0 or b.lines[-1:] != [""])
            ):
                # Up to the next blank line nothing can end a tool output.
                try:
                    j = lines.index("", i, end)
                except ValueError:
                    j = end
                if b.line == 0:
                    b.line = numbers[i]
                b.lines += lines[i:j]
                i = j
            else:  # blank lines and args blocks: as feed does, line by line
                self._plain_line(numbers[i], lines[i], _NONE)
                i += 1

    def feed(self, lineno: int, line: str) -> None:
        """Take the next screen line (already ANSI-stripped, sidebar cut)."""
        self._feed(lineno, line, _ALL)

    def _feed(self, lineno: int, line: str, may: AbstractSet[str]) -> None:
        """:meth:`feed`, trying on ``line`` only the :data:`LINE_KEYS` patterns in ``may``."""
        p = self.p
        if self._preamble:
            self._held_lines += 1
            if self._held_lines > PREAMBLE_LIMIT:
                self._end_preamble()
        if self._in_composer:
            if p.rule.match(line):
                self._in_composer, self._after_composer = False, True
            return
        rail = p.user_message.match(line) if "user_message" in may else None
        if rail is not None:
            if not self._rail:
                self._flush()
            self._rail.append((lineno, rail.group("text").rstrip(), line.endswith("┃")))
            return
        if self._rail and self._close_rail(line):
            return
        if "rule" in may and p.rule.match(line):
            self._flush()
            self._pending_rule = True
            return
        after_rule, self._pending_rule = self._pending_rule, False
        if after_rule and "prompt" in may and p.prompt.match(line):
            self._in_composer = True
            return
        if "banner" in may and p.banner.search(line):
            self._flush()
            self._held.clear()
            self._preamble = False
            return
        if self._marker_line(lineno, line, may):
            self._after_composer = False
            return
        if (
            self._after_composer
            or ("noise" in may and p.noise.search(line))
            or ("agent_working" in may and p.agent_working.search(line))
            or ("username_timestamp" in may and p.username_timestamp.match(line))
        ):
            return
        self._plain_line(lineno, line, may)

    def _marker_line(self, lineno: int, line: str, may: AbstractSet[str]) -> bool:
        p = self.p
        if "compacted" in may and p.compacted.match(line):
            self._flush()
            self._end_preamble()
            self._emit(
                "system",
                "compaction",
                line.strip(" ✻•"),
                lineno,
                compaction=Compaction(kind="summary"),
            )
        elif "assistant_footer" in may and (m := p.assistant_footer.match(line)) is not None:
            if self._block is not None and self._block.kind == "summary":
                self._flush()
            else:
                self._flush()
                self.model = m.group("model")
            self._end_preamble()
        elif "compaction_divider" in may and p.compaction_divider.match(line):
            self._end_preamble()
            self._start("summary", lineno)
        elif "prompt" in may and (m := p.prompt.match(line)) is not None:
            if m.group("text") and not p.placeholder.match(line):
                self._explored = False
                self._start("user", lineno, m.group("text"))
        elif "bullet" in may and (m := p.bullet.match(line)) is not None:
            self._flush()
            self._end_preamble()
            self._bullet(lineno, m.group("text"), codex=line.startswith("•"))
        elif "tool_output" in may and (m := p.tool_output.match(line)) is not None:
            self._end_preamble()
            self._output(lineno, m.group("text"), m.start("text"))
        elif "collapsed_tool" in may and (m := p.collapsed_tool.match(line)) is not None:
            self._flush()
            self._end_preamble()
            self._emit_tool(
                _COLLAPSED_VERBS.get(m.group("verb"), m.group("verb")),
                m.group("text"),
                lineno,
                collapsed=True,
            )
        else:
            return False
        return True

    def _bullet(self, lineno: int, text: str, codex: bool) -> None:
        p = self.p
        self._explored = text.strip() == "Explored"
        if self._explored:
            return
        if (m := p.collapsed_tool.match(text)) is not None:
            self._emit_tool(
                _COLLAPSED_VERBS.get(m.group("verb"), m.group("verb")),
                m.group("text"),
                lineno,
                collapsed=True,
            )
        elif (m := p.tool_call.match(text)) is not None:
            if m.group("rest") is None:
                self._start("args", lineno, m.group("args"), name=m.group("name"))
            else:
                self._emit_tool(m.group("name"), m.group("args"), lineno)
        elif codex and self._codex_tool(text, lineno):
            return
        else:
            self._start("text", lineno, text)

    def _codex_tool(self, text: str, lineno: int) -> bool:
        m = self.p.codex_tool.match(text)
        if m is None:
            return False
        verb = m.group("verb") or m.group("fverb")
        self._emit_tool(_CODEX_VERBS.get(verb, verb), m.group("arg") or m.group("path"), lineno)
        return True

    def _output(self, lineno: int, text: str, indent: int) -> None:
        if self._block is not None and self._block.kind == "args":
            self._block.lines[-1] = self._block.lines[-1].rstrip(")")
        self._flush()
        if self._explored and self._codex_tool(text.strip(), lineno):
            return
        if self._last_tool is None and self._last_user is not None:
            # Output of a local slash command (``/mcp`` → "Reconnected to …").
            self._start("result", lineno, text, command_output=True)
        else:
            self._start("result", lineno, text)
        self._result_indent = indent

    def _plain_line(self, lineno: int, line: str, may: AbstractSet[str]) -> None:
        p, b = self.p, self._block
        if not line.strip():
            if b is not None and (
                b.kind == "args" or (b.kind == "result" and self._result_indent < 0)
            ):
                self._flush()
            elif b is not None:
                b.lines.append("")
            return
        if (
            b is not None
            and b.kind == "result"
            and b.lines
            and not b.lines[-1]
            and len(line) - len(line.lstrip()) < self._result_indent
        ):
            self._flush()
            b = None
        if b is None or b.kind in ("text", "result"):
            for key, pat, name in (
                ("read_file", p.read_file, "Read"),
                ("edit_file", p.edit_file, "Edit"),
                ("write_file", p.write_file, "Write"),
            ):
                if key in may and (m := pat.match(line)) is not None:
                    self._flush()
                    self._emit_tool(name, m.group("path"), lineno)
                    return
            if "shell" in may and (m := p.shell.match(line)) is not None:
                self._flush()
                self._emit_tool("Bash", m.group("cmd") or m.group("cmd2"), lineno)
                self._start("result", 0)  # the output's line is its first line's
                self._result_indent = -1
                return
        if b is None:
            self._start("text", lineno)
            self._block.lines.append(line)  # type: ignore[union-attr]
            return
        if b.kind == "result" and b.line == 0:
            b.line = lineno
        if b.kind == "args" and line.rstrip().endswith(")"):
            b.lines.append(line.rstrip()[:-1])
            self._flush()
            return
        b.lines.append(line)
