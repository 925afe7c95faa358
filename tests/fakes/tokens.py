"""The fakes' tokenizer: characters / 3.5, rounded up, over a JSON value's text."""

from __future__ import annotations

import math
from typing import Any

CHARS_PER_TOKEN = 3.5
# Structural fields that a real tokenizer would barely see.
_NOT_TEXT = {"type", "role", "cache_control"}


def tokens(chars: int) -> int:
    """The fake tokenizer: chars / 3.5, rounded up."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def text_chars(value: Any) -> int:
    """Characters of the strings in a JSON value (keys and structural fields excluded)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(text_chars(v) for k, v in value.items() if k not in _NOT_TEXT)
    if isinstance(value, list):
        return sum(text_chars(v) for v in value)
    return 0
