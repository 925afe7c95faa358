"""The unified session model: every reader yields these records.

Hot-path records are slotted dataclasses; pydantic is kept for configuration, API
bodies and LLM outputs. Nothing here knows which agent wrote a log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]
#: ``file_changes``: the files one agent step changed, as the agent recorded them after the
#: step (opencode's snapshot ``patch`` part: no tool call, no result; path per text line).
MessageType = Literal[
    "text", "tool_use", "tool_result", "thinking", "compaction", "summary", "file_changes"
]
CompactionKind = Literal["summary", "trim", "edit"]
ArtifactKind = Literal["read", "edited", "created", "deleted"]


@dataclass(slots=True)
class Usage:
    """Token usage of one model response (counted once per response, never per block)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: Usage) -> None:
        """Accumulate another usage record into this one."""
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write


@dataclass(slots=True)
class Compaction:
    """A point where the agent's context was compressed.

    ``summary`` replaces earlier messages with a summary; ``trim`` drops a prefix;
    ``edit`` strips parts (reasoning, tool output) of messages that survive.
    """

    kind: CompactionKind
    summary: str | None = None
    first_kept_id: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    trigger: str | None = None


@dataclass(slots=True)
class Message:
    """One content block of a conversation, normalized across agents.

    ``id`` is the source's own id when it has one, else ``"{file_index}:{entry_index}"``.
    Blocks of one model response share ``group`` (e.g. Claude ``message.id``), so a
    renderer can show them as one message. ``entry_index`` is the 1-based line (or
    record) number in file ``file_index`` of the session's chain.
    """

    id: str
    role: Role
    type: MessageType
    text: str
    timestamp: datetime | None = None
    file_index: int = 0
    entry_index: int = 0
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: dict[str, Any] | None = None
    is_error: bool = False
    group: str | None = None
    usage: Usage | None = None
    model: str | None = None
    compaction: Compaction | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def is_human(self) -> bool:
        """True for a real user request (not tool output, meta text or a summary)."""
        return self.role == "user" and self.type == "text" and not self.meta.get("synthetic")


#: A message with its ``[M#]`` label, the one a restoration cites (None: it has none).
Labelled = tuple[Message, str | None]


@dataclass(slots=True)
class ModelCall:
    """One model invocation: the input conversation and the response blocks."""

    input: list[Message]
    output: list[Message]
    model: str | None = None
    usage: Usage | None = None


@dataclass(slots=True)
class ToolCall:
    """A tool invocation recorded as an event (Inspect logs)."""

    id: str
    function: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    error: str | None = None


EventKind = Literal["message", "model", "tool", "compaction", "info"]


@dataclass(slots=True)
class TimelineEvent:
    """A leaf of the timeline: wraps a message, a model call, a tool call or a compaction."""

    uuid: str
    kind: EventKind
    message: Message | None = None
    model: ModelCall | None = None
    tool: ToolCall | None = None
    compaction: Compaction | None = None
    timestamp: datetime | None = None
    text: str | None = None


@dataclass(slots=True)
class TimelineSpan:
    """A node of the timeline: an agent, a sub-agent, a side chain or a branch."""

    id: str
    name: str
    span_type: str | None = None
    content: list[TimelineEvent | TimelineSpan] = field(default_factory=list)
    utility: bool = False
    branches: list[TimelineSpan] = field(default_factory=list)
    branched_from: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def events(self) -> Iterator[TimelineEvent]:
        """The direct events of this span (child spans excluded)."""
        for item in self.content:
            if isinstance(item, TimelineEvent):
                yield item

    def spans(self) -> Iterator[TimelineSpan]:
        """The direct child spans of this span."""
        for item in self.content:
            if isinstance(item, TimelineSpan):
                yield item

    def messages(self) -> list[Message]:
        """The messages held directly by this span, in order."""
        return [e.message for e in self.events() if e.message is not None]

    def walk(self) -> Iterator[TimelineSpan]:
        """This span and every descendant span (content and branches), depth first."""
        yield self
        for item in self.content:
            if isinstance(item, TimelineSpan):
                yield from item.walk()
        for branch in self.branches:
            yield from branch.walk()


@dataclass(slots=True)
class Timeline:
    """The whole session as a tree of spans."""

    root: TimelineSpan
    name: str = ""
    description: str = ""


@dataclass(slots=True)
class ReadWarning:
    """A problem found while reading a log: the line is reported and skipped."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        # Line 0 means the problem is the file as a whole (unreadable, wrong format).
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.message}"


@dataclass(slots=True)
class Session:
    """A session: its chain of transcript files, header facts and its timeline.

    The root span holds the active conversation as message events, in order;
    sub-agents, side chains and abandoned branches are child spans.
    """

    id: str
    agent: str
    files: list[str]
    timeline: Timeline
    cwd: str | None = None
    title: str | None = None
    model: str | None = None
    started_at: datetime | None = None
    warnings: list[ReadWarning] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Set when the session was read hollow (``sources.open_session(hollow=True)``): the
    #: active conversation's tool calls, results, thinking and replies have empty text
    #: and no tool input, and this streams those messages again, whole, in order. A long
    #: log's text is then never all in memory at once.
    bodies: Callable[[], Iterator[Message]] | None = None

    def messages(self) -> list[Message]:
        """The active conversation (the root span's own messages), in order."""
        return self.timeline.root.messages()

    def usage(self) -> Usage:
        """Total token usage of the active conversation."""
        total = Usage()
        for m in self.messages():
            if m.usage is not None:
                total.add(m.usage)
        return total


@dataclass(slots=True)
class ArtifactAction:
    """A file the agent touched, with the message and line that show it."""

    file_path: str
    action: ArtifactKind
    message_id: str
    line_number: int | None = None


@dataclass(slots=True)
class CommandRun:
    """A shell command the agent ran, and how it ended when the log says."""

    command: str
    message_id: str
    line_number: int | None = None
    exit_code: int | None = None
    is_error: bool = False
    #: The user (``rejected``) or a rule refused it: it never ran.
    rejected: bool = False


@dataclass(slots=True)
class Turn:
    """One user request and everything the agent did until the next real request."""

    number: int
    user_text: str
    messages: list[Message]
    artifacts: list[ArtifactAction] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    #: File actions the agent attempted whose tool call failed (never in ``artifacts``).
    failed_artifacts: list[ArtifactAction] = field(default_factory=list)
    #: File actions of tool calls the user (or a permission rule) refused: they never
    #: happened (never in ``artifacts`` nor ``failed_artifacts``; the result's
    #: ``meta["rejected"]``/``meta["user_said"]`` say who refused and why).
    rejected_artifacts: list[ArtifactAction] = field(default_factory=list)
    #: The agent was stopped mid-turn: the log marks an interrupt after the last request
    #: (Claude's ``[Request interrupted by user]``, Codex's ``turn_aborted``), or its work
    #: ends on a tool call or result, or it never answered (``turn_parser.is_interrupted``).
    interrupted: bool = False

    @property
    def message_ids(self) -> list[str]:
        return [m.id for m in self.messages]

    @property
    def start_line(self) -> int:
        return self.messages[0].entry_index if self.messages else 0

    @property
    def end_line(self) -> int:
        return self.messages[-1].entry_index if self.messages else 0
