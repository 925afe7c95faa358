"""sources.rejections: a refused tool call is read from the result text each agent writes.

The Claude Code texts are from fixtures/claude-code/spotter/short.jsonl (lines 11-12) and
Claude Code's "the user said" form as agent-log tools quote it; the Codex texts are the
whole outputs codex-rs writes (``patch rejected by user``, ``exec command rejected by
user``) and the approval-review failure of the real-devset's graph-trail-review (line 73,
shortened); opencode's are its ``RejectedError``/``CorrectedError`` messages; Gemini's its
scheduler's cancel reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.sources import open_session
from opencode_restore.sources.rejections import _CODEX_USER, mark_rejection, rejection

CLAUDE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). "
)
CLAUDE_STOP = CLAUDE + "STOP what you are doing and wait for the user to tell you how to proceed."
CLAUDE_SAID = (
    CLAUDE + "To tell you how to proceed, the user said:\nuse pnpm, not npm\nand keep it short"
)
CLAUDE_SAID_NOTE = (
    CLAUDE_SAID + "\n\nNote: The user's next message may contain a correction or preference."
)
CLAUDE_CLARIFY = (
    CLAUDE + "To tell you how to proceed, the user said:\nThe user wants to clarify these "
    "questions.\n    This means they may have additional information"
)
CODEX_POLICY = (
    "exec_command failed for `/bin/zsh -lc 'entire login'`: CreateProcess { message: "
    '"Rejected(\\"This action was rejected due to unacceptable risk.\\nReason: Automatic '
    'approval review failed" }'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CLAUDE_STOP, ("user", None)),
        (CLAUDE_SAID, ("user", "use pnpm, not npm\nand keep it short")),
        (CLAUDE_SAID_NOTE, ("user", "use pnpm, not npm\nand keep it short")),
        (CLAUDE_CLARIFY, ("user", None)),
        (
            "The agent proposed a plan that was rejected by the user. The user chose to stay",
            ("user", None),
        ),
        ("Permission for this tool use was denied. The tool use was rejected", ("policy", None)),
        ("patch rejected by user", ("user", None)),
        ("exec command rejected by user", ("user", None)),
        (CODEX_POLICY, ("policy", None)),
        (
            "The user rejected permission to use this specific tool call. You may try again.",
            ("user", None),
        ),
        (
            "The user rejected permission to use this specific tool call with the following "
            "feedback: edit the test instead",
            ("user", "edit the test instead"),
        ),
        ("[Operation Cancelled] Reason: User did not allow tool call", ("user", None)),
    ],
)
def test_rejections_are_read(text: str, expected: tuple[str, str | None]) -> None:
    assert rejection(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "File created successfully at: /w/a.py",
        # A rejection quoted inside other output (a grep hit, source code) is not one.
        "src/x.ts:12:  return 'patch rejected by user';",
        "$ rg rejected\nThe user doesn't want to proceed with this tool use.",
        "patch rejected by user because the hunk did not apply",  # not the whole output
        "exec_command failed for `ls`: No such file or directory",
        "Error: exit code 1",
    ],
)
def test_other_results_are_not_rejections(text: str) -> None:
    assert rejection(text) is None


def test_mark_rejection_sets_the_keys() -> None:
    m = mark_rejection(Message("r", "tool", "tool_result", CLAUDE_SAID))
    assert m.is_error
    assert m.meta == {"rejected": True, "user_said": "use pnpm, not npm\nand keep it short"}
    policy = mark_rejection(Message("p", "tool", "tool_result", CODEX_POLICY))
    assert policy.is_error
    assert policy.meta == {"denied": "policy"}
    plain = mark_rejection(Message("o", "tool", "tool_result", "ok"))
    assert not plain.is_error
    assert plain.meta == {}


def test_claude_reader_marks_the_real_rejections(fixtures: Path) -> None:
    path = fixtures / "claude-code" / "spotter" / "short.jsonl"
    messages = open_session([path], WarningSink()).messages()
    rejected = [m for m in messages if m.meta.get("rejected")]
    assert len(rejected) == 2
    assert all(m.type == "tool_result" and m.is_error for m in rejected)
    assert all("user_said" not in m.meta for m in rejected)


#: Codex's words in any case, with dots, spaces, and characters whose lowercase is longer.
codex_like = st.builds(
    lambda words, dots, pad, odd: pad + odd + words + "." * dots + pad,
    st.sampled_from(sorted(_CODEX_USER)).map(str.upper) | st.sampled_from(sorted(_CODEX_USER)),
    st.integers(0, 40),
    st.sampled_from(["", " ", "\n"]),
    st.sampled_from(["", "\u0130", "\u1e9e"]),
)


@given(codex_like | st.text(max_size=60))
def test_codex_words_are_found_as_by_lowering_the_whole_head(text: str) -> None:
    # The plain rule, before the length check that skips lowering long heads; no other
    # agent's rejection starts like these texts.
    plain = text[:4000].strip().lower().rstrip(".") in _CODEX_USER
    assert (rejection(text) == ("user", None)) == plain
