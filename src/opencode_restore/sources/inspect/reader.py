"""inspect_ai eval logs: ``.json`` documents and ``.eval`` zip archives.

An eval log holds one run of a task: ``eval`` (the spec: ``eval_id``, ``task``,
``model``, ``created``), then ``samples[]``; each sample has ``id``, ``epoch``,
``messages`` (the final conversation), ``events`` (the whole run) and
``attachments`` (``{hash: text}``: any string in the sample may be an
``attachment://<hash>`` pointer into it). A ``.eval`` file is a zip with
``header.json`` (or ``_journal/start.json`` while running) and one
``samples/<id>_epoch_<n>.json`` member per sample.

One sample is one session, ``"<eval id>:<sample id>:<epoch>"``: ``read`` gives the
sample named by ``session`` (that id, ``<sample id>:<epoch>``, the sample id, or a
unique prefix), or the only one; a log of several samples read without a name is an
error listing them. ``iter_samples`` gives every one (batch). The timeline is built
from the sample's events (agents, branches, utility calls); the final conversation
is appended to the root span as message events, so ``Session.messages()`` is
``sample.messages``, followed by how the sample ended: a ``system`` message for an
error it ended in and one per score (``outcome``: ``meta["sample_error"]``,
``meta["score"]``).

Big logs: a ``.json`` log is streamed one sample at a time with ijson when it is
installed (only the sample being converted is in memory); without ijson the document
is loaded whole. A truncated or corrupt log yields the samples before the damage and
a warning.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...errors import SourceError
from ...fields import parse_timestamp
from ...model import Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import (
    MAX_JSON_DEPTH,
    Found,
    SessionChoice,
    choose_session,
    load_json,
    text_of,
    too_deep,
)
from ..discover import Discovery
from ..jsonstream import stream_items
from .builder import build_timeline
from .events import chat_messages_to_messages, output_message
from .outcome import outcome_messages

try:  # optional: without it a .json log is loaded whole
    import ijson  # type: ignore[import-untyped, unused-ignore]
except ImportError:  # pragma: no cover - exercised only where ijson is absent
    ijson = None

_ATTACHMENT = "attachment://"
_ZIP_MAGIC = b"PK\x03\x04"
_EVAL_KEY = re.compile(rb'"eval"\s*:\s*\{')
_LOG_KEYS = re.compile(rb'"(samples|version|status)"\s*:')
_HEADERS = ("header.json", "_journal/start.json")
MAX_DEPTH = MAX_JSON_DEPTH
#: Largest ``.eval`` member read, and the largest expansion of a big one over its
#: compressed size (a 1 MB archive unpacking to 1 GB is a zip bomb, not a log).
MAX_MEMBER_BYTES = 128 << 20
MAX_MEMBER_RATIO = 200
_RATIO_FLOOR = 16 << 20

#: (eval spec, sample, where the sample came from for warnings)
_Sample = tuple[dict[str, Any], dict[str, Any], str]


def _resolve(value: Any, attachments: dict[str, Any], missing: set[str]) -> Any:
    """``value`` with every ``attachment://<hash>`` string replaced by its text."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            key = value[len(_ATTACHMENT) :]
            found = attachments.get(key)
            if isinstance(found, str):
                return found
            missing.add(key)
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments, missing) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments, missing) for k, v in value.items()}
    return value


def _json_samples(path: Path, sink: WarningSink) -> Iterator[_Sample]:
    samples: Iterator[Any]
    if ijson is None:
        doc = load_json(path, sink)
        doc = doc if isinstance(doc, dict) else {}
        spec = doc.get("eval")
        samples = iter(doc["samples"] if isinstance(doc.get("samples"), list) else [])
    else:
        quiet = WarningSink()  # the samples pass reports any damage once
        spec = next(stream_items(path, "eval", quiet), None)
        samples = stream_items(path, "samples.item", sink, "later samples skipped")
    spec = spec if isinstance(spec, dict) else {}
    for n, sample in enumerate(samples, 1):
        yield spec, sample, f"{path}#sample{n}"


def _member_refusal(info: zipfile.ZipInfo) -> str | None:
    """Why an archive member is not unpacked (too big, or a zip bomb), or None."""
    if info.file_size > MAX_MEMBER_BYTES:
        return f"{info.file_size} bytes unpacked, over the {MAX_MEMBER_BYTES}-byte limit"
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > _RATIO_FLOOR and ratio > MAX_MEMBER_RATIO:
        return f"expands {ratio:.0f}x (a zip bomb?), over the {MAX_MEMBER_RATIO}x limit"
    return None


