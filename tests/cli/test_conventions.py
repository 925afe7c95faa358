"""What a user expects of any command line: --version, -h, listed choices, one --since,
NO_COLOR and --color/--no-color, shell completion, `config show`, no test-only provider."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore import __version__
from opencode_restore.cli import cli

EXPORT = "opencode/recorded/tui-compact/export.json"
AGENTS = "'claude-code', 'codex', 'gemini', 'pi', 'opencode', 'inspect', 'terminal'"


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, list(args), env=env, catch_exceptions=False, prog_name="opencode-restore"
    )
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    assert invoke("--version") == (0, f"opencode-restore, version {__version__}\n", "")


@pytest.mark.parametrize(
    "command", [[], ["restore"], ["sessions"], ["sessions", "list"], ["config", "show"]]
)
def test_dash_h_is_help_everywhere(command: list[str]) -> None:
    code, out, _ = invoke(*command, "-h")
    assert code == 0
    assert out.startswith(f"Usage: opencode-restore {' '.join(command)}".rstrip())
    assert "-h, --help" in out


@pytest.mark.parametrize(
    "command",
    [["messages", EXPORT], ["restore", EXPORT], ["turns", EXPORT], ["batch", EXPORT, "--out", "o"]],
)
def test_agent_lists_its_choices(command: list[str], fixtures: Path) -> None:
    code, out, err = invoke(*command, "--agent", "emacs")
    assert code == 2
    assert f"Invalid value for '--agent': 'emacs' is not one of {AGENTS}." in err
    assert out == ""


def test_agent_choices_are_in_the_help() -> None:
    _, out, _ = invoke("messages", "-h")
    assert "--agent [claude-code|codex|gemini|pi|opencode|inspect|terminal]" in out


def _log_with_times(path: Path, *times: datetime) -> Path:
    lines = []
    parent = None
    for k, when in enumerate(times):
        uid = f"u{k}"
        line = {
            "type": "user",
            "uuid": uid,
            "parentUuid": parent,
            "sessionId": "S",
            "timestamp": when.isoformat().replace("+00:00", "Z"),
            "message": {"role": "user", "content": f"request {k}"},
        }
        lines.append(json.dumps(line))
        parent = uid
    path.write_text("\n".join(lines) + "\n")
    return path


def test_messages_since_takes_a_time_or_a_span(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    log = _log_with_times(tmp_path / "s.jsonl", now - timedelta(hours=3), now - timedelta(hours=1))
    texts = {}
    for since in ("2h", "240m", (now - timedelta(hours=2)).isoformat(), "2000-01-01"):
        code, out, err = invoke("messages", str(log), "--since", since)
        assert code == 0, err
        texts[since] = [json.loads(line)["text"] for line in out.splitlines()]
    assert texts["2h"] == texts[(now - timedelta(hours=2)).isoformat()] == ["request 1"]
    assert texts["240m"] == texts["2000-01-01"] == ["request 0", "request 1"]


@pytest.mark.parametrize("bad", ["yesterday", "0h", "24"])
def test_a_bad_since_names_both_forms(bad: str, fixtures: Path) -> None:
    code, _, err = invoke("messages", str(fixtures / EXPORT), "--since", bad)
    assert code == 2
    assert f"Invalid value for '--since': {bad!r}: " in err


def _restore_note(*flags: str, env: dict[str, str]) -> str:
    code, _, err = invoke(*flags, "restore", "--demo", "--workspace", "/", env=env)
    assert code == 0, err
    assert "turns," in err  # the closing note, printed dim when colour is on
    return err


def test_colour_follows_the_flags_and_no_color() -> None:
    # FORCE_COLOR makes rich colour even into the test's pipe, so each case could colour.
    forced = {"FORCE_COLOR": "1", "NO_COLOR": ""}
    assert "\x1b[" in _restore_note(env=forced)
    assert "\x1b[" not in _restore_note(env={**forced, "NO_COLOR": "1"})
    assert "\x1b[" not in _restore_note("--no-color", env=forced)
    assert "\x1b[" in _restore_note("--color", env={"NO_COLOR": "1"})  # the flag wins
    assert "\x1b[" not in _restore_note(env={"NO_COLOR": ""})  # a pipe: rich decides, plain


def test_shell_completion_script_and_agent_choices() -> None:
    code, out, _ = invoke(env={"_OPENCODE_RESTORE_COMPLETE": "bash_source"})
    assert code == 0
    assert "_opencode_restore_completion()" in out
    assert "complete -o nosort -F _opencode_restore_completion opencode-restore" in out
    env = {
        "_OPENCODE_RESTORE_COMPLETE": "bash_complete",
        "COMP_WORDS": "opencode-restore messages --agent c",
        "COMP_CWORD": "3",
    }
    code, out, _ = invoke(env=env)
    assert out.splitlines() == ["plain,claude-code", "plain,codex"]


def test_scripted_is_not_offered_to_users(fixtures: Path) -> None:
    code, _, err = invoke("restore", str(fixtures / EXPORT), "-m", "scripted", "-q")
    assert code == 2
    assert err == (
        "error: unknown LLM provider 'scripted': use one of openai:MODEL, anthropic:MODEL, "
        "offline\n"
    )
    assert "scripted" not in invoke("restore", "-h")[1]
