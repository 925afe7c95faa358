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
    assert rules.decisions(text) == [
        (
            "Decision: the id column is now `INTEGER PRIMARY KEY AUTOINCREMENT`.",
            "a deleted link's id must never be handed out again.",
        )
    ]
    plan = "Plan: derive the code from its row id (`cursor.lastrowid`) instead of `COUNT(*) + 1`."
    assert rules.decisions(plan) == [(plan, "")]
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
    assert rules.decisions(text) == [("We chose SQLite.", "it is simple.")]
