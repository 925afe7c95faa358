"""shell_files: the files a shell command reads, writes or deletes, read from its text.

Agents change files through the shell too (``cat > f <<EOF``, ``sed -i``, ``git rm``), and
Codex reads files with ``sed -n``/``cat``. This is a best-effort reading of those common
idioms, not a shell: heredoc bodies are dropped, the rest is tokenized with ``shlex`` into
simple commands split at ``&&``, ``||``, ``;``, ``|``, ``&`` and newlines, and each simple
command is matched against the programs below. Anything else (``python x.py``) touches no
file we can name. It never raises: unbalanced quotes fall back to a line-by-line reading.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator, Sequence
from typing import Literal

import regex

#: ``write`` is created-or-edited (the caller knows whether the file is new in the session);
#: ``touch`` creates a new file and does nothing to an existing one.
ShellOp = Literal["read", "edited", "write", "touch", "deleted"]

_PUNCT = frozenset("();<>|&\n")
_HEREDOC = regex.compile(
    r"(?<!<)<<(?!<)(?P<tabs>-?)[ \t]*"
    r"(?:'(?P<sq>[^'\n]*)'|\"(?P<dq>[^\"\n]*)\"|\\?(?P<bare>[^\s;&|<>()'\"]+))"
)
_ASSIGNMENT = regex.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: Longer scripts are read only this far: shlex walks text a character at a time.
_MAX_CHARS = 64_000

_READERS: dict[str, frozenset[str]] = {
    # program -> its options that take a value
    "cat": frozenset(),
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid"}),
    "less": frozenset({"-p", "-x", "-y", "-b", "-h", "-j", "-o", "-O", "-t", "-T", "-z"}),
    "more": frozenset({"-n"}),
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "bat": frozenset({"-l", "--language", "-r", "--line-range", "-H", "--highlight-line"}),
}
_WRAPPERS = {"sudo", "env", "command", "builtin", "exec", "nohup", "time", "nice"}
_COPY_VALUES = frozenset({"-t", "--target-directory", "-S", "--suffix"})
_TOUCH_VALUES = frozenset({"-d", "--date", "-t", "-r", "--reference"})


def strip_heredocs(command: str) -> str:
    """``command`` without heredoc bodies (the lines up to each ``<<DELIM``'s end line)."""
    out: list[str] = []
    pending: list[tuple[str, bool]] = []
    for line in command.split("\n"):
        if pending:
            delim, tabs = pending[0]
            text = line.rstrip("\r")
            if (text.lstrip("\t") if tabs else text) == delim:
                pending.pop(0)
            continue
        out.append(line)
        for m in _HEREDOC.finditer(line):
            quoted = m.group("sq") if m.group("sq") is not None else m.group("dq")
            delim = quoted if quoted is not None else m.group("bare")
            pending.append((delim, m.group("tabs") == "-"))
    return "\n".join(out)


def _lex(text: str) -> list[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    lex.commenters = ""  # a '#' would swallow the newline that ends its command
    return list(lex)


# Without quotes or backslashes shlex's result is plain words and runs of punctuation;
# a regex gives it 20x faster (shlex reads one character at a time in Python).
_PLAIN_TOKEN = regex.compile(r"[();<>|&\n]+|[^ \t\r();<>|&\n]+")
_QUOTING = regex.compile(r"['\"\\]")


def _tokens(text: str) -> list[str]:
    if not _QUOTING.search(text):
        plain: list[str] = _PLAIN_TOKEN.findall(text)
        return plain
    try:
        return _lex(text)
    except ValueError:  # unbalanced quotes: keep what each line says on its own
        tokens: list[str] = []
        for line in text.split("\n"):
            with contextlib.suppress(ValueError):
                tokens.extend(_lex(line))
            tokens.append("\n")
        return tokens


def _is_operator(token: str) -> bool:
    return bool(token) and set(token) <= _PUNCT


_Redirect = tuple[str, str]


def _simple_commands(tokens: Sequence[str]) -> Iterator[tuple[list[str], list[_Redirect]]]:
    """Each simple command's words (comments cut) and its redirections (operator, target)."""
    words: list[str] = []
    redirects: list[_Redirect] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not _is_operator(tok):
            words.append(tok)
            continue
        if "<" in tok or ">" in tok:
            if words and words[-1].isdigit():
                words.pop()  # the file descriptor of ``2> err.log``
            if i < len(tokens) and not _is_operator(tokens[i]):
                redirects.append((tok, tokens[i]))
                i += 1
            continue
        yield _uncommented(words), redirects
        words, redirects = [], []
    yield _uncommented(words), redirects


def _uncommented(words: list[str]) -> list[str]:
    for n, word in enumerate(words):
        if word.startswith("#"):
            return words[:n]
    return words


def _usable(path: str) -> bool:
    return (
        bool(path.strip())
        and path != "-"
        and not path.startswith(("/dev/", "/proc/"))
        and "$" not in path
        and "`" not in path
    )


def _operands(args: Sequence[str], with_value: frozenset[str]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments, and the values of the options in ``with_value``."""
    operands: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            values[name] = value
        elif arg in with_value:
            if i < len(args):
                values[arg] = args[i]
                i += 1
        elif not (arg.startswith("-") and len(arg) > 1):
            operands.append(arg)
    return operands, values


def _unwrapped(words: list[str]) -> list[str]:
    """The command behind ``sudo``/``env``/``timeout`` and leading ``VAR=value`` words."""
    while words:
        head = os.path.basename(words[0])
        if _ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif head in _WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif head == "timeout":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-s", "-k") else words[1:]
            words = words[1:]  # the duration
        else:
            break
    return words


def _sed(args: Sequence[str]) -> list[tuple[str, ShellOp]]:
    in_place = script_given = False
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg in ("-e", "--expression", "-f", "--file"):
            script_given, i = True, i + 1
        elif arg.startswith(("--expression=", "--file=")):
            script_given = True
        elif arg.startswith("--in-place"):
            in_place = True
        elif arg.startswith("--"):
            continue
        elif arg.startswith("-") and len(arg) > 1:
            for n, flag in enumerate(arg[1:], start=2):
                if flag == "i":  # the rest of the word is a backup suffix
                    in_place = True
                    if arg == "-i" and i < len(args) and args[i] == "":
                        i += 1  # BSD ``sed -i '' SCRIPT FILE``: an empty suffix word
                    break
                if flag in "ef":  # ``-ne SCRIPT``: the script follows, here or as the next word
                    script_given = True
                    i += 1 if n == len(arg) else 0
                    break
        else:
            operands.append(arg)
    files = operands if script_given else operands[1:]
    op: ShellOp = "edited" if in_place else "read"
    return [(f, op) for f in files]


def _targets(args: Sequence[str], with_value: frozenset[str]) -> tuple[list[str], list[str]]:
    """Sources and destinations of ``cp``/``mv``: ``a b``, ``a b dir/`` or ``-t dir a b``."""
    operands, values = _operands(args, with_value)
    directory = values.get("-t") or values.get("--target-directory")
    if directory is None:
        if len(operands) < 2:
            return [], []
        *sources, dest = operands
        if len(sources) == 1 and not dest.endswith("/") and dest not in (".", ".."):
            return sources, [dest]
        directory = dest
    else:
        sources = operands
    return sources, [os.path.join(directory, os.path.basename(s.rstrip("/"))) for s in sources]


def _program_ops(words: list[str]) -> list[tuple[str, ShellOp]]:
    if not words:
        return []
    prog, args = os.path.basename(words[0]), words[1:]
    if prog == "git" and args and args[0] in ("rm", "mv"):
        prog, args = f"git-{args[0]}", args[1:]
        if any(a in ("-n", "--dry-run") for a in args):
            return []
    if prog in _READERS:
        return [(f, "read") for f in _operands(args, _READERS[prog])[0]]
    if prog == "sed":
        return _sed(args)
    if prog == "tee":
        return [(f, "write") for f in _operands(args, frozenset())[0]]
    if prog == "touch":
        return [(f, "touch") for f in _operands(args, _TOUCH_VALUES)[0]]
    if prog in ("rm", "unlink") or (prog == "git-rm" and "--cached" not in args):
        return [(f, "deleted") for f in _operands(args, frozenset())[0]]
    if prog == "cp":
        sources, dests = _targets(args, _COPY_VALUES)
        return [(s, "read") for s in sources] + [(d, "write") for d in dests]
    if prog in ("mv", "git-mv"):
        sources, dests = _targets(args, _COPY_VALUES)
        return [(s, "deleted") for s in sources] + [(d, "write") for d in dests]
    return []


def _redirect_ops(redirects: Sequence[_Redirect]) -> list[tuple[str, ShellOp]]:
    ops: list[tuple[str, ShellOp]] = []
    for op, target in redirects:
        if op == "<":
            ops.append((target, "read"))
        elif ">" in op and "<" not in op:
            if op.endswith("&") and (target.isdigit() or target == "-"):
                continue  # ``2>&1``: a descriptor, not a file
            ops.append((target, "write"))
    return ops


def shell_file_ops(command: str) -> list[tuple[str, ShellOp]]:
    """The files ``command`` reads, edits, writes, touches or deletes, in order.

    Relative paths are joined to the directory of an earlier ``cd`` in the same command.
    """
    text = strip_heredocs(command)[:_MAX_CHARS]
    found: list[tuple[str, ShellOp]] = []
    cwd = ""
    for words, redirects in _simple_commands(_tokens(text)):
        words = _unwrapped(words)
        if words and words[0] == "cd":
            target = next((w for w in words[1:] if not w.startswith("-")), "")
            cwd = os.path.join(cwd, target) if _usable(target) else cwd
            continue
        for path, op in _program_ops(words) + _redirect_ops(redirects):
            if _usable(path):
                found.append((os.path.join(cwd, path), op))
    return found
