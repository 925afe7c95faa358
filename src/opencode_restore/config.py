"""Configuration: packaged ``config.toml`` < user file < ``OPENCODE_RESTORE_*`` env < flags.

API keys are never read from files: only from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .dirs import default_data_dir, user_config_path
from .errors import ConfigError
from .resources import data_path

ENV_PREFIX = "OPENCODE_RESTORE_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
LimitParam = Literal["max_tokens", "max_completion_tokens"]


class ModelRule(_Section):
    """One ``[llm.models."PATTERN"]`` row (see `llm.model_rules`); unset fields keep what
    the family table says.

    `reasoning = true` means: no sampling parameters, `max_completion_tokens`, room for
    reasoning tokens and `reasoning_effort` when one is configured.
    """

    reasoning: bool | None = None
    #: Whether `temperature` (and `top_p`) may be sent at all.
    sampling: bool | None = None
    limit_param: LimitParam | None = None
    reasoning_effort: Effort | None = None
    #: Tokens added to the answer's limit for hidden reasoning.
    reasoning_tokens: int | None = Field(default=None, ge=0)


class LLMConfig(_Section):
    model: str = "offline"
    base_url: str | None = None
    #: Seconds one call may take to answer (the read timeout). A small model on a CPU can
    #: write under a token a second: raise it for a local server, where a read timeout
    #: is not retried (the server is still computing; see `llm.retry`).
    timeout: float = Field(default=120.0, gt=0)
    max_attempts: int = 4
    retry_max_wait: float = 60.0
    max_tokens: int = 2048
    max_tokens_ceiling: int = Field(default=32768, ge=1)
    temperature: float | None = 0.0
    reasoning_effort: Effort | None = None
    models: dict[str, ModelRule] = Field(default_factory=dict)
    tool_mode: Literal["native", "text", "auto"] = "auto"
    #: How replies are asked to be JSON: "auto" walks down the ladder json_schema (strict)
    #: -> json_schema -> json_object -> text as the server refuses each (see `llm.structured`).
    structured_output: Literal[
        "auto", "json_schema_strict", "json_schema", "json_object", "text"
    ] = "auto"
    context_budget_tokens: int = 100_000
    #: The model's context window in tokens; None: ask the server (llama.cpp, ollama, vLLM
    #: say it), else `context_budget_tokens` bounds the requests alone.
    context_window: int | None = Field(default=None, ge=256)


class RestoreConfig(_Section):
    max_turns: int | None = None
    #: A session with more turns is refused unless ``--max-turns`` says how many to take:
    #: a log of 140,000 tiny turns (a generated ``.eval``) would run for an hour.
    max_session_turns: int = Field(default=2000, ge=1)
    max_searches: int = 8
    skip_evidence_search: bool = False
    redact: bool = True
    max_tool_output_chars: int = 4000
    max_turn_chars: int = 60_000
    workspace: str | None = None
    resume: bool = True
    cache_ttl_seconds: int = 300
    cache_prune_buffer_seconds: int = 30


class PathsConfig(_Section):
    #: None: the platform's user data directory (`dirs.default_data_dir`).
    data_dir: str | None = None


class RateLimitRule(_Section):
    """Limits for one provider (``openai``) or model (``openai:gpt-4o``); None = unlimited."""

    requests_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)


class RateLimitConfig(RateLimitRule):
    """The shared client-side rate limit; ``providers`` entries override the defaults."""

    pause_seconds: float = Field(default=2.0, ge=0)
    providers: dict[str, RateLimitRule] = Field(default_factory=dict)


class ApiConfig(_Section):
    """``serve``: jobs and the names the API answers to (see ``api/security.py``)."""

    max_jobs: int = Field(default=2, ge=1)
    max_queued_jobs: int = Field(default=32, ge=1)
    allowed_hosts: list[str] = Field(default_factory=list)


SessionSource = Literal["startup", "resume", "clear", "compact"]
#: The agents whose session start the hook can answer (``hooks.memory.MEMORY_AGENTS``).
MemoryAgent = Literal["claude-code", "codex", "gemini"]


def _default_restore_on() -> list[SessionSource]:
    return ["compact", "clear", "resume"]


class HooksConfig(_Section):
    """What ``opencode-restore hook`` answers a SessionStart with."""

    #: SessionStart sources that get the restoration (Claude Code: startup, resume,
    #: clear, compact; Gemini CLI: startup, resume, clear).
    restore_on: list[SessionSource] = Field(default_factory=_default_restore_on)
    #: Seconds the agent waits at most; past it the hook prints nothing and the restore
    #: goes on in the background, so the next start finds its journal warm.
    budget_seconds: float = Field(default=8.0, gt=0)
    #: Agents whose fresh sessions start with a digest of the project's recent sessions
    #: (``hooks.memory``; ``install AGENT --memory`` turns it on for one install instead).
    memory_at_start: list[MemoryAgent] = Field(default_factory=list)
    #: The digest's size at most, in tokens (estimated as characters / 3.5).
    memory_tokens: int = Field(default=1500, ge=200)

    @field_validator("restore_on", "memory_at_start", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        """A list from an environment variable: JSON, or names between commas (as the hook
        reads them: ``hooks.restore.hook_settings``)."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [x.strip() for x in text.split(",") if x.strip()]


