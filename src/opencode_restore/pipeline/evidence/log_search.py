"""SEARCH_LOG: grep over the session's raw log files, or its messages where lines are not entries.

In JSONL logs (Claude Code, Codex, pi, Gemini ``.jsonl``, opencode event streams) and
terminal captures a message's ``entry_index`` is its line, so a hit at line N belongs to
the message with the greatest ``entry_index <= N`` and carries that message's ``[M#]``.
Elsewhere (an opencode export or database, an Inspect log, a legacy Gemini JSON file) a
line says nothing about messages, so the messages themselves are searched, each hit
labelled by its message. Files are streamed a line at a time (very long lines in chunks
of 1 MB), never read whole. Of a line longer than 4 MB (a giant tool output) only the
first 2 MB and the last 1-2 MB are searched, and the result says so: a pass over every
byte of a 50 MB line costs seconds and finds nothing a model could use.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...model import Message, Session, Turn
from ...timeline.numbering import Numbering
from .sandbox import GrepResult, Matcher, Refused, Span, clip_line, grep, open_regular

LINE_AGENTS = frozenset({"claude-code", "codex", "pi", "terminal"})
MAX_LINE_BYTES = 1 << 20
# Chunks of one raw line searched from its start; its last two chunks are searched too.
HEAD_CHUNKS = 2
# Characters each side of a match that a result may show of its line.
_WINDOW = 1000
# Characters each side of that window redacted with it: a secret block is redacted whole
# before the window is cut from it, so a window never holds part of a private key whose
# BEGIN line it left out (look-behind searches at growing offsets got 33 of a key's 49
# lines that way). A PEM key is at most ~7 KB, even JSON-escaped; a body that starts
# further back than this is masked as a key body (`mask_key_bodies`).
_MARGIN = 8192
#: A run of base64 as long as a PEM or OpenSSH body line (64 or 70 characters), and the
#: lines after it (line breaks as written, or escaped in a JSON string).
_KEY_BODY = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}(?:(?:(?:\\r)?\\n|\r?\n)[A-Za-z0-9+/]+={0,2})*")
#: What a redaction writes in place of a secret (`mask_key_bodies` writes the same).
_REDACTED = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]{1,60}\]")


@dataclass(frozen=True)
class Limits:
    """Caps on what one tool call may return."""

    max_hits: int = 50
    max_result_chars: int = 6000
    line_width: int = 300
    # Context lines of a JSONL log are mostly record metadata: shown narrower than hits.
    context_width: int = 120
    max_read_lines: int = 200
    max_context: int = 10
    search_seconds: float = 2.0
    #: What the time limit is measured by (tests inject a fake one).
    clock: Callable[[], float] = time.monotonic


def line_addressed(session: Session, path: str) -> bool:
    """True when the entries of ``path`` are numbered by line (see the module docstring)."""
    if session.agent in LINE_AGENTS:
        return True
    if session.agent == "gemini":
        return path.endswith(".jsonl")
    return session.agent == "opencode" and session.meta.get("source") == "events"


def cut_notes(what: str, found: GrepResult, matcher: Matcher, max_hits: int) -> list[str]:
    """Why a search cut by its time limit or its cap on hits may have missed hits."""
    notes = []
    if found.timed_out:
        notes.append(
            f"{what} stopped after {matcher.seconds:g} s (line {found.stopped_at}): results "
            "may be incomplete; simplify the pattern"
        )
    if found.hit_cap:
        notes.append(
            f"{what} stopped after {max_hits} hits: results may be incomplete; narrow the "
            "pattern to see the rest"
        )
    return notes


@dataclass
class LogHits:
    """What SEARCH_LOG found: the formatted result, the labels it cites, and why hits may
    be missing (the time limit, the cap on hits, lines searched only in part)."""

    text: str
    cited: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)


def mask_key_bodies(text: str) -> str:
    """``text`` with every run of base64 key lines masked, for text cut from a longer one.

    A window that starts inside a private key's body has no ``BEGIN`` line for the
    redactor to recognise: its base64 lines are masked by their shape (a run of 60 or
    more base64 characters with upper case, lower case and digits, so a hex hash is kept).
    """
    return _KEY_BODY.sub(_mask_body, text) if len(text) >= 60 else text


def _mask_body(match: re.Match[str]) -> str:
    run = match.group(0)
    mixed = (
        any(c.isupper() for c in run)
        and any(c.islower() for c in run)
        and any(c.isdigit() for c in run)
    )
    return "[REDACTED:key-body]" if mixed else run


def _moved(before: str, after: str, at: int) -> int:
    """Where offset ``at`` of ``before`` is in ``after``: ``before`` with secrets replaced by
    ``[REDACTED:kind]``. An offset inside a secret moves to its replacement."""
    src = dst = 0
    for token in _REDACTED.finditer(after):
        kept = token.start() - dst  # the text before the replacement is as it was
        if at < src + kept:
            return dst + at - src
        src += kept
        # The secret ends where the text after its replacement resumes.
        following = _REDACTED.search(after, token.end())
        tail = after[token.end() : following.start() if following else len(after)][:64]
        resume = before.find(tail, src) if tail else len(before)
        if resume < 0 or at < resume:
            return token.start()
        src, dst = resume, token.end()
    return min(dst + at - src, len(after))


def _decoded(chunk: bytes) -> str:
    return chunk.decode("utf-8", errors="replace").rstrip("\r\n")


def _raw_lines(fd: int, cut: list[int]) -> Iterator[tuple[int, str]]:
    """Numbered chunks of the file's lines; the middle of a very long line is skipped.

    A line's first ``HEAD_CHUNKS`` chunks and its last two are yielded; the numbers of
    lines whose middle was skipped are appended to ``cut``.
    """
    with os.fdopen(fd, "rb") as fh:
        number = 0
        part = 0  # chunks of the current line read so far
        tail: deque[bytes] = deque(maxlen=2)  # the latest chunks past the head
        skipped = False
        while chunk := fh.readline(MAX_LINE_BYTES):
            if part == 0:
                number += 1
            if part < HEAD_CHUNKS:
                yield number, _decoded(chunk)
            else:
                skipped = skipped or len(tail) == tail.maxlen
                tail.append(chunk)
            if not chunk.endswith(b"\n"):
                part += 1
                continue
            yield from ((number, _decoded(c)) for c in tail)
            if skipped:
                cut.append(number)
            part, skipped = 0, False
            tail.clear()
        # A last line without a newline.
        yield from ((number, _decoded(c)) for c in tail)
        if skipped:
            cut.append(number)


def searchable_text(m: Message) -> str:
    """What a message search sees: the text, and a tool call's name and input."""
    if m.type == "tool_use" and m.tool_input:
        call = f"{m.tool_name or 'tool'} {json.dumps(m.tool_input, ensure_ascii=False)}"
        return f"{call}\n{m.text}" if m.text else call
    return m.text


