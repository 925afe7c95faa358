"""Background restores started through the API; their state lives in the store's ``runs``."""

from __future__ import annotations

import asyncio

from anyio import to_thread

from ..cli.restore_cmd import provider_settings
from ..config import Config
from ..errors import SourceError
from ..llm.registry import close_provider, get_provider
from ..model import Session
from ..pipeline.restore import RestoreOptions, restore_session
from ..report.summary import summary_markdown
from ..sources import open_session
from ..sources.base import WarningSink
from ..store.fetch import existing_files
from ..store.store import SessionRow, Store


def load_session(row: SessionRow) -> Session:
    """Read a stored session from the files of its chain that still exist."""
    files, _, _ = existing_files(row)
    if not files:
        raise SourceError(row.id, "no transcript file of this session exists")
    sink = WarningSink()
    if row.agent == "opencode":
        from ..sources.opencode_native import read_session

        return read_session(files[-1], row.id, sink)
    return open_session(files, sink, row.agent)


async def run_restore(
    store: Store, config: Config, row: SessionRow, run_id: str, max_turns: int | None
) -> None:
    """Restore ``row`` with the configured provider and store the result (never raises)."""
    try:
        await to_thread.run_sync(store.update_run, run_id, "running")
        session = await to_thread.run_sync(load_session, row)
        provider = get_provider(config.llm.model, provider_settings(config))
        try:
            restoration = await restore_session(
                session, config, provider, options=RestoreOptions(max_turns)
            )
        finally:
            await close_provider(provider)
        errors = {
            "failed_turns": [f.model_dump() for f in restoration.failed_turns],
            "warnings": restoration.warnings,
        }

        def save() -> int:
            return store.add_restoration(
                row.id,
                provider=restoration.provider,
                summary_markdown=summary_markdown(restoration),
                summary=restoration.model_dump(mode="json"),
                usage=restoration.usage.model_dump(mode="json"),
                errors=errors,
            )

        restoration_id = await to_thread.run_sync(save)
        await to_thread.run_sync(
            lambda: store.update_run(run_id, "done", restoration_id=restoration_id)
        )
    except asyncio.CancelledError:
        await asyncio.shield(
            to_thread.run_sync(lambda: store.update_run(run_id, "failed", error="cancelled"))
        )
        raise
    except Exception as exc:  # a job reports its failure in its status
        message = f"{type(exc).__name__}: {exc}"
        await to_thread.run_sync(lambda: store.update_run(run_id, "failed", error=message))
