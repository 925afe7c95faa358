"""OpenAI Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

``reader`` sniffs and reads a chain of files, ``stream`` is the one-pass state machine,
``items`` and ``events`` turn payloads into messages, ``threads`` finds sub-agent threads.
"""

from __future__ import annotations

from .reader import READER, CodexReader

__all__ = ["READER", "CodexReader"]
