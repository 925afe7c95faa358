"""The text rules, each on small real excerpts of agent sessions: true and false cases."""

from __future__ import annotations

from opencode_restore.facts import text as rules

RULES = (
    "Two ground rules before you touch anything: (1) a full target URL must never end up in a "
    "log line, only the short code (PRIV-88); (2) short codes stay lowercase letters and "
    "digits, because support staff read them out over the phone. Start by giving me a tour."
)


def test_constraints_are_the_users_standing_rules() -> None:
    assert rules.constraints(RULES) == [
        "a full target URL must never end up in a log line, only the short code (PRIV-88)",
        "short codes stay lowercase letters and digits, because support staff read them out "
        "over the phone.",
    ]
    # Scoped to this request, a question, or "keep doing": not standing rules.
    assert rules.constraints("Run the tests. Don't fix anything yet, I want to see it.") == []
    assert rules.constraints("Can the same URL always get the same code?") == []
    assert rules.constraints("People keep shortening the same long URL over and over.") == []


def test_a_later_preference_reverses_the_rule_it_names() -> None:
    later = "Change of plan: scratch the lowercase-only rule. Make codes base62, keep them at 6."
    [reversal] = rules.reversals(later)
    old_url, old_case = rules.constraints(RULES)
    assert rules.reverses(reversal, old_case)
    assert not rules.reverses(reversal, old_url)
    assert rules.constraints(later) == ["Make codes base62, keep them at 6."]


def test_decisions_need_a_choice_and_keep_the_reason() -> None:
    text = (
        "Decision: the id column is now `INTEGER PRIMARY KEY AUTOINCREMENT`. Reason: a deleted "
        "link's id must never be handed out again."
    )
    assert [d[:2] for d in rules.decisions(text)] == [
        (
            "Decision: the id column is now `INTEGER PRIMARY KEY AUTOINCREMENT`.",
            "a deleted link's id must never be handed out again.",
        )
    ]
    plan = "Plan: derive the code from its row id (`cursor.lastrowid`) instead of `COUNT(*) + 1`."
    assert [d[:2] for d in rules.decisions(plan)] == [(plan, "")]
    # A comparison is not a choice.
    assert rules.decisions("That is 62^6 codes instead of 36^6 (about 2.2 billion).") == []


def test_ruled_out_takes_the_reason_before_a_short_marker() -> None:
    text = "Three runs, three different values: `hash()` is salted per process. Ruling that out."
    assert rules.ruled_out(text) == [text]
    assert rules.ruled_out("Both are rejected now: `connect(None)` fails.") == []


def test_findings_are_what_the_agent_found_out() -> None:
    found = "Important finding: `clean_alias()` silently truncates every alias to 24 characters."
    assert rules.findings(found) == [found]
    assert rules.findings("Renaming util.py and finding its importers.") == []


def test_questions_and_their_answers() -> None:
    q = (
        "Open question for you: should `LinkStore` keep upgrading an older database "
        "automatically, or only through an explicit `shrinkray migrate` command?"
    )
    assert rules.questions(f"Schema versions are tracked. {q}") == [q]
    # A new long request that names the store in passing does not answer it ...
    assert not rules.answers(
        "Next, a validation pass over the whole public API (LinkStore.__init__, shorten, "
        "resolve) with a test for each check, run the whole suite after every change.",
        q,
    )
    # ... a reply that takes it up does.
    assert rules.answers("Yes, upgrade on open.", q)
    assert rules.answers("try approach A", "Which approach do you want?")


def test_identifiers_the_user_introduced() -> None:
    text = "Raise InvalidTargetError with error code SRK-2207; set MAX_ALIAS_LEN in config."
    assert rules.identifiers(text) == ["SRK-2207", "MAX_ALIAS_LEN"]
    assert rules.identifiers("Make codes case-sensitive base62 (0-9, a-z, A-Z).") == []


def test_each_call_gets_its_own_list_of_sentences() -> None:
    # The split is remembered for the next rule reading the same text: a caller that
    # changes its list must not change what the next one gets.
    text = "We chose SQLite. Because it is simple.\nkeep the tests"
    first = rules.sentences(text)
    first.append("changed")
    assert rules.sentences(text) == ["We chose SQLite.", "Because it is simple.", "keep the tests"]
    assert [d[:2] for d in rules.decisions(text)] == [("We chose SQLite.", "it is simple.")]


# --- rules read on real sessions (shared/samples/real-devset) ---------------------------


def test_pasted_errors_are_read_from_where_the_error_starts() -> None:
    # ctxeval-tree-view turn 3: a browser console pasted whole, stack frames and all.
    console = (
        'The "Tree view" makes everything bugged. [App] Not an active job\n'
        "2chunk-z33mq3ks.js:31200 Uncaught ContextError: useContext returned `undefined`. "
        "Seems you forgot to wrap component within <ChakraProvider />\n"
        "    at useSlotRecipe (chunk-z33mq3ks.js:35506:15)\n"
        "logCapturedError @ chunk-z33mq3ks.js:15346Understand this error\n"
    )
    assert rules.pasted_errors(console) == [
        "Uncaught ContextError: useContext returned `undefined`. Seems you forgot to wrap "
        "component within <ChakraProvider />"
    ]
    # nimbus-report-ui turn 4: the UI's message glued to the parser's.
    assert rules.pasted_errors(
        "Unable to load reviewUnexpected token '<', \"<!doctype \"... is not valid JSON"
    ) == ["Unexpected token '<', \"<!doctype \"... is not valid JSON"]
    assert rules.pasted_errors(
        'Traceback (most recent call last):\n  File "a.py", line 1\n'
        "sqlite3.IntegrityError: UNIQUE constraint failed: links.code"
    ) == ["sqlite3.IntegrityError: UNIQUE constraint failed: links.code"]
    # Talk about errors is not an error.
    assert rules.pasted_errors("fix the error handling in the parser, and the ErrorBoundary") == []
    assert rules.pasted_errors("Why do we need VITE_NIMNUS_API_BASE_URL to be able to see?") == []


