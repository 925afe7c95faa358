"""The token estimate every budget uses: characters / 3.5, rounded up.

Standard library only: ``opencode-restore hook`` counts its start-of-session digest with
it, and a hook must start fast (``prompting.render`` imports the LLM layer).
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 3.5


def raw_tokens(chars: int) -> int:
    """The offline estimate before correction: characters / 3.5, rounded up."""
    return math.ceil(chars / CHARS_PER_TOKEN)
