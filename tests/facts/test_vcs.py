"""Commits, pushes, pull requests and the status of a work tree, read from command output.

The outputs are excerpts of real sessions of the real devset (shared/samples/real-devset:
omp-prompt-speed, omp-template-trust, ctxeval-tree-view, nimbus-report-ui, agentv-sync-pr).
"""

from __future__ import annotations

from typing import Any

from opencode_restore.facts.errors import command_failed
from opencode_restore.facts.vcs import events, status
from opencode_restore.model import CommandRun, Message, Turn


def turn_of(*runs: tuple[str, str, int | None]) -> Turn:
    """A turn whose commands ran with these (command, output, exit code)."""
    messages: list[Message] = []
    commands = []
    for i, (command, output, code) in enumerate(runs):
        call = Message(
            f"c{i}",
            "assistant",
            "tool_use",
            "",
            tool_name="Bash",
            tool_call_id=f"t{i}",
            tool_input={"command": command},
        )
        res = Message(
            f"r{i}", "tool", "tool_result", output, tool_call_id=f"t{i}", is_error=bool(code)
        )
        messages += [call, res]
        commands.append(CommandRun(command, f"c{i}", exit_code=code))
    return Turn(1, "commit", messages, commands=commands)


def found(turn: Turn) -> list[dict[str, Any]]:
    return events(
        turn,
        lambda mid: f"M{mid[1:]}",
        lambda cmd, run, out: command_failed(cmd, run.exit_code, run.is_error, out),
    )


def test_a_commit_is_read_from_gits_own_report() -> None:
    out = (
        "[next cdb4bfe8] fix(terminal): stop parent color stack growing unbounded\n"
        " 3 files changed, 40 insertions(+), 12 deletions(-)\n"
    )
    [commit] = found(turn_of(('git commit -m "fix(terminal): …"', out, 0)))
    assert commit == {
        "kind": "commit",
        "sha": "cdb4bfe8",
        "branch": "next",
        "subject": "fix(terminal): stop parent color stack growing unbounded",
        "amend": False,
        "all": False,
        "label": "M0",
    }


def test_a_commit_inside_a_chain_and_an_amend() -> None:
    out = "[next da522044] fix(template): gate cmd/readFile/stat/glob behind trusted templates\n"
    [commit] = found(turn_of(("git add -A && git commit --amend -m x", out, 0)))
    assert commit["amend"]
    assert commit["all"]
    assert commit["sha"] == "da522044"


def test_nothing_to_commit_is_no_commit_and_no_failure() -> None:
    out = "On branch main\nnothing to commit, working tree clean\n"
    assert not command_failed("git commit -m x", 1, True, out)
    assert found(turn_of(("git commit -m x", out, 1))) == []


def test_a_push_counts_only_when_it_went_through() -> None:
    ok = "To github.com:dayhaysoos/nimbus.git\n * [new branch]      feat/x -> feat/x\n"
    rejected = " ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs"
    assert [e["kind"] for e in found(turn_of(("git push -u origin feat/x", ok, 0)))] == ["push"]
    assert found(turn_of(("git push", rejected, 1))) == []
    # A log without exit statuses: the output alone says it did not go through.
    assert found(turn_of(("git push", rejected, None))) == []


def test_pull_requests_opened_and_merged() -> None:
    opened = found(
        turn_of(("gh pr create --title x", "https://github.com/dayhaysoos/nimbus/pull/13\n", 0))
    )
    merged = found(turn_of(("gh pr merge 1510 --squash", "", 0)))
    assert opened == [{"kind": "pr_opened", "number": "13", "label": "M0"}]
    assert merged == [{"kind": "pr_merged", "number": "1510", "label": "M0"}]
    assert found(turn_of(("gh pr create", "GraphQL: Head sha can't be blank", 1))) == []


def test_status_in_gits_short_and_long_forms_and_a_wrappers() -> None:
    short = status(" M README.md\n?? llm-docs/plan.md\n?? .husky/\n")
    assert short == {
        "changed": ["README.md"],
        "untracked": ["llm-docs/plan.md", ".husky/"],
        "counts": [1, 2],
    }
    long = status(
        "On branch main\nChanges not staged for commit:\n"
        '  (use "git add <file>..." to update what will be committed)\n'
        "\tmodified:   README.md\n\nUntracked files:\n"
        '  (use "git add <file>..." to include in what will be committed)\n'
        "\t.claude/\n\n"
    )
    assert long["changed"] == ["README.md"]
    assert long["untracked"] == [".claude/"]
    # rtk's compressed status (ctxeval-tree-view, line 481): a heading and indented paths.
    wrapped = status(
        "📌 main...origin/main [ahead 21]\n✅ Staged: 6 files\n   frontend/bun.lock\n"
        "❓ Untracked: 5 files\n   .claude/\n   .husky/commit-msg\n   ... +3 more\n"
    )
    assert wrapped["untracked"] == [".claude/", ".husky/commit-msg"]
    assert wrapped["counts"][1] == 5
    assert status("On branch main\nnothing to commit, working tree clean\n")["counts"] == [0, 0]
