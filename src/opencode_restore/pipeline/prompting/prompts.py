"""Jinja2 prompt templates, one per stage, rendered with StrictUndefined.

Each template has up to four blocks, from most to least stable: ``system``
(instructions), ``context`` (session header and earlier history), ``turn`` (optional: what
every call of the current turn shares, such as its state and facts) and ``task`` (the
current call). Keeping that order lets the provider's prompt cache reuse the stable
prefix: a turn sent in several segments, or asked again, reads its ``turn`` block from
the cache.

Within a small context window (`capped_json`) every ``*_json`` value a template is given
(the accumulated state, a turn's facts, the running summary, the evidence) is cut in its
middle to a cap, marked; otherwise they are rendered whole.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ...errors import ConfigError
from ...facts.turn import cap_middle
from ...fields import one_line
from ...model import Message
from ...resources import data_path

# The tags that wrap quoted data in the templates and in the evidence loop's replies.
_DATA_TAG = re.compile(
    r"<(/?)(?=(?:session_log|evidence|turn_summaries|tool_result)\b)", re.IGNORECASE
)
# Lines that read like a header the renderer writes itself: a message ("[M2] ASSISTANT:"),
# a turn, a range summary, a system message or a notice.
_HEADER_LINE = re.compile(
    r"^(?=[ \t]*\[(?:M\d+\]|TURN \d|SUMMARY OF TURNS|SYSTEM MESSAGE\]|NOTICE\]))",
    re.MULTILINE,
)
#: Put in front of a quoted line that looks like a header, so it no longer starts like one.
QUOTED_MARK = "(quoted) "
#: The most characters of each ``*_json`` template value; None: no cap (`capped_json`).
_JSON_CAP: ContextVar[int | None] = ContextVar("json_cap", default=None)


@contextmanager
def capped_json(limit: int) -> Iterator[None]:
    """Render every ``*_json`` value within ``limit`` characters while inside: a prompt
    too big for a small context window even with its transcript cut keeps the start and
    end of each (a JSON text cut in its middle, the cut marked)."""
    token = _JSON_CAP.set(limit)
    try:
        yield
    finally:
        _JSON_CAP.reset(token)


def _capped(variables: dict[str, Any]) -> dict[str, Any]:
    limit = _JSON_CAP.get()
    if limit is None:
        return variables
    return {
        name: cap_middle(value, limit, f"the {name.removesuffix('_json')} JSON")
        if name.endswith("_json") and isinstance(value, str)
        else value
        for name, value in variables.items()
    }


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    template: str
    system: str
    context: str
    task: str
    #: Sent between the context and the task; empty for a template without the block.
    turn: str = ""


@lru_cache(maxsize=8)
def _environment(override: str | None) -> jinja2.Environment:
    search = [str(data_path("prompts"))]
    if override:
        directory = Path(override).expanduser()
        if not directory.is_dir():
            raise ConfigError(f"{directory}: prompts directory not found (config prompts.dir)")
        search.insert(0, str(directory))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        # Templates do not change during a run; checking their mtime on every render
        # was a stat per LLM call.
        auto_reload=False,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=False,
    )
    env.filters["field"] = quote_field
    return env


def quote_log(text: str) -> str:
    """Keep quoted log text from opening or closing the data tags it is wrapped in.

    ``</session_log`` becomes ``<\\/session_log`` and ``<session_log`` becomes
    ``< session_log`` (the same for every data tag, in any case). Both stay readable, and
    JSON stays valid: ``\\/`` is JSON's own escape for ``/``.
    """
    if "<" not in text:
        return text
    return _DATA_TAG.sub(lambda m: "<\\/" if m.group(1) else "< ", text)


def quote_field(value: object) -> str:
    """A log-derived metadata field (title, cwd, id) as a one-line JSON string literal.

    These fields are printed outside the ``<session_log>`` quoting, so they get the
    strictest form: one line (``fields.one_line``), in double quotes that the value
    cannot close, with the data tags quoted.
    """
    return quote_log(json.dumps(one_line(value), ensure_ascii=False))


def quote_body(text: str) -> str:
    """``quote_log`` for one message's own text, whose lines must not pass for headers.

    A line that starts like a header the renderer writes (``[M2] ASSISTANT:``,
    ``[TURN 3 · M9–M12]``) gets ``QUOTED_MARK`` in front: still readable, no longer a
    boundary. Only message bodies are quoted this way, so the real headers put around
    them stay the only lines that start like headers.
    """
    if "[" in text:
        text = _HEADER_LINE.sub(QUOTED_MARK, text)
    return quote_log(text)


def _quote_value(value: Any) -> Any:
    # Only strings are rendered as they are; anything else is JSON, its newlines escaped.
    return quote_body(value) if isinstance(value, str) else value


def quote_message(message: Message) -> Message:
    """``message`` with its text, string arguments and compaction summary quoted.

    The message itself when nothing needed quoting (the common case: no copy).
    """
    changes: dict[str, Any] = {}
    text = quote_body(message.text)
    if text != message.text:
        changes["text"] = text
    if message.tool_input:
        quoted = {key: _quote_value(value) for key, value in message.tool_input.items()}
        if quoted != message.tool_input:
            changes["tool_input"] = quoted
    compaction = message.compaction
    if compaction is not None and compaction.summary:
        summary = quote_body(compaction.summary)
        if summary != compaction.summary:
            changes["compaction"] = dataclasses.replace(compaction, summary=summary)
    return dataclasses.replace(message, **changes) if changes else message


async def quote_messages(messages: list[Message]) -> list[Message]:
    """A ``MessagesPreprocessor.transform``: every message body quoted before it is rendered."""
    return [quote_message(m) for m in messages]


def render(stage: str, override_dir: str | None = None, **variables: Any) -> RenderedPrompt:
    """Render ``prompts/<stage>.j2`` into its system, context, turn and task parts."""
    env = _environment(override_dir)
    name = f"{stage}.j2"
    variables = _capped(variables)
    try:
        template = env.get_template(name)
        parts = {}
        for block in ("system", "context", "turn", "task"):
            render_block = template.blocks.get(block)
            if render_block is None:
                parts[block] = ""
                continue
            ctx = template.new_context(variables)
            parts[block] = "".join(render_block(ctx)).strip()
    except jinja2.TemplateNotFound as exc:
        raise ConfigError(f"prompt template {exc.name!r} not found") from exc
    except jinja2.UndefinedError as exc:
        raise ConfigError(f"prompt template {name}: {exc.message}") from exc
    return RenderedPrompt(name, parts["system"], parts["context"], parts["task"], parts["turn"])
