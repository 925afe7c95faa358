"""Global ``[M#]`` numbering shared by every span scanned in one restore.

`Numbering` owns one counter and one label map. Each `Numbering.messages_as_str` call
continues where the previous one stopped (M1..M12, then M13..M20, ...), so a label is
unique across every span scanned and `Numbering.extract_references` resolves a citation
from any of them. `message_numbering` is the functional form the design seed describes.
`Labeler` issues the same labels to a stream read once, for the reading commands.

Citations are read from bracket groups: ``[M14]``, ``[M3, M7]``, ``[M3-M5]`` (expanded
to M3, M4, M5), ``[M2, M4-M6]``, also inside prose (``[see M3 and M9]``). Labels that were
never issued are left out of the references and reported as unknown.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from opencode_restore.model import Message
from opencode_restore.timeline.preprocess import DEFAULT_PREPROCESSOR, MessagesPreprocessor
from opencode_restore.timeline.render import message_as_str, message_shown

MessagesAsStrFn = Callable[[list[Message]], Awaitable[str]]
ExtractReferencesFn = Callable[[str], list["Reference"]]

STATE_VERSION = 1

# A bracket group is bounded (no nested brackets, at most 400 chars) so scanning
# arbitrary text stays linear: an unclosed "[" can never make the engine rescan the rest.
_BRACKET = re.compile(r"\[([^\[\]\n]{1,400})\]")
# "M3", "M3-M5", "M3 – M5", "M3-5"; the word boundary keeps "SUM3" or "M3x" out.
_TOKEN = re.compile(r"\bM([0-9]{1,18})(?:\s*[-–—]\s*M?([0-9]{1,18}))?\b")


@dataclass(frozen=True, slots=True)
class Reference:
    """A message an LLM cited, with what a references appendix needs to point at it."""

    label: str
    """The label as issued, e.g. ``"M14"``."""
    id: str
    """The cited message's id."""
    file_index: int = 0
    entry_index: int = 0
    timestamp: datetime | None = None
    message: Message | None = None
    """The message itself; None when the label was restored from a saved map."""

    @property
    def cite(self) -> str:
        """The citation as it appears in text, e.g. ``"[M14]"``."""
        return f"[{self.label}]"

    @classmethod
    def of(cls, label: str, message: Message) -> Reference:
        """The reference for ``message`` labelled ``label``."""
        return cls(
            label, message.id, message.file_index, message.entry_index, message.timestamp, message
        )


@dataclass(frozen=True, slots=True)
class Citations:
    """What a text cites: resolved references, in order and de-duplicated by message
    id, and the labels (or label ranges, ``"M21-M99"``) that were never issued."""

    refs: list[Reference]
    unknown: list[str]


