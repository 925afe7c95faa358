"""A hollow session's bodies come back redacted and capped as a whole read's are, and a
log rewritten under a restore is an error, never a summary of mixed-up messages."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore import redact
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message, Session
from opencode_restore.pipeline.bodies import Bodies
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.redact import Redactor, redact_session
from opencode_restore.sources import open_session

from ..security.corpus import Case, secret_cases
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


def _empty(messages: list[Message]) -> None:
    """Empty the bodies as a restore does after each turn (``drop_bodies``)."""
    for m in messages:
        if not m.is_human and m.compaction is None:
            m.text, m.tool_input = "", None


def test_a_body_read_again_is_redacted_again_only_when_it_held_a_secret(tmp_path: Path) -> None:
    # The fourth turn's tool output holds the secret (``plant_log`` places case i by i % 4).
    cases = [Case("filler", f"plain output {i}", "") for i in range(3)] + secret_cases()[:1]
    hollow = open_session([plant_log(tmp_path / "s.jsonl", cases)], WarningSink(), hollow=True)
    redactor = Redactor()
    asked: list[str] = []

    def redact(text: str) -> str:
        asked.append(text)
        return redactor.redact(text)

    messages = hollow.messages()
    bodies = Bodies(hollow, redact)
    bodies.fill(messages)
    first = [(m.text, m.tool_input) for m in messages]
    held_secret = [t for t in asked if redactor.redact(t) != t]
    assert len(held_secret) == 1
    assert len(asked) > 5
    _empty(messages)
    asked.clear()
    bodies.rewind()
    bodies.fill(messages)
    assert [(m.text, m.tool_input) for m in messages] == first
    assert asked == held_secret


def test_a_body_changed_in_place_between_reads_is_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "aB3" * 12
    filler = "y" * len(token)
    cases = [Case("filler", f"out {i} {filler}", "") for i in range(4)]
    log = plant_log(tmp_path / "s.jsonl", cases)
    hollow = open_session([log], WarningSink(), hollow=True)
    messages = hollow.messages()
    bodies = Bodies(hollow, Redactor().redact)
    bodies.fill(messages)
    _empty(messages)
    # The same message at the same place, another text of the same length: a secret.
    log.write_text(log.read_text().replace(f"out 3 {filler}", f"out 3 {token}"))
    bodies.rewind()
    bodies.fill(messages)
    assert "out 3 [REDACTED:github-token]" in [m.text for m in messages]
    assert all(token not in m.text for m in messages)


#: Pieces of log text: secrets of several kinds, look-alikes and plain words.
_PIECES = [c.text for c in secret_cases()[::7]] + [
    "ok",
    "password: hunter2",
    "API_KEY=",
    "sk-ant-xxxx",
    "token=5",
    "\\n",
    '"secret": "',
    "plain words",
]


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map(" ".join),
        min_size=1,
        max_size=6,
    )
)
def test_a_restore_of_a_hollow_read_is_the_restore_of_a_whole_read(texts: list[str]) -> None:
    # The bodies streamed twice (redacted once when nothing was found) give the restore
    # of the session read whole and redacted in one pass, byte for byte.
    with tempfile.TemporaryDirectory() as tmp:
        log = plant_log(Path(tmp) / "s.jsonl", [Case("piece", t, "") for t in texts])
        plain = _restore(open_session([log], WarningSink()))
        hollow = _restore(open_session([log], WarningSink(), hollow=True))
    assert hollow == plain