class PromptsConfig(_Section):
    dir: str | None = None


class Price(_Section):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class Config(_Section):
    llm: LLMConfig = Field(default_factory=LLMConfig)
    restore: RestoreConfig = Field(default_factory=RestoreConfig)
    paths: PathsConfig = Field(default_factory=PathsConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    ratelimit: RateLimitConfig = Field(default_factory=RateLimitConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
    prices: dict[str, Price] = Field(default_factory=dict)
    terminal: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return Path(os.path.expanduser(self.paths.data_dir or default_data_dir()))


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: config file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from exc


_SHORTCUTS = {
    "MODEL": ("llm", "model"),
    "BASE_URL": ("llm", "base_url"),
    "DATA_DIR": ("paths", "data_dir"),
    "PROMPTS_DIR": ("prompts", "dir"),
}


def _env_overrides(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``OPENCODE_RESTORE_MODEL`` and friends, or ``OPENCODE_RESTORE_<SECTION>_<KEY>``;
    with the variable that set each ``section.key``."""
    out: dict[str, Any] = {}
    names: dict[str, str] = {}
    sections = {"LLM", "RESTORE", "PATHS", "PROMPTS", "HOOKS"}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :]
        if rest in _SHORTCUTS:
            section, key = _SHORTCUTS[rest]
        else:
            section, _, key = rest.partition("_")
            if section not in sections or not key:
                continue
            section, key = section.lower(), key.lower()
        out.setdefault(section, {})[key] = value
        names[f"{section}.{key}"] = name
    return out, names


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flags left unset (None) must not override lower layers."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            out[key] = _without_none(value)
        elif value is not None:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    """One source of settings, in precedence order (a later layer wins)."""

    #: ``default``, ``user file``, ``--config file``, ``env`` or ``flag``.
    source: str
    values: dict[str, Any]
    #: The file read, or per dotted key the variable that set it.
    where: str = ""
    names: dict[str, str] = field(default_factory=dict)


def config_layers(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[ConfigLayer]:
    """The layers `load_config` merges: packaged defaults, the user's file (or ``path``),
    ``OPENCODE_RESTORE_*`` variables, then the command line's flags."""
    packaged = data_path("config.toml")
    layers = [ConfigLayer("default", _read_toml(packaged))]
    user = path if path is not None else Path(user_config_path())
    if path is not None or user.exists():
        source = "--config file" if path is not None else "user file"
        layers.append(ConfigLayer(source, _read_toml(user), str(user)))
    values, names = _env_overrides(os.environ if env is None else env)
    layers.append(ConfigLayer("env", values, names=names))
    if overrides:
        layers.append(ConfigLayer("flag", _without_none(overrides)))
    return layers


def load_config(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the effective configuration (see the module docstring for precedence)."""
    return _validate(config_layers(path, env=env, overrides=overrides))


def _validate(layers: list[ConfigLayer]) -> Config:
    data: dict[str, Any] = {}
    for layer in layers:
        data = _merge(data, layer.values)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"configuration {where}: {err['msg']}") from exc


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective setting and the layer it came from."""

    key: str
    value: Any
    source: str


def _leaves(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Dotted keys and values; a table that is empty is a leaf of its own."""
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def _source(key: str, layers: list[ConfigLayer]) -> str:
    """Where ``key`` was set last: the layer naming it or a table above it."""
    parts = key.split(".")
    for layer in reversed(layers):
        node: Any = layer.values
        for depth, part in enumerate(parts):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
            if depth == len(parts) - 1 or not isinstance(node, Mapping):
                if layer.names:
                    return f"{layer.source} {layer.names.get('.'.join(parts[:2]), '')}".strip()
                return f"{layer.source} {layer.where}".strip()
    return "default"


def effective_settings(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[Setting]:
    """Every setting of the effective configuration with the layer it came from."""
    layers = config_layers(path, env=env, overrides=overrides)
    config = _validate(layers)
    values = config.model_dump(mode="json")
    # Unset, it is the platform's directory: show the one in use.
    values["paths"]["data_dir"] = str(config.data_dir)
    return [Setting(key, value, _source(key, layers)) for key, value in _leaves(values, "")]
