"""What a batch or nightly run takes from the command line and the config: the settings,
the rate-limited provider and the journal store (one module, so the local and the Dask
runners share them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..llm.ratelimit import rate_limited
from ..llm.registry import get_provider
from ..llm.settings import ProviderSettings
from ..pipeline.journal.batch_store import BatchJournals
from ..pipeline.journal.store import journal_dir
from ..pipeline.run import RestoreOptions


@dataclass
class RunSettings:
    """What both commands take from the command line."""

    model: str | None = None
    base_url: str | None = None
    config_path: Path | None = None
    concurrency: int = 4
    max_turns: int | None = None
    skip_evidence_search: bool | None = None
    max_searches: int | None = None
    quiet: bool = False
    #: Ignore saved journals (they are still written): ``batch --force``.
    fresh: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)

    def config(self) -> Config:
        """The effective configuration with these flags on top."""
        return load_config(
            self.config_path,
            overrides={
                "llm": {"model": self.model, "base_url": self.base_url},
                "restore": {
                    "skip_evidence_search": self.skip_evidence_search,
                    "max_searches": self.max_searches,
                },
                **self.overrides,
            },
        )

    def options(self) -> RestoreOptions:
        """Per-session restore options."""
        return RestoreOptions(
            self.max_turns, self.skip_evidence_search, self.max_searches, fresh=self.fresh
        )


def journal_store(config: Config) -> BatchJournals | None:
    """Where restores keep their journals, as ``restore`` does; None without ``resume``."""
    return BatchJournals(journal_dir(config.data_dir)) if config.restore.resume else None


def provider_for(config: Config) -> Any:
    """The configured provider behind the shared client-side rate limit."""
    return rate_limited(
        get_provider(config.llm.model, ProviderSettings.from_config(config)), config.ratelimit
    )
