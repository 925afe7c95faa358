"""A hollow session's bodies come back redacted and capped as a whole read's are, and a
log rewritten under a restore is an error, never a summary of mixed-up messages."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from opencode_restore import redact
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Session
from opencode_restore.pipeline.bodies import Bodies
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.redact import Redactor, redact_session
from opencode_restore.sources import open_session

from ..security.corpus import secret_cases
from ..security.sinks import plant_log


def _restore(session: Session) -> str:
    config = load_config(env={})
    options = RestoreOptions(keep_messages=False, workspace="none")
    restoration = anyio.run(
        lambda: restore_session(session, config, OfflineProvider(), options=options)
    )
    return restoration.model_dump_json()


def test_bodies_are_redacted_as_a_whole_read_is(tmp_path: Path) -> None:
    cases = secret_cases()
    log = plant_log(tmp_path / "s.jsonl", cases)
    plain = _restore(open_session([log], WarningSink()))
    hollow = _restore(open_session([log], WarningSink(), hollow=True))
    assert hollow == plain
    assert '"redactions":0' not in hollow
    for case in cases:
        assert case.secret not in hollow


def test_filled_bodies_are_capped_and_redacted_like_redact_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redact, "KEEP_CHARS", 20)
    log = plant_log(tmp_path / "s.jsonl", secret_cases()[:8])
    whole = redact_session(open_session([log], WarningSink()), Redactor().redact, cap=True)
    hollow = open_session([log], WarningSink(), hollow=True)
    redactor = Redactor()
    redact_session(hollow, redactor.redact, cap=True)  # as a restore does, before any fill
    Bodies(hollow, redactor.redact).fill(hollow.messages())
    got = [(m.id, m.text, m.tool_input) for m in hollow.messages()]
    assert got == [(m.id, m.text, m.tool_input) for m in whole.messages()]
    assert any("characters omitted" in m.text for m in hollow.messages())


def test_a_log_rewritten_during_the_restore_is_an_error(tmp_path: Path) -> None:
    log = plant_log(tmp_path / "s.jsonl", secret_cases()[:4])
    session = open_session([log], WarningSink(), hollow=True)
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:2] + lines[3:]))  # a line in the middle is gone
    with pytest.raises(SourceError, match="changed while it was being restored") as exc:
        _restore(session)
    assert str(log) in str(exc.value)


def test_a_session_read_whole_has_no_bodies_to_fill(tmp_path: Path) -> None:
    log = plant_log(tmp_path / "s.jsonl", secret_cases()[:1])
    with pytest.raises(ValueError, match="not read hollow"):
        Bodies(open_session([log], WarningSink()), None)
