"""Inputs that hold several sessions: nothing is cut silently, ``--session`` picks one.

An Inspect log of three samples (9 messages, 3 turns) was read as its first sample
only; an opencode storage tree or database as its newest session, never naming the
others. Now an ambiguous input is an error listing the candidates, ``--session``
(an id, an alias or a unique prefix) reads the one named, and batch reads all.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.batch.discover import discover
from opencode_restore.cli import cli
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.sources import iter_messages, open_session
from opencode_restore.sources.base import SessionChoice, choose_session

FIX = Path(__file__).resolve().parents[2] / "fixtures"
THREE = FIX / "inspect" / "made" / "three_samples.json"
EVAL_ID = "hj8C8q8gxzHhwyCT67xh4L"
TREE = FIX / "opencode" / "opensession"
CLAUDE = FIX / "claude-code" / "spotter" / "short.jsonl"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_choose_session_exact_alias_prefix_and_errors() -> None:
    t = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    choices = [
        SessionChoice("ses_abc", "first\x1b[31m title", t, ()),
        SessionChoice("ses_abd", None, None, ("two",)),
    ]
    assert choose_session("f", choices, "ses_abc").id == "ses_abc"
    assert choose_session("f", choices, "two").id == "ses_abd"
    assert choose_session("f", choices, "ses_abd").id == "ses_abd"
    assert choose_session("f", choices[:1], None).id == "ses_abc"
    with pytest.raises(SourceError) as none:
        choose_session("f", choices, None)
    # Newest first; a title from the log loses its control characters.
    assert str(none.value).splitlines() == [
        "f: holds 2 sessions; choose one with --session ID:",
        "  ses_abc  2026-01-02 03:04:05Z  first [31m title",
        "  ses_abd  -",
    ]
    with pytest.raises(SourceError, match="'ses_ab' matches 2 sessions; give more of the id"):
        choose_session("f", choices, "ses_ab")
    with pytest.raises(SourceError, match="no session 'x' here; it holds:\n  ses_abc"):
        choose_session("f", choices, "x")
    with pytest.raises(SourceError, match="holds no session"):
        choose_session("f", [], None)


def test_a_long_candidate_list_is_cut() -> None:
    choices = [SessionChoice(f"s{n:02}") for n in range(25)]
    with pytest.raises(SourceError) as err:
        choose_session("f", choices, None)
    lines = str(err.value).splitlines()
    assert len(lines) == 22
    assert lines[-1] == "  ... and 5 more"


def test_three_sample_inspect_log_is_an_error_naming_every_sample() -> None:
    with pytest.raises(SourceError) as err:
        open_session([THREE], WarningSink())
    text = str(err.value)
    assert "holds 3 sessions; choose one with --session ID" in text
    for n, words in ((1, "Positive posts"), (2, "I would rather"), (3, "It is important")):
        assert f"{EVAL_ID}:{n}:1" in text
        assert words in text
    # The stream fails the same way, before it yields anything.
    with pytest.raises(SourceError, match="holds 3 sessions"):
        iter_messages([THREE], WarningSink())


@pytest.mark.parametrize("name", [f"{EVAL_ID}:2:1", "2", "2:1", f"{EVAL_ID}:2"])
def test_session_names_one_sample(name: str) -> None:
    session = open_session([THREE], WarningSink(), session=name)
    assert session.id == f"{EVAL_ID}:2:1"
    # The conversation, then the sample's score (a system message).
    assert [m.role for m in session.messages()] == ["system", "user", "assistant", "system"]
    assert "I would rather be alone" in session.messages()[1].text
    streamed = list(iter_messages([THREE], WarningSink(), session=name))
    assert [m.id for m in streamed] == [m.id for m in session.messages()]


def test_a_sample_named_by_prefix_is_fetched_again() -> None:
    # Prefix "hj8C8q8gxzHhwyCT67xh4L:3" is no alias: found by the second pass.
    session = open_session([THREE], WarningSink(), session=f"{EVAL_ID}:3")
    assert "finish every task" in session.messages()[1].text
    with pytest.raises(SourceError, match="matches 3 sessions"):
        open_session([THREE], WarningSink(), session=EVAL_ID)


def test_batch_reads_every_sample_of_the_log() -> None:
    items = discover([str(THREE)], WarningSink())
    assert [i.session_id for i in items] == [f"{EVAL_ID}:{n}:1" for n in (1, 2, 3)]
    loaded = [i.load(WarningSink()) for i in items]
    assert sum(len(s.messages()) for s in loaded) == 12  # 3 messages and a score each
    assert len({s.messages()[1].text for s in loaded}) == 3


def test_opencode_storage_of_two_sessions(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="holds 2 sessions") as err:
        open_session([TREE], WarningSink())
    assert "ses_company_logic" in str(err.value)
    assert "ses_fixture" in str(err.value)
    session = open_session([TREE], WarningSink(), session="ses_company")
    assert session.id == "ses_company_logic"
    assert [m.text for m in session.messages() if m.is_human] == ["run diagnostics"]


def test_a_single_session_log_must_be_the_one_named() -> None:
    session = open_session([CLAUDE], WarningSink(), session="55604662")
    assert session.id == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert len(list(iter_messages([CLAUDE], WarningSink(), session="55604662"))) == len(
        session.messages()
    )
    with pytest.raises(SourceError, match=r"holds session 55604662-cf2a-.*, not 'abc'"):
        open_session([CLAUDE], WarningSink(), session="abc")
    with pytest.raises(SourceError, match="not 'abc'"):
        iter_messages([CLAUDE], WarningSink(), session="abc")


def test_cli_lists_candidates_and_prints_nothing_else() -> None:
    for command in ("turns", "restore", "report", "tree"):
        code, out, err = invoke(command, str(THREE))
        assert (code, out) == (2, ""), command
        assert err.startswith(f"error: {THREE}: holds 3 sessions; choose one with --session ID:")
        assert err.count(f"  {EVAL_ID}:") == 3
    code, out, err = invoke("messages", str(THREE), "--format", "json")
    assert (code, out) == (2, "")


def test_cli_session_option_on_every_command(tmp_path: Path) -> None:
    code, out, _ = invoke("turns", str(THREE), "--session", "3", "--format", "json")
    assert code == 0
    [turn] = json.loads(out)
    assert "finish every task" in turn["user_text"]
    code, out, _ = invoke("messages", str(THREE), "--session", "1")
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [
        "KbRXi6VEafgTBTC3vXEACa",
        "DqUGR3BroHhrUsYwX2vEZW",
        "JNtNFnBPTyHFV3mmixeuPp",
        "1:score:match",
    ]
    code, out, _ = invoke("restore", str(THREE), "--session", "2", "-q", "--format", "json")
    assert code == 0
    assert json.loads(out)["session"]["id"] == f"{EVAL_ID}:2:1"
    page = tmp_path / "page.html"
    code, _, _ = invoke("report", str(THREE), "--session", "2", "-o", str(page), "-q")
    assert code == 0
    assert "I would rather be alone" in page.read_text()
    code, out, _ = invoke("tree", str(TREE), "--session", "ses_company_logic")
    assert code == 0
    assert "run diagnostics" in out
