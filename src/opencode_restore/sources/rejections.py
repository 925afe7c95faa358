"""Tool calls that never ran because someone said no, read from the result the agent got.

Agents answer a refused tool call with a canned result text, not a flag:

* Claude Code: "The user doesn't want to proceed with this tool use. The tool use was
  rejected (eg. if it was a file edit, the new_string was NOT written to the file)." then
  either "STOP what you are doing and wait for the user to tell you how to proceed." or
  "To tell you how to proceed, the user said:\\n<the user's words>"; a rejected plan says
  "The agent proposed a plan that was rejected by the user"; "Permission for this tool
  use was denied" is a permission rule (or a sub-agent's), not a person;
* Codex: the whole output is "patch rejected by user" or "exec command rejected by user";
  a command the automatic approval review refused fails with ``Rejected("...")``;
* opencode: "The user rejected permission to use this specific tool call." (with
  "with the following feedback: <the user's words>" when they typed some);
* Gemini CLI: "[Operation Cancelled] Reason: User did not allow tool call".

``mark_rejection`` puts what it finds on the result: ``meta["rejected"] = True`` when the
user refused (with ``meta["user_said"]``, the user's own words, when there are some), or
``meta["denied"] = "policy"`` when a rule or a reviewer did. Either way the call did
nothing, and the result is an error.
"""

from __future__ import annotations

import regex

from ..model import Message

_CLAUDE_REJECTED = "The user doesn't want to proceed with this tool use."
_CLAUDE_TAKE_ACTION = "The user doesn't want to take this action right now."
_CLAUDE_SAID = regex.compile(r"To tell you how to proceed, the user said:\s*")
_CLAUDE_PLAN = "The agent proposed a plan that was rejected by the user"
_CLAUDE_DENIED = "Permission for this tool use was denied."
#: A note some builds append after the user's words; it is the harness's, not theirs.
_CLAUDE_NOTE = regex.compile(
    r"\n\s*\n\s*Note: The user's next message may contain.*\Z", regex.DOTALL
)
#: What Claude Code puts after "the user said:" for AskUserQuestion's "clarify": its own text.
_HARNESS_SAID = ("The user wants to clarify these questions.",)
_CODEX_USER = frozenset({"patch rejected by user", "exec command rejected by user"})
#: Lowering never shortens a text: a longer head is none of them, and is not lowered
#: (lowering every tool result's 4,000-character head was most of this module's cost).
_CODEX_USER_LONGEST = max(map(len, _CODEX_USER))
_CODEX_POLICY = regex.compile(r"^\S+ failed for `.*?`: [^\n]{0,80}?\bRejected\(", regex.DOTALL)
_OPENCODE_REJECTED = "The user rejected permission to use this specific tool call"
_OPENCODE_FEEDBACK = regex.compile(r"with the following feedback:\s*")
_GEMINI_CANCELLED = regex.compile(
    r"^(?:\[Operation Cancelled\] Reason: )?User did not allow tool call\b"
)
#: Only the start of a result is looked at: a rejection is the whole (short) result.
_HEAD = 4000


def rejection(text: str) -> tuple[str, str | None] | None:
    """``("user", words)`` or ``("policy", None)`` when a tool result says the call was
    refused (``words``: what the user typed, if anything), else ``None``."""
    head = text[:_HEAD].strip()
    if head.startswith((_CLAUDE_REJECTED, _CLAUDE_TAKE_ACTION)):
        said = _CLAUDE_SAID.search(text)
        if said is None:
            return "user", None
        words = _CLAUDE_NOTE.sub("", text[said.end() :]).strip()
        return "user", (words if words and not words.startswith(_HARNESS_SAID) else None)
    if head.startswith(_CLAUDE_PLAN):
        return "user", None
    if head.startswith(_CLAUDE_DENIED):
        return "policy", None
    bare = head.rstrip(".")
    if len(bare) <= _CODEX_USER_LONGEST and bare.lower() in _CODEX_USER:
        return "user", None
    if _CODEX_POLICY.match(head):
        return "policy", None
    if head.startswith(_OPENCODE_REJECTED) or head.startswith("Error: " + _OPENCODE_REJECTED):
        feedback = _OPENCODE_FEEDBACK.search(head)
        words = head[feedback.end() :].strip() if feedback is not None else ""
        return "user", words or None
    if _GEMINI_CANCELLED.match(head):
        return "user", None
    return None


def mark_rejection(m: Message) -> Message:
    """Mark tool result ``m`` as refused when its text says so (see the module doc)."""
    found = rejection(m.text)
    if found is None:
        return m
    by, words = found
    m.is_error = True
    if by == "user":
        m.meta["rejected"] = True
        if words:
            m.meta["user_said"] = words
    else:
        m.meta["denied"] = by
    return m
