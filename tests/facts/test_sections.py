"""The SESSION SUMMARY's sections as the rules write them from turn facts: progress,
decisions, errors and fixes, the end state, the next step and open questions. Each case
is a shape seen in a real session of shared/samples/real-devset, with its false twin."""

from __future__ import annotations

from typing import Any

from opencode_restore.facts.decisions import key_decisions, stale
from opencode_restore.facts.fixes import errors_and_fixes
from opencode_restore.facts.progress import changes, done, end_state, request_line
from opencode_restore.facts.state import compaction_notes, next_step, open_questions


def turn(n: int, request: str, **kw: Any) -> dict[str, Any]:
    return {"turn_number": n, "user_request": request, "user_labels": [f"M{n}0"], **kw}


def commit(sha: str, subject: str, label: str, **kw: Any) -> dict[str, Any]:
    return {
        "kind": "commit",
        "sha": sha,
        "branch": "next",
        "subject": subject,
        "amend": False,
        "all": False,
        "label": label,
        **kw,
    }


def test_a_turn_line_has_its_changes_commits_and_the_agents_account() -> None:
    t = turn(
        2,
        "do stack, fix it",
        artifacts=[{"path": "src/writer.go", "action": "edited", "label": "M21"}],
        vcs=[commit("cdb4bfe8", "fix(terminal): stop parent color stack growing unbounded", "M22")],
        outcome={"text": "Fixed and committed as cdb4bfe8.", "label": "M23"},
    )
    [line] = done([t])
    assert line == (
        "Turn 2: do stack, fix it [M20] → edited `writer.go` [M21]; committed `cdb4bfe8` "
        "“fix(terminal): stop parent color stack growing unbounded” [M22]. "
        "Agent: Fixed and committed as cdb4bfe8. [M23]"
    )


def test_a_reverted_commit_says_so_wherever_it_is_named() -> None:
    # omp-prompt-speed turns 9-10: f2c1bde broke cmd and was reverted by 7dbba6d6.
    turns = [
        turn(
            9,
            "yes",
            vcs=[commit("f2c1bde", "perf(shell): read cmd records in chunks", "M91")],
            outcome={"text": "Committed as f2c1bde.", "label": "M92"},
        ),
        turn(
            10,
            "Seems like CMD is now broken.",
            vcs=[commit("7dbba6d6", 'Revert "perf(shell): read cmd records in chunks"', "M101")],
        ),
    ]
    lines = done(turns)
    assert (
        "`f2c1bde` “perf(shell): read cmd records in chunks” [M91] (reverted by `7dbba6d6`)"
        in lines[0]
    )
    assert "Committed as f2c1bde (reverted by `7dbba6d6`)." in lines[0]


def test_a_question_that_changed_nothing_was_a_discussion() -> None:
    [line] = done([turn(9, "but Render[T Trusted | Untrusted] would work, no?")])
    assert line.startswith("Turn 9: discussed “but Render[T Trusted | Untrusted] would work, no?”")
    [work] = done(
        [
            turn(
                8,
                "Can you fix it?",
                artifacts=[{"path": "a.py", "action": "edited", "label": "M81"}],
            )
        ]
    )
    assert work.startswith("Turn 8: Can you fix it? [M80] → edited")


def test_a_dated_account_of_an_earlier_turn_is_left_out() -> None:
    # agentv-sync-pr turn 11 said "still a draft"; turn 12 merged it.
    early = turn(
        11,
        "is it ready to merge now",
        outcome={"text": "Not yet mergeable, the PR is still a draft.", "label": "M111"},
    )
    late = turn(
        12, "let's merge it", vcs=[{"kind": "pr_merged", "number": "1510", "label": "M121"}]
    )
    lines = done([early, late])
    assert "still a draft" not in lines[0]
    assert lines[1].endswith("merged PR #1510 [M121]")
    assert "still a draft" in done([early])[0]  # the last turn's state is current


