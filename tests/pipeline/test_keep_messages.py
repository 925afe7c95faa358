"""``RestoreOptions.keep_messages=False`` and a session read hollow (the CLI's memory
savings, bench/scale.py's RSS target) must give the restoration the plain path gives, on
every line-addressed log."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Session
from opencode_restore.pipeline.evidence import tools
from opencode_restore.pipeline.evidence.log_search import Limits
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.sources import open_session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(
    p
    for pattern in ("claude-code/**/*.jsonl", "codex/**/*.jsonl", "pi/**/*.jsonl", "terminal/*.log")
    for p in FIXTURES.glob(pattern)
)


def _restore(path: Path, keep: bool, hollow: bool = False) -> tuple[str, Session]:
    session = open_session([path], WarningSink(), hollow=hollow)
    config = load_config(env={})
    options = RestoreOptions(keep_messages=keep, workspace="none")
    restoration = anyio.run(
        lambda: restore_session(session, config, OfflineProvider(), options=options)
    )
    return restoration.model_dump_json(), session


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_dropping_bodies_of_summarized_turns_changes_no_output(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A log search stops at its time limit: on a loaded machine that cut differs from run
    # to run, and the comparison must see the same hits both times.
    monkeypatch.setattr(tools, "Limits", partial(Limits, search_seconds=600.0))
    plain, kept = _restore(path, keep=True)
    lean, dropped = _restore(path, keep=False)
    assert lean == plain
    hollow, _ = _restore(path, keep=False, hollow=True)
    assert hollow == plain
    bodies = [m.text for m in kept.messages() if not m.is_human and m.compaction is None]
    if any(bodies):
        # The saving really happened: the summarized turns' bodies are gone.
        assert not any(
            m.text for m in dropped.messages() if not m.is_human and m.compaction is None
        )
