"""Provider settings, read from the config (keys never live here)."""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from ..config import Config, Effort, ModelRule

ToolMode = Literal["native", "text", "auto"]
StructuredMode = Literal["auto", "json_schema_strict", "json_schema", "json_object", "text"]


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine or a private network (localhost,
    127.0.0.0/8, ::1, 10/8, 172.16/12, 192.168/16, fc00::/7, link-local): a model there
    usually runs on hardware the user owns, one request at a time."""
    if not url:
        return False
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


class ModelPrice(BaseModel):
    """Prices in dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class ProviderSettings(BaseModel):
    """How to reach and call a provider.

    `base_url` points the OpenAI provider at any compatible server (Ollama, vLLM,
    llama.cpp). `retry_multiplier`/`retry_max_wait` shape the jittered exponential
    backoff; a server's `retry-after` is honoured up to `retry_after_cap` seconds.
    `prices` maps a model name (or `provider:model`, or a name prefix) to its prices.
    `models` overrides the family table of `model_rules` for names it matches;
    `reasoning_effort` goes to reasoning models only. An answer cut off at its limit
    is asked again with a doubled limit, never above `max_tokens_ceiling`.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    timeout: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)
    retry_multiplier: float = Field(default=0.5, ge=0)
    retry_max_wait: float = Field(default=8.0, ge=0)
    retry_after_cap: float = Field(default=60.0, ge=0)
    max_tokens: int = Field(default=4096, ge=1)
    max_tokens_ceiling: int = Field(default=32768, ge=1)
    reasoning_effort: Effort | None = None
    models: dict[str, ModelRule] = Field(default_factory=dict)
    temperature: float | None = None
    tool_mode: ToolMode = "auto"
    structured_output: StructuredMode = "auto"
    #: Tokens; None: ask the server where it says (see `llm.window`).
    context_window: int | None = Field(default=None, ge=256)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    #: Where what a compatible server takes is kept (`server_profile`); None: the data
    #: directory the environment and the user's config file name.
    data_dir: str | None = None

    @property
    def local(self) -> bool:
        """Whether `base_url` points at a local or private-network server (`is_local_url`)."""
        return is_local_url(self.base_url)

    @classmethod
    def from_config(cls, config: Config) -> ProviderSettings:
        """The provider settings the configuration describes (``[llm]`` and ``[prices]``)."""
        llm = config.llm
        return cls(
            base_url=llm.base_url,
            timeout=llm.timeout,
            max_attempts=llm.max_attempts,
            retry_after_cap=llm.retry_max_wait,
            max_tokens=llm.max_tokens,
            max_tokens_ceiling=llm.max_tokens_ceiling,
            temperature=llm.temperature,
            reasoning_effort=llm.reasoning_effort,
            models=llm.models,
            tool_mode=llm.tool_mode,
            structured_output=llm.structured_output,
            context_window=llm.context_window,
            prices={k: ModelPrice(**v.model_dump()) for k, v in config.prices.items()},
            data_dir=str(config.data_dir),
        )