def test_removing_a_file_then_moving_another_onto_its_name_is_no_rename() -> None:
    same_call = [
        {"path": "a.md", "action": "deleted", "label": "M5"},
        {"path": "b.md", "action": "deleted", "label": "M5"},
        {"path": "a.md", "action": "created", "label": "M5"},
    ]
    made = changes({"artifacts": same_call})
    assert "renamed" not in made
    assert "edited `a.md` [M5]" in made
    assert "deleted `b.md` [M5]" in made
    moved = changes(
        {
            "artifacts": [
                {"path": "old.py", "action": "deleted", "label": "M6"},
                {"path": "new.py", "action": "created", "label": "M6"},
            ]
        }
    )
    assert moved == "renamed `old.py` → `new.py` [M6]"


def test_request_lines_drop_the_quotes_a_log_keeps_around_a_prompt() -> None:
    assert request_line('"Hi! Please add a README."') == "Please add a README."
    assert request_line("“fix the CI issue”") == "fix the CI issue"


def test_the_end_state_of_version_control() -> None:
    last = turn(
        6,
        "commit",
        vcs=[
            {
                "kind": "status",
                "label": "M61",
                "changed": ["a.ts"],
                "untracked": [".claude/", ".husky/x"],
                "counts": [1, 5],
            },
            commit("37016ac", "Fix tree view", "M62"),
        ],
    )
    state = end_state([last])
    assert state.startswith("Last commit `37016ac` “Fix tree view” on `next` [M62]; not pushed")
    assert "untracked `.claude/`, `.husky/x` (and 3 more)" in state
    assert "a.ts" not in state  # changed before the commit: committed with it
    pushed = turn(
        13,
        "push",
        vcs=[commit("e2c15e5", "feat: ui", "M131"), {"kind": "push", "label": "M132"}],
        artifacts=[{"path": "README.md", "action": "edited", "label": "M140"}],
    )
    assert end_state([pushed]) == (
        "Last commit `e2c15e5` “feat: ui” on `next` [M131]; pushed after it; then changed, "
        "not committed in this log: `README.md` [M140]."
    )
    assert end_state([turn(1, "hi")]) == ""


def test_next_step_is_none_pending_only_when_nothing_is_left() -> None:
    answered = turn(3, "fix both", last_assistant={"text": "Both fixed.", "label": "M31"})
    assert next_step([answered])[0] == "None pending: the last request was answered [M31]."
    asking = turn(
        11,
        "fix the CI issue",
        questions=[{"text": "Not pushed yet — want me to push to `next`?", "label": "M112"}],
    )
    assert next_step([asking])[0] == (
        "Answer the agent's question: Not pushed yet — want me to push to `next`? [M112]"
    )
    failing = turn(
        6,
        "push it",
        failed_commands=[
            {"command": "git push", "label": "M61", "exit_code": 1, "error": "rejected"}
        ],
    )
    assert next_step([failing])[0].startswith("Unresolved: `git push` failed: rejected [M61]")
    worked_on = dict(failing, artifacts=[{"path": "a", "action": "edited", "label": "M62"}])
    assert not next_step([worked_on])[0].startswith("Unresolved")
    left = turn(
        2, "x", last_assistant={"text": "Done. The docs are not yet updated.", "label": "M21"}
    )
    assert next_step([left])[0] == "The docs are not yet updated. [M21]"
    cut = turn(4, "add a purge command", interrupted=True)
    step, in_progress, _ = next_step([cut])
    assert step == "Finish the user's last request (turn 4): add a purge command [M40]"
    assert in_progress == ["Turn 4 so far: nothing changed yet"]


def test_open_questions_are_the_ones_no_later_request_took_up() -> None:
    q = {"text": "Which do you want?", "label": "M12"}
    reply = turn(2, "do stack, fix it")
    assert open_questions([turn(1, "x", questions=[q]), reply]) == []
    unrelated = turn(
        2,
        "Next, a validation pass over the whole public API, with a test for each "
        "check, run the whole suite after every change and report back.",
    )
    migrate = {
        "text": "Should upgrades only run through an explicit `migrate` command?",
        "label": "M13",
    }
    assert open_questions([turn(1, "x", questions=[migrate]), unrelated]) == [
        "Should upgrades only run through an explicit `migrate` command? [M13]"
    ]
    assert open_questions([turn(1, "x", questions=[q])]) == ["Which do you want? [M12]"]