class Numbering:
    """One numbering scope: a counter, the label -> message map and its reverse.

    With ``reuse_labels`` a message id that was already numbered keeps its first label
    instead of taking a new one, so a message shown twice (say in a turn and again in
    evidence) is cited one way. The default issues a fresh label per rendered message,
    exactly as the design seed specifies.
    """

    def __init__(
        self, preprocessor: MessagesPreprocessor | None = None, *, reuse_labels: bool = False
    ) -> None:
        self.preprocessor = preprocessor or DEFAULT_PREPROCESSOR
        self.reuse_labels = reuse_labels
        # Label "M{n}" is self._refs[n - 1]: the message itself when it was issued here
        # (its reference is built when asked for), a reference when restored from a
        # saved map. A reference and a label string per label were a tenth of a 200 MB
        # restore's memory at its end (bench/scale.py).
        self._refs: list[Message | Reference] = []
        self._number_of: dict[str, int] = {}  # message id -> first label's number

    def __len__(self) -> int:
        return len(self._refs)

    def __iter__(self) -> Iterator[Reference]:
        return (self._reference(n) for n in range(1, len(self._refs) + 1))

    async def messages_as_str(self, messages: list[Message]) -> str:
        """Render ``messages``, each prefixed by its globally unique ``[M#]`` label."""
        parts: list[str] = []
        for message in await self.preprocessor.apply(messages):
            text = message_as_str(message, self.preprocessor)
            if text is not None:
                parts.append(f"[{self._label(message)}] {text}")
        return "\n".join(parts)

    def _label(self, message: Message) -> str:
        if self.reuse_labels and (number := self._number_of.get(message.id)) is not None:
            return label_name(number)
        self._refs.append(message)
        self._number_of.setdefault(message.id, len(self._refs))
        return label_name(len(self._refs))

    def _reference(self, number: int) -> Reference:
        """The reference of label ``M{number}`` (issued: 1 <= number <= len(self))."""
        item = self._refs[number - 1]
        return item if isinstance(item, Reference) else Reference.of(label_name(number), item)

    def label_for(self, message_id: str) -> str | None:
        """The first label issued for ``message_id``, or None if it was never shown."""
        number = self._number_of.get(message_id)
        return label_name(number) if number is not None else None

    def reference(self, label: str) -> Reference | None:
        """The message behind ``label`` (``"M14"``), or None if it was never issued."""
        number = _number(label)
        return self._reference(number) if number is not None and number <= len(self._refs) else None

    def resolve(self, text: str) -> Citations:
        """Every citation in ``text``: the references and the unknown labels."""
        refs: list[Reference] = []
        unknown: list[str] = []
        seen_ids: set[str] = set()
        seen_unknown: set[str] = set()
        issued = len(self._refs)
        for low, high in _citations(text):
            for number in range(max(low, 1), min(high, issued) + 1):
                item = self._refs[number - 1]
                if item.id not in seen_ids:
                    seen_ids.add(item.id)
                    refs.append(self._reference(number))
            missing = _missing(low, high, issued)
            for label in missing:
                if label not in seen_unknown:
                    seen_unknown.add(label)
                    unknown.append(label)
        return Citations(refs, unknown)

    def extract_references(self, text: str) -> list[Reference]:
        """The messages ``text`` cites, in order of first citation, de-duplicated."""
        return self.resolve(text).refs

    def unknown(self, text: str) -> list[str]:
        """The labels ``text`` cites that this numbering never issued."""
        return self.resolve(text).unknown

    def to_dict(self) -> dict[str, Any]:
        """The labels issued so far, as JSON-ready data (for a resumable restore)."""
        return {"version": STATE_VERSION, "labels": self.entries(0)}

    def entries(self, start: int) -> list[dict[str, Any]]:
        """The saved form of the labels from ``M{start + 1}`` on (a restore's journal
        saves only the labels each turn added)."""
        return list(self.iter_entries(start))

    def iter_entries(self, start: int) -> Iterator[dict[str, Any]]:
        """``entries(start)`` one label at a time."""
        for ref in self._refs[start:]:
            yield {
                "id": ref.id,
                "file_index": ref.file_index,
                "entry_index": ref.entry_index,
                "timestamp": ref.timestamp.isoformat() if ref.timestamp else None,
            }

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        preprocessor: MessagesPreprocessor | None = None,
        *,
        reuse_labels: bool = False,
    ) -> Numbering:
        """A numbering that continues from a saved `to_dict` map.

        Raises:
            ValueError: the data is not a map this version wrote.
        """
        if data.get("version") != STATE_VERSION or not isinstance(data.get("labels"), list):
            raise ValueError(f"not a version {STATE_VERSION} numbering map")
        numbering = cls(preprocessor, reuse_labels=reuse_labels)
        for number, entry in enumerate(data["labels"], start=1):
            numbering._restore(f"M{number}", entry)
        return numbering

    def _restore(self, label: str, entry: Any) -> None:
        try:
            stamp = entry["timestamp"]
            ref = Reference(
                label,
                str(entry["id"]),
                int(entry["file_index"]),
                int(entry["entry_index"]),
                datetime.fromisoformat(stamp) if stamp else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad numbering entry for {label}: {entry!r}") from exc
        self._refs.append(ref)
        self._number_of.setdefault(ref.id, len(self._refs))


class Labeler:
    """The labels a `Numbering` issues to messages shown once each, in order, kept as a
    count only: a stream of any length is labelled in constant memory (a `Numbering`
    keeps a reference per label).

    A restore renders the active conversation turn by turn, in log order, before any
    branch; so labelling that conversation's messages in order here gives each the label
    the restoration cites. A message gets one when `message_as_str` shows it (the rule
    `Numbering.messages_as_str` applies); the pipeline's transform only quotes text, it
    never empties a message, so the default preprocessor decides alike.
    """

    __slots__ = ("issued", "preprocessor")

    def __init__(self) -> None:
        self.preprocessor = DEFAULT_PREPROCESSOR
        self.issued = 0

    def label(self, message: Message) -> str | None:
        """The next label for ``message``, or None when a restore shows it no label."""
        if not message_shown(message, self.preprocessor):
            return None
        self.issued += 1
        return label_name(self.issued)


def label_name(number: int) -> str:
    """The label numbered ``number``: ``"M14"``."""
    return f"M{number}"


def parse_label(text: str) -> str | None:
    """``text`` as a label (``"M14"``, also ``"[M14]"`` or ``"m14"``), or None if it is none."""
    label = text.strip().strip("[]").strip().upper()
    return label if _number(label) is not None else None


def message_numbering(
    preprocessor: MessagesPreprocessor | None = None,
    *,
    start_map: Mapping[str, Any] | None = None,
) -> tuple[MessagesAsStrFn, ExtractReferencesFn]:
    """Create a ``messages_as_str`` / ``extract_references`` pair with shared numbering.

    Args:
        preprocessor: options applied to every call (default: drop system messages).
        start_map: a saved `Numbering.to_dict` map to continue from.

    Returns:
        ``messages_as_str(messages) -> str`` labelling messages [M1], [M2], ... across
        all its calls, and ``extract_references(text) -> list[Reference]`` resolving
        citations of any label issued by any earlier call.
    """
    numbering = (
        Numbering(preprocessor)
        if start_map is None
        else Numbering.from_dict(start_map, preprocessor)
    )
    return numbering.messages_as_str, numbering.extract_references


async def messages_as_str(
    messages: list[Message],
    preprocessor: MessagesPreprocessor | None = None,
    include_ids: bool = False,
) -> tuple[str, ExtractReferencesFn]:
    """Render one message list on its own, numbered from M1 when ``include_ids``.

    Returns the text and an ``extract_references`` for it (which finds nothing when
    ``include_ids`` is False, since the text then carries no labels).
    """
    numbering = Numbering(preprocessor)
    if include_ids:
        return await numbering.messages_as_str(messages), numbering.extract_references
    options = numbering.preprocessor
    parts = [text for m in await options.apply(messages) if (text := message_as_str(m, options))]
    return "\n".join(parts), _no_references


def _no_references(text: str) -> list[Reference]:
    return []


def citation_spans(text: str) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` offsets of every bracket group in ``text`` that cites a label."""
    for group in _BRACKET.finditer(text):
        if _TOKEN.search(group.group(1)):
            yield group.start(), group.end()


def uncite(text: str) -> str:
    """``text`` with every bracket group this parser would read as a citation turned into
    parentheses: ``[M2]`` becomes ``(M2)``. For log text copied into a summary, where a
    label the log happens to hold must not point the reader at a message.
    """
    if "[" not in text:
        return text
    return _BRACKET.sub(
        lambda m: f"({m.group(1)})" if _TOKEN.search(m.group(1)) else m.group(0), text
    )


def cited_labels(text: str, limit: int = 1000) -> list[str]:
    """The labels ``text`` cites, ranges expanded (each range to at most ``limit`` labels)."""
    out: list[str] = []
    for low, high in _citations(text):
        out.extend(f"M{n}" for n in range(low, min(high, low + limit - 1) + 1))
    return out


def _citations(text: str) -> Iterator[tuple[int, int]]:
    """Every cited number range ``(low, high)`` in bracket groups of ``text``."""
    for group in _BRACKET.finditer(text):
        for token in _TOKEN.finditer(group.group(1)):
            first = int(token.group(1))
            last = int(token.group(2)) if token.group(2) else first
            yield min(first, last), max(first, last)


def _missing(low: int, high: int, issued: int) -> Sequence[str]:
    """The parts of ``low..high`` outside the issued labels ``1..issued``, as text."""
    if low == high:
        return [] if 1 <= low <= issued else [f"M{low}"]
    missing: list[str] = []
    if low < 1:
        missing.append("M0")
    start = max(low, issued + 1, 1)
    if start <= high:
        missing.append(f"M{start}" if start == high else f"M{start}-M{high}")
    return missing


def _number(label: str) -> int | None:
    if re.fullmatch(r"M[0-9]{1,18}", label):
        number = int(label[1:])
        return number if number >= 1 else None
    return None
