"""How fast the model writes: output tokens per second of the calls that answered.

A local model on a CPU writes from under one to a few dozen tokens a second, so the
time one answer takes varies by two orders of magnitude between machines. The first
answer measures it (`SpeedLog.first`); the running totals let a progress display say
what each turn cost. Nothing here decides anything by the clock: the numbers are shown.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Speed:
    """``tokens`` written in ``seconds`` (of one call, or summed over several)."""

    tokens: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float | None:
        """Tokens per second, or None when no time was measured."""
        return self.tokens / self.seconds if self.seconds > 0 else None

    def __sub__(self, other: Speed) -> Speed:
        return Speed(self.tokens - other.tokens, max(0.0, self.seconds - other.seconds))

    def describe(self) -> str:
        """``412 tokens in 8.7 s (47 tok/s)``; the rate is left out when unknown."""
        text = f"{self.tokens:,} tokens in {self.seconds:.1f} s"
        rate = self.rate
        return text if rate is None else f"{text} ({format_rate(rate)})"


def format_rate(rate: float) -> str:
    """``47 tok/s``, ``0.7 tok/s``: whole numbers from 10 up, one decimal below."""
    return f"{rate:.0f} tok/s" if rate >= 10 else f"{rate:.1f} tok/s"


class SpeedLog:
    """The answered calls of one run: the first, the last and the totals."""

    def __init__(self) -> None:
        self.first: Speed | None = None
        self.last: Speed | None = None
        self.total = Speed()

    def observe(self, tokens: int, seconds: float) -> None:
        """Record one answered call (its output tokens and wall seconds)."""
        call = Speed(max(0, tokens), max(0.0, seconds))
        if self.first is None:
            self.first = call
        self.last = call
        self.total = Speed(self.total.tokens + call.tokens, self.total.seconds + call.seconds)


def slow_answer_note(speed: Speed, max_tokens: int, timeout: float) -> str | None:
    """A warning when, at ``speed``, an answer of ``max_tokens`` would outlast ``timeout``.

    None when the speed is unknown or fast enough. Only a hint: a summary is usually far
    shorter than its limit.
    """
    rate = speed.rate
    if rate is None or rate <= 0:
        return None
    longest = max_tokens / rate
    if longest <= timeout:
        return None
    return (
        f"the model writes about {format_rate(rate)}: an answer of up to {max_tokens:,} tokens "
        f"may take {longest:,.0f} s, more than llm.timeout ({timeout:g} s); "
        "raise llm.timeout if calls time out"
    )
