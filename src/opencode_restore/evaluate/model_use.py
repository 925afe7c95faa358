"""What a model contributed to a restoration, so that ``eval`` never passes off the offline
rules' score as a model's.

A restoration keeps going when model calls fail: a failed turn leaves the rules' turn line
in the summary, a failed synthesis falls back to the offline summary, a failed branch call
to the digest. The score is then the rules', whatever model was named. `model_use` reads
where that happened from the restoration itself (its failed turns, warnings and branch
rows) and what the server was sent from the run's usage ledger.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..facts.wording import short
from ..llm.usage import UsageLedger, is_offline
from ..pipeline.restoration import (
    EVIDENCE_STOPPED_WARNING,
    FALLBACK_WARNING,
    WHOLE_SUMMARY,
    Restoration,
)

#: One reason on one line: a server's traceback or a validation error's details are not.
REASON_CHARS = 160


@dataclass
class ModelUse:
    """One restoration's model calls: where they failed and what they cost.

    ``fallbacks`` names each stage the offline value stood in for because a call failed
    (``synthesis``, a branch by id); ``reasons`` counts the failures by stage and reason,
    one line each. ``stood_in`` names the fields the model answered with text that states
    nothing, where the rules' value stands in (``turns 1-3 (agent_response_summary)``,
    ``synthesis (goal)``): answered, so not failures.
    """

    provider: str
    turns: int
    failed_turns: list[int] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    #: Turns whose model replies never fit the structure: the rules' summary stood in whole.
    replaced_turns: list[int] = field(default_factory=list)
    stood_in: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def offline(self) -> bool:
        """True for the offline rules: no model was asked, none could fail."""
        return is_offline(self.provider)

    @property
    def nothing(self) -> list[str]:
        """Why the model contributed nothing to the summary scored, or [] when it did.

        It did not when every turn failed or the synthesis fell back to the offline
        summary: the score is then the offline rules'.
        """
        if self.offline:
            return []
        why = []
        if self.turns and len(self.failed_turns) == self.turns:
            why.append("every turn failed")
        elif self.turns and len(self.failed_turns) + len(self.replaced_turns) == self.turns:
            why.append("no turn's summary is the model's (failed, or never in shape)")
        if "synthesis" in self.fallbacks:
            why.append("the synthesis fell back to the offline summary")
        return why


def spans(numbers: list[int]) -> str:
    """Ascending numbers as runs: ``[1, 2, 3, 5]`` is ``1-3, 5``."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def reason(stage: str, error: str) -> str:
    """``stage: error`` on one line: the error's first line, cut."""
    first = error.strip().splitlines()[0] if error.strip() else "no reason given"
    return f"{stage}: {short(first, REASON_CHARS)}"


def model_use(r: Restoration, ledger: UsageLedger | None = None) -> ModelUse:
    """What the model contributed to ``r``; ``ledger`` (the run's) counts the HTTP
    requests, retries included, which the restoration does not keep."""
    use = ModelUse(
        provider=r.provider,
        turns=r.turn_count,
        failed_turns=[f.turn for f in r.failed_turns],
        input_tokens=r.usage.input_tokens,
        output_tokens=r.usage.output_tokens,
        requests=ledger.total().attempts if ledger is not None else 0,
    )
    if use.offline:
        return use
    reasons = Counter(reason("turn", f.error) for f in r.failed_turns)
    for warning in r.warnings:
        if warning.startswith(f"{FALLBACK_WARNING}: "):
            use.fallbacks.append("synthesis")
            reasons[reason("synthesis", warning.removeprefix(f"{FALLBACK_WARNING}: "))] += 1
        elif warning.startswith(f"{EVIDENCE_STOPPED_WARNING}: "):
            reasons[reason("evidence", warning.removeprefix(f"{EVIDENCE_STOPPED_WARNING}: "))] += 1
    # With a model, a branch summary is the digest only when the model's failed or said
    # nothing (a branch the log summarized itself is the log's).
    for row in r.branch_summaries:
        if row.source == "generated":
            use.fallbacks.append(f"branch {row.branch_id}")
    if ledger is not None:
        reasons.update(
            reason("branch", c.error)
            for c in ledger.calls
            if c.stage == "branch_summary" and c.error
        )
    use.reasons = dict(reasons)
    use.replaced_turns = [t.turn_number for t in r.turns if WHOLE_SUMMARY in t.stood_in]
    by_fields: dict[tuple[str, ...], list[int]] = {}
    for t in r.turns:
        if t.stood_in:
            by_fields.setdefault(tuple(t.stood_in), []).append(t.turn_number)
    use.stood_in = [
        f"{'turn' if len(turns) == 1 else 'turns'} {spans(turns)} ({', '.join(fields)})"
        for fields, turns in by_fields.items()
    ]
    if r.summary.stood_in:
        use.stood_in.append(f"synthesis ({', '.join(r.summary.stood_in)})")
    return use
