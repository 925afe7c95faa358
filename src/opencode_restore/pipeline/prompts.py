"""Jinja2 prompt templates, one per stage, rendered with StrictUndefined.

Each template has three blocks, from most to least stable: ``system`` (instructions),
``context`` (session header and earlier history) and ``task`` (the current call). Keeping
that order lets the provider's prompt cache reuse the stable prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ..errors import ConfigError
from ..resources import data_path


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    template: str
    system: str
    context: str
    task: str


@lru_cache(maxsize=8)
def _environment(override: str | None) -> jinja2.Environment:
    search = [str(data_path("prompts"))]
    if override:
        directory = Path(override).expanduser()
        if not directory.is_dir():
            raise ConfigError(f"{directory}: prompts directory not found (config prompts.dir)")
        search.insert(0, str(directory))
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=False,
    )


def quote_log(text: str) -> str:
    """Keep quoted log text from closing the data tags it is wrapped in."""
    return text.replace("</session_log", "<\\/session_log").replace("</evidence", "<\\/evidence")


def render(stage: str, override_dir: str | None = None, **variables: Any) -> RenderedPrompt:
    """Render ``prompts/<stage>.j2`` into its system, context and task parts."""
    env = _environment(override_dir)
    name = f"{stage}.j2"
    try:
        template = env.get_template(name)
        parts = {}
        for block in ("system", "context", "task"):
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
    return RenderedPrompt(name, parts["system"], parts["context"], parts["task"])