def _zip_json(zf: zipfile.ZipFile, name: str, where: str, sink: WarningSink) -> Any:
    if (why := _member_refusal(zf.getinfo(name))) is not None:
        sink.warn(where, 1, f"archive member {why}; skipped")
        return None
    try:
        data = zf.read(name)
        value = orjson.loads(data)
        if too_deep(data, value, MAX_DEPTH):
            sink.warn(where, 1, f"JSON nested more than {MAX_DEPTH} deep; skipped")
            return None
        return value
    except (orjson.JSONDecodeError, zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        sink.warn(where, 1, f"unreadable archive member ({exc}); skipped")
        return None


def _eval_samples(path: Path, sink: WarningSink) -> Iterator[_Sample]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        sink.warn(path, 1, f"not a readable .eval archive ({exc})")
        return
    with zf:
        names = zf.namelist()
        spec: Any = {}
        for header in (h for h in _HEADERS if h in names):
            doc = _zip_json(zf, header, f"{path}!{header}", sink)
            if isinstance(doc, dict) and isinstance(doc.get("eval"), dict):
                spec = doc["eval"]
                break
        for name in names:
            if name.startswith("samples/") and name.endswith(".json"):
                where = f"{path}!{name}"
                sample = _zip_json(zf, name, where, sink)
                if sample is not None:
                    yield spec, sample, where


def _samples(path: Path, sink: WarningSink) -> Iterator[_Sample]:
    with path.open("rb") as fh:
        zipped = fh.read(4) == _ZIP_MAGIC
    return _eval_samples(path, sink) if zipped else _json_samples(path, sink)


def _message_times(events: list[Any]) -> dict[str, datetime]:
    """When each message id was first seen by (or produced by) a model call."""
    times: dict[str, datetime] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("event") != "model":
            continue
        sent = parse_timestamp(ev.get("timestamp"))
        done = parse_timestamp(ev.get("completed")) or sent
        inputs = ev.get("input")
        pairs = [(m, sent) for m in inputs] if isinstance(inputs, list) else []
        pairs.append((output_message(ev), done))
        for msg, when in pairs:
            mid = msg.get("id") if isinstance(msg, dict) else None
            if isinstance(mid, str) and when is not None:
                times.setdefault(mid, when)
    return times


def _messages(sample: dict[str, Any], events: list[Any]) -> list[Message]:
    raw = sample.get("messages")
    messages = chat_messages_to_messages(raw if isinstance(raw, list) else [])
    times = _message_times(events)
    for m in messages:
        m.timestamp = m.timestamp or times.get(m.group or "")
    return messages


def _text(value: Any) -> str | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    return None


def _session(
    path: Path, spec: dict[str, Any], sample: dict[str, Any], sink: WarningSink
) -> Session:
    attachments = sample.get("attachments")
    attachments = attachments if isinstance(attachments, dict) else {}
    missing: set[str] = set()
    raw_events = sample.get("events")
    events = _resolve(raw_events if isinstance(raw_events, list) else [], attachments, missing)
    resolved = {
        k: _resolve(sample.get(k), attachments, missing)
        for k in ("messages", "scores", "error", "completed_at")
    }
    if missing:
        sink.warn(path, 1, f"{len(missing)} attachment reference(s) not in the sample; kept as is")
    eval_id, sample_id, epoch = _ids(spec, sample, path)
    messages = _messages(resolved, events)
    raw_messages = resolved["messages"]
    after = len(raw_messages) + 1 if isinstance(raw_messages, list) else 1
    messages += outcome_messages(resolved, events, sample_id, after)
    timeline = build_timeline(events) if events else Timeline(TimelineSpan("main", "main", "agent"))
    timeline.root.content.extend(
        TimelineEvent(m.id, "message", m, timestamp=m.timestamp) for m in messages
    )
    task = _text(spec.get("task"))
    first = next((ev for ev in events if isinstance(ev, dict) and ev.get("timestamp")), {})
    meta = {
        "eval_id": eval_id,
        "task": task,
        "sample_id": sample_id,
        "epoch": epoch,
        "sample_uuid": _text(sample.get("uuid")),
    }
    return Session(
        id=f"{eval_id}:{sample_id}:{epoch}",
        agent=READER.name,
        files=[str(path)],
        timeline=timeline,
        title=f"{task} sample {sample_id}" if task else None,
        model=_text(spec.get("model")),
        started_at=parse_timestamp(first.get("timestamp")) or parse_timestamp(spec.get("created")),
        warnings=list(sink.warnings),
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _ids(spec: dict[str, Any], sample: dict[str, Any], path: Path) -> tuple[str, str, str]:
    """``(eval id, sample id, epoch)`` of a raw sample."""
    eval_id = _text(spec.get("eval_id")) or _text(spec.get("run_id")) or path.stem
    return eval_id, _text(sample.get("id")) or "?", _text(sample.get("epoch")) or "1"


def _choice(path: Path, spec: dict[str, Any], sample: dict[str, Any]) -> SessionChoice:
    """How a raw sample is named and shown in a list of candidates (nothing converted)."""
    eval_id, sample_id, epoch = _ids(spec, sample, path)
    raw_input = sample.get("input")
    if isinstance(raw_input, list):
        users = (m for m in raw_input if isinstance(m, dict) and m.get("role") == "user")
        raw_input = next((text_of(m.get("content")) for m in users), None)
    events = sample.get("events")
    stamps = [e.get("timestamp") for e in events if isinstance(e, dict)] if isinstance(
        events, list
    ) else []  # fmt: skip
    last = next((t for t in map(parse_timestamp, reversed(stamps)) if t is not None), None)
    return SessionChoice(
        f"{eval_id}:{sample_id}:{epoch}",
        raw_input if isinstance(raw_input, str) else None,
        last or parse_timestamp(sample.get("completed_at")),
        (sample_id, f"{sample_id}:{epoch}"),
    )


def _chosen(files: Sequence[Path], sink: WarningSink, wanted: str | None) -> Session | None:
    """The sample ``wanted`` names, or the only one; ``None`` when the log holds none.

    One pass names every sample and keeps at most one raw sample in memory (the first,
    or the first exact match); a sample found by a prefix is fetched by a second pass.
    """
    if not files:
        return None
    if len(files) > 1:
        sink.warn(files[1], 1, "an eval log is one file; extra files ignored")
    path = Path(files[0])
    choices: list[SessionChoice] = []
    kept: tuple[dict[str, Any], dict[str, Any]] | None = None
    for spec, sample, where in _samples(path, sink):
        if not isinstance(sample, dict):
            sink.warn(where, 1, f"sample is a JSON {type(sample).__name__}, not an object; skipped")
            continue
        choice = _choice(path, spec, sample)
        choices.append(choice)
        named = wanted is None or wanted == choice.id or wanted in choice.aliases
        if kept is None and named:
            kept = (spec, sample)
    if not choices and wanted is None:
        return None
    chosen = choose_session(path, choices, wanted)
    if kept is None or _choice(path, *kept).id != chosen.id:
        quiet = WarningSink()  # the first pass reported the log's damage
        again = ((sp, sa) for sp, sa, _ in _samples(path, quiet) if isinstance(sa, dict))
        kept = next(((sp, sa) for sp, sa in again if _choice(path, sp, sa).id == chosen.id), None)
        if kept is None:
            raise SourceError(str(path), f"sample {chosen.id!r} vanished while it was read")
    try:
        return _session(path, kept[0], kept[1], sink)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise SourceError(str(path), f"sample {chosen.id!r} could not be read ({exc!r})") from exc


def iter_samples(path: Path, sink: WarningSink) -> Iterator[Session]:
    """One ``Session`` per sample of an eval log, in file order (for batch use).

    A sample that is not an object, or that cannot be converted, is reported and
    skipped; the others still come out.
    """
    for spec, sample, where in _samples(path, sink):
        if not isinstance(sample, dict):
            sink.warn(where, 1, f"sample is a JSON {type(sample).__name__}, not an object; skipped")
            continue
        try:
            yield _session(path, spec, sample, sink)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            sink.warn(where, 1, f"sample could not be converted ({exc!r}); skipped")


class InspectReader(Discovery):
    """Reads inspect_ai eval logs (``.json`` and ``.eval``), one sample per session."""

    name = "inspect"
    description = "inspect_ai eval logs (.json or .eval archive), one session per sample"
    #: Sample ids repeat across eval logs.
    ids_span_inputs = False

    def sniff(self, path: Path, head: bytes) -> float:
        """Sure for a JSON object with an ``eval`` spec and log keys, or a zip with a header."""
        if head.startswith(_ZIP_MAGIC):
            try:
                with zipfile.ZipFile(path) as zf:
                    names = set(zf.namelist())
            except (zipfile.BadZipFile, OSError):
                return 0.0
            return 0.95 if names & set(_HEADERS) else 0.0
        if not head.lstrip().startswith(b"{"):
            return 0.0
        return 0.9 if _EVAL_KEY.search(head) and _LOG_KEYS.search(head) else 0.0

    def sessions(self, files: Sequence[Path], sink: WarningSink) -> list[SessionChoice]:
        """Every sample of the log, in file order."""
        if not files:
            return []
        path = Path(files[0])
        return [_choice(path, sp, sa) for sp, sa, _ in _samples(path, sink) if isinstance(sa, dict)]

    def iter_messages(
        self, files: Sequence[Path], sink: WarningSink, session: str | None = None
    ) -> Iterator[Message]:
        """The chosen sample's final conversation (``sample.messages``), in order, then
        its error and scores as system messages (``outcome``).

        The sample is read before this returns, so a wrong or missing ``--session``
        fails before anything is printed.
        """
        chosen = _chosen(files, sink, session)
        return iter(chosen.messages() if chosen is not None else [])

    def read(self, files: Sequence[Path], sink: WarningSink, session: str | None = None) -> Session:
        """The chosen sample (an empty session, with warnings, if the log holds none)."""
        chosen = _chosen(files, sink, session)
        if chosen is not None:
            return chosen
        path = Path(files[0]) if files else Path("-")
        sink.warn(path, 1, "no readable sample in the eval log")
        return Session(
            id=path.stem,
            agent=self.name,
            files=[str(f) for f in files],
            timeline=Timeline(TimelineSpan("main", "main", "agent")),
            warnings=list(sink.warnings),
        )

    def list_sessions(self, path: Path, sink: WarningSink) -> list[Found]:
        """One per sample that converts, in file order (each is read once to name it)."""
        return [
            Found(self.name, s.id, path, s.cwd, s.title, s.started_at)
            for s in iter_samples(path, sink)
        ]


READER = InspectReader()
