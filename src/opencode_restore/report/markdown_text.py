"""Untrusted text as inert markdown: what the summaries write for log and model text.

(``plain`` and ``plain_quote`` at the end are for the prompt format instead: text an
agent reads, never a viewer, so nothing in it is HTML-escaped.)

Every text that comes from the log or from a model is written so that it stays text
where a markdown viewer renders it: one line (no heading or list of its own), HTML
opening brackets as ``&lt;`` (outside code spans, where nothing is interpreted), no inline
link, no image of any kind, no link reference definition, no block syntax at its start.
Images and definitions matter because a viewer fetches an image when it renders it: a
definition ``[r1]: https://host/pixel.png`` in one field and ``![x][r1]`` in another (both
model-written, each harmless alone) made an ``<img>`` that told a remote host the summary
was opened.
Paths, ids and commands go into code spans, where nothing is interpreted.

What these functions return is ``Markdown``: text already made inert (or written by this
program), which the summary template writes as is; any other string it is given goes
through ``text`` (see ``summary.py``).
"""

from __future__ import annotations

import re

from ..fields import flatten


class Markdown(str):
    """A string that is markdown already: the summary template writes it unchanged."""

    __slots__ = ()


# What makes a line a block (heading, quote, list, rule, table, fence, setext
# underline, numbered item) when it opens the line. One or two backticks open a code span,
# not a fence: escaping that backtick would unpair the spans after it.
_BLOCK_START = re.compile(r"^(?:[#>+*=|_~-]|```|\d+[.)])")
#: A complete inline code span (CommonMark: a backtick run closed by one of equal length).
#: A run after a backslash may be an escaped backtick, not a span: it is escaped as text.
_CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?!`).*?(?<!`)\1(?!`)")


def text(value: str) -> Markdown:
    """Log or model text as inert inline markdown on one line (see the module docstring)."""
    return _inline(flatten(value))


def _inline(line: str) -> Markdown:
    lead = ""
    if _BLOCK_START.match(line):
        # A backslash keeps the line from opening a block; before a backtick it also
        # keeps that backtick from opening a code span, so spans are found after it.
        lead, line = ("\\`", line[1:]) if line.startswith("`") else ("\\", line)
    # Inside a code span nothing is interpreted (and an entity would show as `&lt;`), so
    # only the text between spans is escaped.
    parts, at = [lead], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_escape(line[at : span.start()]), span.group(0)]
        at = span.end()
    return Markdown("".join([*parts, _escape(line[at:])]))


#: ``![`` opens every kind of image (inline, reference, collapsed, shortcut) and ``]:`` ends
#: the label of a link reference definition: a backslash before the ``[`` or the ``:``
#: makes either plain text, whatever else the document defines.
_IMAGE, _DEFINITION = "![", "]:"


#: A backtick outside the value's own code spans, with the backslashes right before it.
#: Unpaired in the value, it would pair with the next span on the line (the summary's
#: header puts several values on one line) and make code and markup of the text between.
_LOOSE_BACKTICK = re.compile(r"(\\*)`")


def _escape(value: str) -> str:
    # The backslashes are doubled so that they do not escape the backtick's escape.
    return (
        _LOOSE_BACKTICK.sub(lambda m: m[1] * 2 + "\\`", value)
        .replace("<", "&lt;")
        .replace("](", "]\\(")
        .replace(_IMAGE, "!\\[")
        .replace(_DEFINITION, "]\\:")
    )


def cell(value: str) -> Markdown:
    """Text for a table cell: a ``|`` would end the cell (GFM unescapes ``\\|`` in code too)."""
    return Markdown(flatten(value).replace("|", "\\|"))


def code(value: str) -> Markdown:
    """An inline code span holding ``value`` whatever backticks it contains (CommonMark)."""
    value = flatten(value)
    if not value:
        # A lone "``" is no span: it is a backtick run that pairs with the next one in the
        # line and turns the text between (a provider, a cwd) into markup.
        return Markdown("")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return Markdown(f"{fence}{pad}{value}{pad}{fence}")


def quote(value: str) -> list[Markdown]:
    """The lines of a block quote of ``value``; each quoted line is inert (see ``text``)."""
    lines = (_inline(" ".join(line.split())) for line in value.splitlines())
    return [Markdown("> " + line if line else ">") for line in lines]


#: A closing tag: quoted as ``<\\/``, so log text cannot close the tag an agent's host
#: wraps the injected context in (the same quoting as the LLM prompts' ``quote_log``).
_CLOSING_TAG = re.compile(r"<\s*/")
#: What a renderer would take for raw HTML or an autolink (``<img``, ``<!--``, ``<https:``):
#: quoted as ``<\\img``, like a closing tag. A backslash after the ``<`` (not before it,
#: which the text's own backslash would escape) keeps it text and writes no entity.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z!?])")


def plain(value: str, *, line_start: bool = False) -> Markdown:
    """Log or model text for the prompt format: one line, as written, no HTML escapes.

    The prompt is read by the next agent, and maybe rendered by its host: ``<`` and ``&``
    are no entities (an ``&lt;`` is noise the agent must decode). What could change the
    prompt's own structure or make a viewer fetch something is quoted with a backslash: a
    closing tag (``</x`` becomes ``<\\/x``), an opening tag or autolink (``<\\img``), an
    image (``!\\[``), a link reference definition (``]\\:``) and, with ``line_start``
    (text that opens a line of its own, not a list item), a heading or other block marker
    at its start (as in ``text``).
    """
    line = _CLOSING_TAG.sub("<\\\\/", flatten(value))
    # Code spans show their text as written (a backslash there would be seen), and
    # nothing in them is markup, so only the text between them is quoted.
    parts, at = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_unfetchable(line[at : span.start()]), span.group(0)]
        at = span.end()
    line = "".join([*parts, _unfetchable(line[at:])])
    if line_start and _BLOCK_START.match(line):
        line = "\\" + line
    return Markdown(line)


def _unfetchable(value: str) -> str:
    return _TAG_OPEN.sub("<\\\\", value).replace(_IMAGE, "!\\[").replace(_DEFINITION, "]\\:")


def plain_quote(value: str) -> list[Markdown]:
    """``quote`` for the prompt format: each line ``plain``, behind ``> ``."""
    lines = (plain(line) for line in value.splitlines())
    return [Markdown("> " + line if line else ">") for line in lines]
