"""What an OpenAI-compatible server was found to take, remembered per base URL and model.

A run against a local server (llama.cpp, Ollama, vLLM, LM Studio) learns from the
refusals of its first requests which structured-output request the server takes
(`json_schema` strict down to plain text) and whether it does native tool calls. On a
CPU-bound model every refused or ignored request costs seconds to minutes, so what was
learned is kept in ``server-profiles.json`` in the data directory and the next run starts
there. `check` learns afresh and overwrites it; api.openai.com (no base URL) is never
recorded. The file is a cache: when it cannot be read or written, runs learn again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

from filelock import FileLock, Timeout

from opencode_restore.atomic import atomic_write

PROFILE_NAME = "server-profiles.json"
#: How long a writer waits for another process's write of the file.
LOCK_TIMEOUT = 5.0

#: The structured-output requests, most exact first (the ladder a server is walked down).
StructuredRung = Literal["json_schema_strict", "json_schema", "json_object", "text"]
RUNGS: tuple[StructuredRung, ...] = get_args(StructuredRung)
#: How tool calls go: native tool calls, or the text protocol in the prompt.
ToolsLearned = Literal["native", "text"]
TOOL_MODES: tuple[ToolsLearned, ...] = get_args(ToolsLearned)


@dataclass(frozen=True, slots=True)
class ServerProfile:
    """What one server and model took; None where nothing was learned yet."""

    structured_output: StructuredRung | None = None
    tools: ToolsLearned | None = None


class ServerProfiles:
    """The profiles file; every write is a read-modify-write under a file lock, since
    several processes (a batch, the API server) may learn about the same server."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def default(cls, directory: str | None = None) -> ServerProfiles:
        """The file in ``directory`` (the run's ``[paths] data_dir``), else in the data
        directory the environment and the user's config file name."""
        from pathlib import Path

        from opencode_restore.store.paths import data_dir

        return cls((Path(directory) if directory else data_dir()) / PROFILE_NAME)

    def get(self, base_url: str, model: str) -> ServerProfile:
        """What was learned about `model` at `base_url` (nothing, when unknown)."""
        entry = self._read().get(_url(base_url), {}).get(model, {})
        rung = entry.get("structured_output")
        tools = entry.get("tools")
        return ServerProfile(
            structured_output=rung if rung in RUNGS else None,
            tools=tools if tools in TOOL_MODES else None,
        )

    def remember(self, base_url: str, model: str, profile: ServerProfile) -> None:
        """Record the learned fields of `profile` (None fields keep what the file says)."""
        learned = {k: v for k, v in asdict(profile).items() if v is not None}
        try:
            with FileLock(self.path.with_name(self.path.name + ".lock"), timeout=LOCK_TIMEOUT):
                servers = self._read()
                servers.setdefault(_url(base_url), {}).setdefault(model, {}).update(learned)
                data = json.dumps({"servers": servers}, indent=2, sort_keys=True) + "\n"
                atomic_write(self.path, data.encode("utf-8"))
        except (OSError, Timeout):
            # A cache: an unwritable data directory only means the next run learns again.
            return

    def _read(self) -> dict[str, dict[str, dict[str, str]]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        servers = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            return {}
        return {
            url: {m: dict(e) for m, e in models.items() if isinstance(e, dict)}
            for url, models in servers.items()
            if isinstance(models, dict)
        }


def _url(base_url: str) -> str:
    """One spelling per server: ``http://h:1/v1/`` and ``http://h:1/v1`` are the same."""
    return base_url.rstrip("/")