def test_constraints_are_instructions_not_statements_or_code() -> None:
    # omp-prompt-speed turn 10: a bug report, not a rule.
    assert (
        rules.constraints("Seems like CMD is now broken. I don't see a prompt anymore at all.")
        == []
    )
    # omp-template-trust turn 1: a pasted report's code comment.
    assert rules.constraints("Code:\n// make sure we resolve all templates\nreturn x") == []
    assert rules.constraints("```go\n// never do this\n```\nKeep the API stable.") == [
        "Keep the API stable."
    ]
    assert rules.constraints(
        "internal changes are never breaking changes, only configuration behaviour is."
    ) == ["internal changes are never breaking changes, only configuration behaviour is."]


def test_rules_closing_a_long_pasted_task_are_read_clause_by_clause() -> None:
    # agentv-sync-pr turn 1 (shortened): one sentence, rules after a ";", a terminal's frame.
    task = (
        "Create a worktree off latest origin/main, then open a draft PR that adds an "
        "auto_merged_remote boolean signal set only in the diverged 3-way-merge branch of  "
        "\u2503  resolveResultBranchPushConflict, plumbs it snake_case through "
        "mergeDirectPushResults to the dashboard types and renders a toast in the Dashboard "
        "so users know a push silently absorbed concurrent remote changes; never force-push, "
        "snake_case wire / camelCase TS, add core + dashboard tests, and get it reviewed "
        "\u2503   before squash-merge."
    )
    [rule] = rules.constraints(task)
    assert rule.startswith("never force-push, snake_case wire / camelCase TS")
    assert "\u2503" not in rule


def test_a_question_is_taken_up_by_the_next_request() -> None:
    q = "Which do you want?"
    assert rules.answers("do stack, fix it", q)  # omp-prompt-speed turn 2
    assert rules.answers(
        "but Render[T Trusted | Untrusted] would work, no?", "Want me to leave it?"
    )
    numbered = "1. I like the label.\n2. I love the idea.\n3. No idea yet. " + "More words. " * 20
    assert rules.answers(numbered, "For polyglot rollout, what are your top 2 languages?")


def test_the_agents_account_of_a_turn() -> None:
    closing = (
        "Fixed and committed as [cdb4bfe8](https://github.com/x/y/commit/cdb4bfe8).\n\n"
        "**What changed:**\n- `terminal.SetParentColors` — push to stack tail (O(1)).\n"
        "Want me to push?"
    )
    said = rules.account(closing)
    assert said.startswith("Fixed and committed as cdb4bfe8.")
    assert "](" not in said
    assert "?" not in said
    assert "**" not in said
    assert rules.account("Done.") == ""
    assert rules.account(
        "## Analysis\n\nThe real bug class: not one sink but every one."
    ).startswith("The real bug class")


def test_a_choice_still_to_be_made_is_no_decision() -> None:
    # omp-prompt-speed turn 4's closing message.
    assert rules.decisions("Needs a decision: capture tail colors before reset, or move it.") == []
    assert rules.decisions("Decision: the id column is now AUTOINCREMENT.") != []


def test_work_in_progress_is_no_finding() -> None:
    # agentv-sync-pr turn 5: the agent says what it is doing.
    doing = "I’m finding every remaining config/type/doc/test reference so the change is whole."
    assert rules.findings(doing) == []
    assert rules.findings(doing.replace("’", "'")) == []
    found = "Important finding: `clean_alias()` silently truncates every alias to 24 characters."
    assert rules.findings(found) == [found]


def test_narration_is_no_finding() -> None:
    # graph-trail-review turn 5: a plan that names findings.
    plan = "I’ll record each validated issue as a finding on trail 10, then fix them."
    assert rules.findings(plan) == []
    assert rules.findings("Let me note that down.") == []


def test_a_decision_keeps_the_names_of_its_whole_sentence() -> None:
    # omp-template-trust: the sink's new function is named past the decision's cut.
    long = "Decision: the one sink that re-renders a string built from raw folder names " * 2
    [(_, _, named)] = rules.decisions(f"{long} switched to the new `template.RenderRestricted`.")
    assert named == ["template.RenderRestricted"]


def test_a_list_items_marker_is_not_part_of_its_sentence() -> None:
    # Seen on a real Claude Code log: a decision read "- `writer.go`: …" and was listed
    # as "- - `writer.go`: …" in the summary.
    text = "Fixed.\n- `writer.go`: real push instead of a copy.\n* second\n-flag stays as written"
    assert rules.sentences(text) == [
        "Fixed.",
        "`writer.go`: real push instead of a copy.",
        "second",
        "-flag stays as written",
    ]
