"""``--demo``: the sample session shipped inside the package."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.resources import demo_sample

FIXTURE = Path(__file__).parents[2] / "fixtures/opencode/recorded/tui-compact/export.json"


def test_packaged_sample_is_the_recorded_fixture() -> None:
    assert demo_sample().read_bytes() == FIXTURE.read_bytes()


def test_restore_demo_equals_restore_of_the_fixture() -> None:
    runner = CliRunner()
    demo = runner.invoke(cli, ["restore", "-q", "--fresh", "--demo"])
    by_path = runner.invoke(cli, ["restore", "-q", "--fresh", str(FIXTURE)])
    assert demo.exit_code == 0, demo.output
    assert demo.output == by_path.output
    assert "SESSION SUMMARY — Add --shout flag to greet CLI" in demo.output


@pytest.mark.parametrize("command", ["messages", "turns"])
def test_other_session_commands_take_demo(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--demo"])
    assert result.exit_code == 0, result.output
    assert "--shout" in result.output


@pytest.mark.parametrize("extra", [[str(FIXTURE)], ["--latest"], ["--cwd", "."]])
def test_demo_with_another_input_is_a_usage_error(extra: list[str]) -> None:
    result = CliRunner().invoke(cli, ["restore", "--demo", *extra])
    assert result.exit_code == 2
    assert "--demo reads the packaged sample" in result.output
