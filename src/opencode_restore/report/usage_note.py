"""What a restore spent, in one phrase for stderr summaries and tables.

With the offline provider no model is called: the phrase says so (``OFFLINE_NOTE``)
instead of a count of calls and tokens that no model made or read.
"""

from __future__ import annotations

from ..llm.usage import OFFLINE_NOTE, is_offline
from ..pipeline.restoration import UsageReport


def usage_note(usage: UsageReport, provider: str) -> str:
    """``offline rules: no model called``, or ``N calls, T tokens`` (and ``$C`` when known).

    ``provider`` is the ``provider:model`` spec (``Restoration.provider``).
    """
    if is_offline(provider):
        return OFFLINE_NOTE
    tokens = usage.input_tokens + usage.output_tokens
    note = f"{usage.calls} calls, {tokens} tokens"
    if usage.cost_usd:
        note += f", ${usage.cost_usd:.4f}"
    return note
