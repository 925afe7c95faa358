"""A facts file: ground-truth facts a restoration of one or more recorded sessions must keep.

The format is the one of ``shared/samples/recorded-devset/facts.json``: ``recordings`` (by
name: the log's path relative to the file, whether the last request is unfinished) and
``facts`` (kind, turn, the strings that keep a fact, the evidence ids and lines per recording).
The real devset's ``facts-<session>.json`` files add ``must_not``: claims a summary must not
make (see :mod:`.fields`, which scores them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UsageError


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Evidence(_In):
    """Where a fact shows in one recording: message ids and (JSONL logs) 1-based lines."""

    message_ids: list[str] = Field(default_factory=list)
    lines: list[int] = Field(default_factory=list)


class Fact(_In):
    """One fact a summary should keep."""

    id: str
    kind: str
    turn: int
    fact: str = ""
    strings: list[str] = Field(min_length=1)
    superseded_strings: list[str] = Field(default_factory=list)
    evidence: dict[str, Evidence] = Field(default_factory=dict)


class MustNot(_In):
    """A claim the summary must not make: a sentence with one of ``strings``, one of
    ``with_strings`` (when given) and none of ``except_strings``; only in ``fields`` if given."""

    id: str
    text: str = ""
    strings: list[str] = Field(min_length=1)
    with_strings: list[str] = Field(default_factory=list)
    except_strings: list[str] = Field(default_factory=list)
    fields: list[str] = Field(default_factory=list)
    added_after_review: bool = False


class Recording(_In):
    """One recorded session of the facts file."""

    log: str
    also: list[str] = Field(default_factory=list)
    turns: int | None = None
    last_request_unfinished: bool = False


class FactsFile(_In):
    """The whole facts file; ``base`` is the folder its log paths are relative to."""

    recordings: dict[str, Recording]
    facts: list[Fact]
    #: ``None`` for a facts file without the key (the recorded devset's): it is scored on the
    #: summary markdown; with it (the real devset's files), on the summary's fields.
    must_not: list[MustNot] | None = None
    base: Path = Path(".")
    path: Path | None = None

    def log_path(self, name: str) -> Path:
        """The native log of recording ``name``."""
        return self.base / self.recordings[name].log


def load_facts(path: Path) -> FactsFile:
    """Read and validate a facts file.

    Raises:
        UsageError: the file is missing, not JSON, or not in the facts-file shape.
    """
    try:
        data: Any = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the facts file ({exc.strerror})") from exc
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a JSON facts file ({exc})") from exc
    try:
        facts = FactsFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"{path}: not a facts file: {where}: {first['msg']}") from exc
    facts.base = path.parent
    facts.path = path
    return facts
