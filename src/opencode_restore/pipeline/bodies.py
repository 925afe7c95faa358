"""The bodies of a hollow session's messages, put back one turn at a time.

A session read hollow (``Session.bodies``) holds its active conversation without the
text of tool calls, results and replies: on a long log that text is most of the memory a
restore would hold. The restore streams it back from the files twice, each time in
order: to parse and hash the turns (the journal needs every turn's hash before the first
is summarized) and to summarize them. After each turn the bodies are emptied again.

Each body is redacted when it is first read. A body whose redaction changed nothing is
remembered by a digest of its text (and one of its tool input) at its place in the
stream, and when the same message comes back there with the same digest it is the same
text: it is not redacted again (redacting every body twice was a fifth of a long offline
restore's CPU). A body the redaction did change is redacted again when it comes back (a
secret is rare; keeping its redacted text would hold the log's text in memory). The
digests take 32 bytes a message, in one array.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from ..errors import SourceError
from ..model import Message, Session, Turn
from ..redact import head_and_tail, redact_value


def drop_bodies(turn: Turn, keep: set[int]) -> int:
    """Empty the text and tool input of a summarized turn's messages; the characters dropped.

    What the stages after the turns read of a turn is kept: its requests (the last
    request, the first), compactions, artifacts and commands, each message's id, role,
    type and position (references), and its facts. Messages another span holds
    (``keep``, by ``id()``) are left alone.
    """
    dropped = 0
    for m in turn.messages:
        if not m.is_human and m.compaction is None and id(m) not in keep:
            dropped += len(m.text)
            m.text = ""
            m.tool_input = None
    return dropped


class Bodies:
    """Fills a hollow session's messages from ``Session.bodies``, in conversation order.

    ``redact`` is applied as ``redact_session`` applies it to a session read whole (the
    same cap, the same strings), so a filled message is what it would have been.
    """

    def __init__(self, session: Session, redact: Callable[[str], str] | None) -> None:
        if session.bodies is None:
            raise ValueError("the session was not read hollow")
        self._open = session.bodies
        self._redact = redact
        self._path = session.files[0] if session.files else "-"
        self._stream: Iterator[Message] | None = None
        #: Per place in the stream, the digests of its text and tool input when their
        #: redaction changed nothing, else zeros (see the module docstring).
        self._clean = bytearray()
        self._at = 0  # the place in the stream of the next message

    def rewind(self) -> None:
        """Let go of the stream (and what it holds): the next ``fill`` starts again from
        the first message."""
        self._stream = None
        self._at = 0

    def fill_turn(self, turn: Turn) -> None:
        """``fill`` with the messages of ``turn``."""
        self.fill(turn.messages)

    def fill(self, messages: Iterable[Message]) -> None:
        """Put back the bodies of ``messages``, the next messages of the conversation.

        A message that differs from the one read first (another id at that place) means
        the log was rewritten since: that is an error, not a guess.
        """
        if self._stream is None:
            self._stream = self._open()
        for m in messages:
            whole = next(self._stream, None)
            if whole is None or whole.id != m.id:
                raise SourceError(
                    self._path, "changed while it was being restored; run the restore again"
                )
            at = self._at * 2 * _DIGEST
            self._at += 1
            if at == len(self._clean):
                self._clean += bytes(2 * _DIGEST)
            if m.text or m.tool_input is not None:
                continue  # never emptied (a request, a compaction) or filled already
            text, tool_input = whole.text, whole.tool_input
            if self._redact is not None:
                text = self._redacted_text(at, head_and_tail(text))
                if tool_input:
                    tool_input = self._redacted_input(at + _DIGEST, tool_input)
            m.text, m.tool_input = text, tool_input

    def _redacted_text(self, at: int, text: str) -> str:
        assert self._redact is not None
        key = _digest(text.encode("utf-8", "surrogatepass"))
        if self._clean[at : at + _DIGEST] == key:
            return text
        done = self._redact(text)
        if done == text:
            self._clean[at : at + _DIGEST] = key
        return done

    def _redacted_input(self, at: int, tool_input: dict[str, Any]) -> dict[str, Any]:
        assert self._redact is not None
        try:
            key = _digest(orjson.dumps(tool_input))
        except TypeError:  # not plain JSON (a key or a number orjson cannot write)
            key = None
        if key is not None and self._clean[at : at + _DIGEST] == key:
            return tool_input
        done: dict[str, Any] = redact_value(tool_input, self._redact)
        if key is not None and done == tool_input:
            self._clean[at : at + _DIGEST] = key
        return done


#: Bytes of a body's digest.
_DIGEST = 16


def _digest(body: bytes) -> bytes:
    """A digest of one body: equal digests, equal bodies."""
    return hashlib.blake2b(body, digest_size=_DIGEST).digest()