class LogSearch:
    """SEARCH_LOG over one session, with each hit tied to an ``[M#]`` label."""

    def __init__(
        self,
        session: Session,
        turns: list[Turn],
        numbering: Numbering,
        redact: Callable[[str], str],
        limits: Limits,
    ) -> None:
        self.session = session
        self.numbering = numbering
        self.redact = redact
        self.limits = limits
        self.messages = [m for t in turns for m in t.messages]
        self._entries: dict[int, tuple[list[int], list[str]]] = {}
        for ref in numbering:
            entries, labels = self._entries.setdefault(ref.file_index, ([], []))
            at = bisect.bisect_left(entries, ref.entry_index)
            if at < len(entries) and entries[at] == ref.entry_index:
                continue  # several blocks on one line: the first label stands for it
            entries.insert(at, ref.entry_index)
            labels.insert(at, ref.label)
        names = [os.path.basename(f) for f in session.files]
        self._names = names if len(set(names)) == len(names) else list(session.files)

    def label_at(self, file_index: int, line: int) -> str | None:
        """The label of the message at ``line`` of file ``file_index`` (None before any)."""
        entries, labels = self._entries.get(file_index, ([], []))
        at = bisect.bisect_right(entries, line) - 1
        return labels[at] if at >= 0 else None

    def search(self, matcher: Matcher, context: int) -> LogHits:
        """The formatted hits, the labels they cite and why hits may be missing.

        What made the result incomplete is said right under its first line, where a cut
        of a long result (the tool's character cap, an evidence excerpt) still keeps it.
        """
        out: list[str] = []
        cited: list[str] = []
        notes: list[str] = []
        incomplete: list[str] = []
        stop = GrepResult()
        by_message: set[int] = set()
        for index, path in enumerate(self.session.files):
            if not line_addressed(self.session, path):
                by_message.add(index)
                continue
            if stop.timed_out or stop.hits >= self.limits.max_hits:
                continue
            try:
                fd = open_regular(Path(path), None)
            except Refused as exc:
                notes.append(f"{self._names[index]}: {exc}; searched its messages instead")
                by_message.add(index)
                continue
            cut: list[int] = []
            lines = _raw_lines(fd, cut)
            found = grep(lines, matcher, context, self.limits.max_hits - stop.hits, self._keep)
            _merge(stop, found)
            out.extend(self._format_raw(index, found, cited))
            if cut:
                incomplete.append(_cut_note(self._names[index], cut))
        if by_message and not stop.timed_out and stop.hits < self.limits.max_hits:
            out.extend(self._search_messages(by_message, matcher, context, stop, cited))
        where = "messages" if len(by_message) == len(self.session.files) else "raw log"
        head = f"{stop.hits} hit(s) in the session's {where}; [M#] is the message at the hit:"
        incomplete[:0] = cut_notes("log search", stop, matcher, self.limits.max_hits)
        if matcher.note:
            notes.append(f"note: {matcher.note}")
        text = "\n".join([head, *incomplete, *out, *notes])
        return LogHits(text, cited, incomplete)

    def _keep(self, text: str, span: Span | None) -> tuple[str, Span | None]:
        """What a result may show of a line: redacted first (the window and ``_MARGIN``
        each side of it, key bodies masked), then cut to the window around the match."""
        lead = max(0, span[0] - _WINDOW - _MARGIN) if span is not None else 0
        region = text[lead : lead + 2 * (_WINDOW + _MARGIN)]
        if span is not None:
            span = (span[0] - lead, span[1] - lead)
        shown = mask_key_bodies(self.redact(region))
        if span is not None and shown != region:
            span = (_moved(region, shown, span[0]), _moved(region, shown, span[1]))
        return _window(shown, span)

    def _show(self, text: str, span: Span | None) -> str:
        """A clipped view of one kept (already redacted) line, centred on the match."""
        width = self.limits.line_width if span is not None else self.limits.context_width
        return clip_line(text, span, width)

    def _format_raw(self, index: int, found: GrepResult, cited: list[str]) -> list[str]:
        name = self._names[index]
        lines: list[str] = []
        previous = 0
        for g in found.lines:
            if previous and g.number > previous + 1:
                lines.append("--")
            previous = g.number
            if g.is_match:
                label = self.label_at(index, g.number)
                tag = f" [{label}]" if label else ""
                if label and label not in cited:
                    cited.append(label)
                lines.append(f"{name}:{g.number}{tag}: {self._show(g.text, g.span)}")
            else:
                lines.append(f"{name}-{g.number}-  {self._show(g.text, None)}")
        return lines

    def _search_messages(
        self, files: set[int], matcher: Matcher, context: int, stop: GrepResult, cited: list[str]
    ) -> list[str]:
        lines: list[str] = []
        for m in self.messages:
            if m.file_index not in files and m.file_index < len(self.session.files):
                continue
            if stop.timed_out or stop.hits >= self.limits.max_hits:
                stop.hit_cap = stop.hit_cap or not stop.timed_out
                break
            text = searchable_text(m)
            if "PRIVATE KEY" in text or _KEY_BODY.search(text):
                # A key over several lines is redacted whole before the message is cut
                # into lines: its short last line has no shape a line alone is known by.
                text = self.redact(text)
            numbered = _capped_lines(text)
            found = grep(numbered, matcher, context, self.limits.max_hits - stop.hits, self._keep)
            _merge(stop, found)
            label = self.numbering.label_for(m.id)
            who = f"[{label}]" if label else f"message {m.id}"
            if found.hits and label and label not in cited:
                cited.append(label)
            for g in found.lines:
                sep = ":" if g.is_match else "-"
                lines.append(f"{who} line {g.number}{sep} {self._show(g.text, g.span)}")
        return lines


