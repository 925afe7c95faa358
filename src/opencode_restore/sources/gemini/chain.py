"""Whether two Gemini CLI files are one session (``sources.chain``).

A resumed Gemini chat keeps its ``sessionId`` (a legacy ``.json`` chat continued in a
``.jsonl`` one included), so files of one session carry the same id.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..chain import HEAD_BYTES, ChainLink

_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')


def chain_link(path: Path) -> ChainLink:
    """The session id in ``path``'s head (a pretty-printed legacy chat too)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return ChainLink(None)
    match = _SESSION_ID.search(head)
    return ChainLink(match.group(1).decode("utf-8", "replace") if match else None)