def test_decisions_the_user_made_and_stale_ones() -> None:
    asked = turn(
        1, "Investigate", questions=[{"text": "Reset per render or a real stack?", "label": "M11"}]
    )
    chose = turn(2, "do stack, fix it")
    [d] = key_decisions([asked, chose])
    assert d["decision"] == (
        "The user chose “do stack, fix it” [M20] when asked: "
        "Reset per render or a real stack? [M11]"
    )
    # omp-template-trust: RenderRestricted was dropped for RenderUntrusted later.
    early = turn(
        5,
        "go ahead",
        decisions=[
            {"text": "Switch the sink to `RenderRestricted`.", "reason": "", "label": "M51"}
        ],
    )
    later = turn(
        7,
        "Why don't we have a template.RenderTrusted() instead as we also have "
        "template.RenderRestricted?",
    )
    assert all("RenderRestricted" not in x["decision"] for x in key_decisions([early, later]))
    assert key_decisions([early])[0]["decision"] == "Switch the sink to `RenderRestricted`. [M51]"
    assert stale("use `foo`", ["We removed foo entirely."])
    assert not stale("use plain words", ["We removed everything."])


def test_errors_the_user_pasted_with_what_the_turn_changed() -> None:
    t = turn(
        3,
        "The tree view makes everything bugged.",
        pasted_errors=[
            {"text": "Uncaught ContextError: useContext returned `undefined`", "label": "M30"}
        ],
        artifacts=[{"path": "ContextTreeView.tsx", "action": "edited", "label": "M33"}],
    )
    assert errors_and_fixes([t]) == [
        "Turn 3: the user reported “Uncaught ContextError: useContext returned `undefined`” "
        "[M30]; the turn then edited `ContextTreeView.tsx` [M33]"
    ]


def test_a_quoting_slip_fixed_at_once_is_not_listed() -> None:
    t = turn(
        1,
        "x",
        failed_commands=[
            {
                "command": "echo 'a",
                "label": "M11",
                "exit_code": 2,
                "error": "unexpected EOF while looking for matching `''",
            }
        ],
    )
    assert errors_and_fixes([t]) == []


def test_compaction_notes() -> None:
    t = turn(7, "x", compactions=[{"label": "M70", "summary": "Goal: ship the PR."}])
    assert compaction_notes([t]) == ["Turn 7: the context was compacted [M70]"]


def test_a_turn_whose_only_actions_were_tool_calls_names_them() -> None:
    # Inspect's browser sample (fixtures/inspect/eval-logs): no files, no commands.
    t = turn(
        1,
        "Use the web browser tool to navigate to the site.",
        tool_calls={"web_browser_go": 1, "web_browser_click": 3},
    )
    [line] = done([t])
    assert "→ called `web_browser_go`, `web_browser_click` ×3" in line
    edited = dict(t, artifacts=[{"path": "a.py", "action": "edited", "label": "M11"}])
    assert "called" not in done([edited])[0]  # the changes say what it did


def test_the_end_state_says_how_an_eval_scored_it() -> None:
    t = turn(1, "x", scores=[{"scorer": "includes", "value": "C", "label": "M12"}])
    assert end_state([t]) == "Scored `C` by `includes` [M12]."


def test_a_plain_imperative_is_no_decision_and_the_first_request_has_none() -> None:
    first = turn(1, "Use the web browser tool to navigate to https://www.aisi.gov.uk/.")
    assert key_decisions([first]) == []
    later = turn(2, "go ahead with the type-based fix, skip the opt-in flag")
    [d] = key_decisions([first, later])
    assert d["decision"].startswith("The user decided: “go ahead with the type-based fix")
    assert key_decisions([first, turn(2, "Use the other parser.")]) == []


