"""Errors in what tools returned: which lines are errors, which commands failed and
which passed. Precision first: a search that found nothing, a commit with nothing to
commit and a test run whose summary says nothing failed are not failures, whatever
words their output holds."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import regex

from ..model import Message, Turn
from .wording import short

# No leading `^.*`: that form backtracks over the whole of a huge line at every match
# attempt. A hit is widened to its line afterwards, with plain string searches.
_ERROR_MARK = regex.compile(
    r"Traceback \(most recent call last\)|Error:|\bERROR\b|\bFAILED\b|\bfatal:|"
    r"\bcommand not found\b|\bNo such file or directory\b|\bexit (?:code|status) [1-9]"
)
_MAX_FACT_CHARS = 300
_LEAD_CHARS = 80
# Of a huge tool output only the head and the tail are scanned: errors show up at the
# start (a refused command) or the end (a traceback, a failing exit), seldom in between.
SCAN_HEAD_CHARS = 100_000
SCAN_TAIL_CHARS = 100_000
# Enough hits for the traceback rule below; more lines only cost time.
_MAX_HITS = 200


def scanned_text(text: str) -> str:
    """The part of ``text`` searched for errors: all of it, or its head and tail when huge."""
    if len(text) <= SCAN_HEAD_CHARS + SCAN_TAIL_CHARS:
        return text
    return f"{text[:SCAN_HEAD_CHARS]}\n{text[-SCAN_TAIL_CHARS:]}"


def _error_hits(text: str) -> list[str]:
    """The lines that hold an error mark, each cut to a window around the mark."""
    found: list[str] = []
    pos = 0
    while len(found) < _MAX_HITS and (match := _ERROR_MARK.search(text, pos)) is not None:
        start, end = match.span()
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        # A long line is cut to a little before the mark and the rest of the fact after it
        # (a multi-megabyte line is never flattened whole).
        lead = max(line_start, start - _LEAD_CHARS)
        piece = text[lead : min(line_end, end + _MAX_FACT_CHARS)].strip()
        found.append(f"…{piece}" if lead > line_start else piece)
        pos = line_end + 1
    return found


# The markup a tool wraps its error in (Claude Code's ``<tool_use_error>``): not the error.
_TAG = regex.compile(r"</?[a-z][a-z_-]*>")


#: The error line of a failed call that printed nothing.
NO_OUTPUT = "(error, no output)"


@lru_cache(maxsize=1024)
def _error_lines(kind: str, is_error: bool, text: str) -> tuple[str, ...]:
    found = _error_hits(text)
    if kind == "tool_result" and is_error and not found:
        first = next((ln for ln in text.splitlines() if ln.strip()), NO_OUTPUT)
        found = [first.strip()]
    # The exception line of a traceback is the last one that names an error.
    if any(f.startswith("Traceback") for f in found):
        named = [f for f in found if not f.startswith("Traceback")]
        found = named[-1:] or found[:1]
    return tuple(short(_TAG.sub("", f), 300) for f in found[:3])


def error_lines(m: Message) -> list[str]:
    """Error evidence in a tool result or assistant text: failing exits, tracebacks, errors.

    Computed once per distinct (scanned) text: the same message is asked about by every
    stage that builds facts.
    """
    if m.type not in ("tool_result", "text"):
        return []
    text = output_body(m.text) if m.type == "tool_result" else m.text
    return list(_error_lines(m.type, bool(m.is_error), scanned_text(text)))


def reports_failure(m: Message) -> bool:
    """True when a tool's result says the call failed: the log marks it an error, or its
    output opens with an error. Error words further down are output the tool passed on
    (a log it printed, a file it showed), not its failure."""
    if m.is_error:
        return True
    head = output_body(m.text).lstrip()[:300]
    first = head.split("\n", 1)[0]
    return bool(first) and _ERROR_MARK.search(first) is not None


_READ_TOOLS = frozenset(
    {
        "read",
        "read_file",
        "readfile",
        "view",
        "glob",
        "grep",
        "ls",
        "list",
        "list_directory",
        "search",
        "search_file_content",
        "find",
        "webfetch",
        "web_fetch",
        "websearch",
        "todoread",
    }
)
_READ_PROGRAMS = frozenset(
    {
        "cd",
        "cat",
        "head",
        "tail",
        "grep",
        "rg",
        "ls",
        "find",
        "wc",
        "nl",
        "less",
        "more",
        "tree",
        "file",
        "stat",
        "pwd",
        "echo",
        "which",
        "type",
        "du",
        "df",
        "diff",
        "cmp",
    }
)
_GIT_READS = frozenset({"status", "diff", "log", "show", "grep", "blame", "branch", "ls-files"})
# GitHub's CLI asking about a pull request, a CI run or an issue: it reports their state
# (a failing check is the PR's state, not a failure of the query).
_GH_READS = regex.compile(r"^(?:pr|run|issue|release) (?:checks|view|list|diff|status|watch)\b")
_EXCEPTION = regex.compile(r"^\s*(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Warning)\b.*")
_FAILED_OUTPUT = regex.compile(
    r"Traceback \(most recent|\bFAILED\b|\bexit (?:code|status):? [1-9]", regex.I
)
#: A test run's closing count that says nothing failed ("1274 pass / 0 fail", "5 passed",
#: "Tests: 3 passed, 3 total", "OK (12 tests)"); a non-zero failure count says otherwise.
_PASSED_SUMMARY = regex.compile(
    r"(?m)^\W*(?:0 (?:fail|failed|failures|failing|errors?)\b|=*\s*\d+ passed\b"
    r"|Tests?:\s+\d+ passed\b|OK \(\d+ tests?\)|ok\s*$)"
)
_FAILED_COUNT = regex.compile(r"\b[1-9]\d* (?:fail|failed|failures|failing|errors?)\b", regex.I)
#: Where a failing run says so: its last lines (a traceback, a summary, the exit status);
#: a test of an error path prints error words in the middle of a passing run.
_TAIL_LINES = 15
_NOTHING_TO_COMMIT = regex.compile(
    r"\bnothing (?:added )?to commit\b|\bno changes added to commit\b"
)
_EXIT_LINE = regex.compile(r"^\s*(?:exit (?:code|status):?\s*\d+)\s*$", regex.I)
_STATED_EXIT = regex.compile(r"\s*Exit code (\d+)\b")
# The header some agents put above a command's output (Codex's exec envelope: "Chunk ID",
# "Wall time", "Process exited with code N", "Original token count", then "Output:";
# Claude Code's "Exit code N" line): the status is read from it, the rest is not output.
_ENVELOPE = regex.compile(
    r"\A(?:(?:Chunk ID|Wall time|Process exited with code|Original token count|Exit code:?"
    r"|Script completed|Script failed)"
    r"[^\n]*\n)+(?:Output:\n)?"
)
# A read of a path that is not there: exploration, not an error of the work.
_MISSING = regex.compile(
    r"does not exist|no such file|not found|is a directory|EISDIR|ENOENT|has not been read yet",
    regex.I,
)
_SEARCH_PROGRAMS = frozenset({"grep", "rg", "egrep", "fgrep", "ag", "find", "ls", "test", "["})


def refused(turn: Turn, lab: Any) -> list[dict[str, Any]]:
    """Commands refused before they ran, by whom (the user, or a rule or reviewer: the
    readers' ``meta["rejected"]`` / ``meta["denied"]``) and why."""
    results = {
        m.tool_call_id: m for m in turn.messages if m.type == "tool_result" and m.tool_call_id
    }
    calls = {m.id: m for m in turn.messages if m.type == "tool_use"}
    out = []
    for c in turn.commands:
        if not c.rejected:
            continue
        call = calls.get(c.message_id)
        res = results.get(call.tool_call_id) if call is not None and call.tool_call_id else None
        by = "policy" if res is not None and res.meta.get("denied") else "user"
        reason = refusal_reason(res.text) if res is not None else ""
        out.append(
            {
                "command": short(c.command, 160),
                "by": by,
                "reason": reason,
                "label": lab(c.message_id),
            }
        )
    return out


# A redirection that only joins or drops output writes no file.
_HARMLESS_REDIRECT = regex.compile(r"\d?>&\d|\d?>\s*/dev/null")


def shell_parts(command: str) -> tuple[list[str], bool]:
    """The simple commands of a shell line (split at ``&&``, ``||``, ``;``, ``|`` and line
    breaks outside quotes) and whether it redirects output into a file. Quotes are kept
    whole: ``rg "a|b"`` is one command, ``rg '->'`` redirects nothing."""
    text = _HARMLESS_REDIRECT.sub(" ", command[:20_000])
    parts: list[str] = []
    writes = False
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                current.append(text[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        elif ch in ";|&\n":
            if ch == "&" and text[i + 1 : i + 2] != "&":
                current.append(ch)  # a background job's "&" ends nothing we read
                i += 1
                continue
            parts.append("".join(current))
            current = []
            i += 2 if text[i : i + 2] in ("&&", "||") else 1
            continue
        elif ch == ">":
            writes = True
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return [p for p in parts if p.strip()], writes


def read_only(command: str) -> bool:
    """True for a shell command that only looks (``cat``, ``sed -n``, ``grep``, ``git diff``):
    no program of it writes, and its output is file or repository content, not a result."""
    parts, writes = shell_parts(command)
    if writes:
        return False
    for part in parts:
        words = part.split()
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog == "sed" and "-i" not in words and not any(w.startswith("-i") for w in words):
            continue
        if prog == "git" and len(words) > 1 and words[1] in _GIT_READS:
            continue
        if prog == "gh" and _GH_READS.match(" ".join(words[1:3])):
            continue
        if prog not in _READ_PROGRAMS:
            return False
    return True


#: Tools that keep the agent's own notes (plans, to-do lists): no action on the world.
_NOTE_TOOLS = frozenset({"todowrite", "todo_write", "update_plan", "todoread", "exitplanmode"})


_CHANGING_TOOL = regex.compile(r"patch|edit|write|replace|create_file|delete_file|move_file")


def other_calls(turn: Turn) -> dict[str, int]:
    """How many times the turn called each tool that neither read, ran a command, nor
    changed a file (a browser, a web search, an MCP tool, a sub-agent): the turn's actions
    when it has no other."""
    changed = {a.message_id for a in (*turn.artifacts, *turn.failed_artifacts)}
    changed |= {c.message_id for c in turn.commands}  # a command tool, whatever its input
    counts: dict[str, int] = {}
    for m in turn.messages:
        if m.type != "tool_use" or not m.tool_name or m.id in changed:
            continue
        name = m.tool_name.lower()
        args = m.tool_input or {}
        if name in _READ_TOOLS or name in _NOTE_TOOLS or "command" in args or "cmd" in args:
            continue
        if _CHANGING_TOOL.search(name):
            continue  # a change tool whose change is listed, failed, or was not understood
        counts[m.tool_name] = counts.get(m.tool_name, 0) + 1
    return counts


def read_results(turn: Turn) -> set[str]:
    """Ids of the tool results that hold what a read returned (a read tool, a read-only
    command; a read of a path that is not there looked in the wrong place) or a command's
    output (its failure is taken from ``shell_outcomes``)."""
    calls = {m.tool_call_id: m for m in turn.messages if m.type == "tool_use" and m.tool_call_id}
    ran = {c.message_id for c in turn.commands}  # whatever input shape the command came in
    out = set()
    for m in turn.messages:
        call = calls.get(m.tool_call_id) if m.type == "tool_result" and m.tool_call_id else None
        if call is None:
            continue
        if call.id in ran:
            out.add(m.id)
            continue
        failed_read = m.is_error and (call.tool_name or "").lower() in _READ_TOOLS
        if failed_read and not _MISSING.search(m.text[:2000]):
            continue  # a read that failed otherwise says why in its result: an error
        name = (call.tool_name or "").lower()
        command = (call.tool_input or {}).get("command") or (call.tool_input or {}).get("cmd")
        if name in _READ_TOOLS or isinstance(command, (str, list)):
            out.add(m.id)
    return out


def _exception_line(text: str) -> str | None:
    """The exception line of a traceback or test run (the last one), if the output has one."""
    found = None
    for line in scanned_text(text).splitlines():
        # "Exit Code: 1" (Gemini's status line) names no exception.
        if _EXCEPTION.match(line) and ":" in line and not _EXIT_LINE.match(line):
            found = line.strip()
    return short(found, 200) if found else None


def _result_object(body: str) -> dict[str, Any] | None:
    """A command result a script printed as JSON (Codex's code mode prints exec_command's
    ``{"exit_code": …, "output": …}``), else None."""
    start = body.lstrip()[:1]
    if start != "{" or '"output"' not in body[:2000] or len(body) > 2_000_000:
        return None
    try:
        found = json.loads(body)
    except ValueError:
        return None
    return found if isinstance(found, dict) and isinstance(found.get("output"), str) else None


def output_body_raw(output: str) -> str:
    """A command's output without the header its agent put above it, as printed."""
    head = _ENVELOPE.match(output[:1000])
    return output[head.end() :] if head else output


def output_body(output: str) -> str:
    """A command's output without the header its agent put above it (and out of the JSON
    a script printed it in)."""
    body = output_body_raw(output)
    printed = _result_object(body)
    return str(printed["output"]) if printed is not None else body


def _tail(text: str) -> str:
    lines = scanned_text(text).rstrip().splitlines()
    return "\n".join(lines[-_TAIL_LINES:])


def _no_match(command: str, output: str) -> bool:
    """A search that found nothing: its exit status is 1 and it printed nothing else."""
    parts, _ = shell_parts(command)
    last = parts[-1].split() if parts else []
    prog = last[0].rsplit("/", 1)[-1] if last else ""
    rest = [ln for ln in output_body(output).splitlines() if ln.strip()]
    return prog in _SEARCH_PROGRAMS and not rest


def passed_summary(output: str) -> bool:
    """True when a run's last lines hold a test summary that counts no failure."""
    tail = _tail(output)
    return bool(_PASSED_SUMMARY.search(tail)) and not _FAILED_COUNT.search(tail)


def command_failed(command: str, exit_code: int | None, is_error: bool, output: str) -> bool:
    """Whether a command run failed, by its exit status where the log has one, else by
    how its output ends. Not failures: a search that matched nothing (exit 1, no output),
    ``git commit`` with nothing to commit, a test run whose summary counts no failure."""
    if exit_code is None and (stated := _STATED_EXIT.match(output)) is not None:
        exit_code = int(stated.group(1))  # Claude Code opens a failing run's output so
    if exit_code is None and (printed := _result_object(output_body_raw(output))) is not None:
        code = printed.get("exit_code")
        exit_code = code if isinstance(code, int) else None
    if exit_code == 1 and _no_match(command, output):
        return False
    if (exit_code or is_error) and "commit" in command and _NOTHING_TO_COMMIT.search(output):
        return False
    if exit_code is not None:
        return exit_code != 0
    if is_error:
        return True
    body = output_body(output)
    if not body:
        return False
    return _FAILED_OUTPUT.search(_tail(body)) is not None and not passed_summary(body)


# How linters and test runners mark what failed when no line names an error: a cross
# ("× This let declares…"), a count ("Found 1 error.", "3 failed"), a leading "error".
_FAILURE_HINT = regex.compile(
    r"(?im)^[ \t]*(?:[×✖✗❌][ \t]*\S[^\n]*|found \d+ (?:errors?|problems?)[^\n]*"
    r"|\d+ (?:errors?|failures?|failed)\b[^\n]*|error\b[^\n]*)$"
)
_BOX = regex.compile(r"[\u2500-\u257f]+")


def failure_line(output: str) -> str:
    """The line that says why a run failed: the exception of a traceback, else the first
    error line that is more than an exit status."""
    body = output_body(output)
    found = _exception_line(body)
    if found:
        return found
    lines = _error_lines("tool_result", False, scanned_text(body))
    if lines:
        return lines[0]
    hint = _FAILURE_HINT.search(body[-20_000:])
    if hint is not None:
        return short(hint.group(0).strip(), 200)
    # No line names an error: the last words of the output say what went wrong.
    plain = _BOX.sub("", body.strip())
    last = [ln.strip() for ln in plain.splitlines()[-3:] if ln.strip()]
    return short(" ".join(last), 200) if last else ""


_ESCAPES = (("\\\\", "\\"), ('\\"', '"'), ("\\n", "\n"))
_REASON = regex.compile(r"(?m)^\s*Reason:\s*([^\n{]{3,200}?)[:\s]*(?:\{|$)")
_MESSAGE = regex.compile(r'"message"\s*:\s*"([^"\n]{3,300})"')


def refusal_reason(output: str) -> str:
    """Why a call was refused before it ran, in one line: the refusal's stated reason and
    the innermost error message it quotes (often JSON escaped several times over)."""
    text = output[:8000]
    for _ in range(4):  # each layer of quoting escaped the one inside it again
        for old, new in _ESCAPES:
            text = text.replace(old, new)
    reason = _REASON.search(text)
    inner = _MESSAGE.findall(text)
    parts = [reason.group(1).strip() if reason else "", inner[-1].strip() if inner else ""]
    said = ": ".join(p for p in parts if p)
    return short(said or output_body(output), 240)


def shell_outcomes(turn: Turn, lab: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn's failing commands (with their error line) and its passing ones; read-only
    commands are neither (their output is content, not an outcome, and one that fails
    looked in the wrong place)."""
    results = {
        m.tool_call_id: m for m in turn.messages if m.type == "tool_result" and m.tool_call_id
    }
    calls = {m.id: m for m in turn.messages if m.type == "tool_use"}
    failures: list[dict[str, Any]] = []
    passes: list[dict[str, Any]] = []
    for c in turn.commands:
        call = calls.get(c.message_id)
        res = results.get(call.tool_call_id) if call is not None and call.tool_call_id else None
        text = res.text if res is not None else ""
        item = {"command": short(c.command, 160), "label": lab(c.message_id)}
        if c.rejected or read_only(c.command):
            # A refused command never ran (``refused``); a look that failed (a wrong path,
            # no match) is exploration.
            continue
        if command_failed(c.command, c.exit_code, c.is_error, text):
            error = failure_line(text)
            failures.append(item | {"exit_code": c.exit_code, "error": error})
        else:
            passes.append(item)
    return failures, passes