def _window(text: str, span: Span | None) -> tuple[str, Span | None]:
    """The part of a line a result shows: ``_WINDOW`` characters each side of the match
    (the start of a context line), and the match's span in it."""
    if len(text) <= 2 * _WINDOW:
        return text, span
    lead = max(0, span[0] - _WINDOW) if span is not None else 0
    text = text[lead : lead + 2 * _WINDOW]
    return text, (span[0] - lead, span[1] - lead) if span is not None else None


def _capped_lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines of a message; a very long one is searched by its head and its end."""
    head = HEAD_CHUNKS * MAX_LINE_BYTES
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > 2 * head:
            yield number, line[:head]
            yield number, line[-head:]
        else:
            yield number, line


def _cut_note(name: str, cut: list[int]) -> str:
    lines = ", ".join(str(n) for n in cut[:5]) + (", …" if len(cut) > 5 else "")
    head = HEAD_CHUNKS * MAX_LINE_BYTES >> 20
    return (
        f"{name} line(s) {lines} are very long; only their first {head} MB and their end "
        "were searched: results may be incomplete"
    )


def _merge(total: GrepResult, found: GrepResult) -> None:
    total.hits += found.hits
    total.hit_cap = total.hit_cap or found.hit_cap
    total.timed_out = total.timed_out or found.timed_out
    total.stopped_at = found.stopped_at