def test_commands_refused_by_a_reviewer_are_not_failures_nor_the_users() -> None:
    # graph-trail-review turns 1-3: Codex's approval review refused every escalation.
    reason = "Automatic approval review failed: This model is not supported"
    turns = [
        turn(
            n,
            "x",
            refused_commands=[
                {"command": cmd, "by": "policy", "reason": reason, "label": f"M{n}1"}
            ],
        )
        for n, cmd in ((1, "entire login"), (2, "entire auth status"))
    ]
    assert errors_and_fixes(turns) == [
        "Refused before they ran, by an approval rule or reviewer (not the user): "
        f"`entire login` (turn 1) [M11], `entire auth status` (turn 2) [M21]: {reason}"
    ]
    by_user = turn(
        1,
        "x",
        refused_commands=[{"command": "rm -rf x", "by": "user", "reason": "", "label": "M11"}],
    )
    assert errors_and_fixes([by_user]) == []  # the turn line says the user rejected it


def test_a_cut_off_turn_says_which_call_has_no_result() -> None:
    # graph-trail-review turn 6: the log ends after `git commit` was issued.
    cut = turn(
        6,
        "Document them on the trail and address them",
        interrupted=True,
        unanswered_call={
            "tool": "exec_command",
            "label": "M61",
            "target": 'git commit -m "fix(search): address review findings"',
        },
    )
    _, in_progress, _ = next_step([cut])
    assert in_progress[1] == (
        'Its last call has no result in the log: `git commit -m "fix(search): address review '
        'findings"` [M61]'
    )


def test_the_goals_request_is_not_quoted_twice() -> None:
    [line] = done(
        [turn(1, "Add a --shout flag.", outcome={"text": "Added it.", "label": "M12"})],
        goal_label="M10",
    )
    assert line == "Turn 1: the goal [M10]. Agent: Added it. [M12]"


def test_a_file_the_turn_made_and_removed_was_scratch() -> None:
    # omp-prompt-speed turn 5: a temporary regression test, created, run, deleted.
    t = {
        "artifacts": [
            {"path": "src/zz_tmp_test.go", "action": "created", "label": "M1"},
            {"path": "src/zz_tmp_test.go", "action": "edited", "label": "M2"},
            {"path": "src/zz_tmp_test.go", "action": "deleted", "label": "M3"},
            {"path": "src/engine.go", "action": "edited", "label": "M4"},
        ]
    }
    assert changes(t) == "edited `engine.go` [M4]"
    kept = {
        "artifacts": [
            {"path": "a.go", "action": "deleted", "label": "M1"},
            {"path": "a.go", "action": "created", "label": "M2"},
        ]
    }
    # Removed, then made again: both happened, and the file is there.
    assert changes(kept) == "deleted `a.go` [M1]; created `a.go` [M2]"


def test_a_run_that_ended_in_an_error_is_not_none_pending() -> None:
    t = turn(
        1,
        "x",
        run_errors=[{"text": "RuntimeError: sandbox died", "label": "M9"}],
        last_assistant={"text": "Done.", "label": "M8"},
    )
    assert (
        next_step([t])[0]
        == "Unresolved: the run ended in an error: RuntimeError: sandbox died [M9]"
    )


def test_the_last_turn_says_more_of_where_the_work_ended() -> None:
    # omp-template-trust turn 11: the final API is named past the short account's cut.
    last = turn(
        11,
        "go ahead",
        outcome={"text": "Amended: 5ea2e429. Summary…", "label": "M9"},
        closing_account="Amended: 5ea2e429. `template.Render` split into RenderTrusted "
        "and RenderUntrusted.",
    )
    assert "RenderUntrusted" in done([last])[0]
    assert "RenderUntrusted" not in done([last, turn(12, "thanks")])[0]


def test_a_decision_cut_before_its_stale_name_is_still_stale() -> None:
    early = turn(
        5,
        "go ahead",
        decisions=[
            {
                "text": "The one sink switched to the new…",
                "reason": "",
                "label": "M51",
                "names": ["template.RenderRestricted"],
            }
        ],
    )
    later = turn(
        7, "Why not template.RenderTrusted() instead, as we have template.RenderRestricted?"
    )
    assert all("sink" not in d["decision"] for d in key_decisions([early, later]))
