"""How fast the model answers: the wait for the first token and the tokens per second after.

A local model on a CPU reads a prompt at tens to hundreds of tokens a second and writes
from under one to a few dozen, so the time one answer takes varies by two orders of
magnitude between machines. A streamed answer (local servers, `openai_provider`) tells
the two apart: the wait before its first piece is the prompt being read, the rest is
writing. The first answer measures it (`SpeedLog.first`); the running totals let a
progress display say what each turn cost. Nothing here decides anything by the clock:
the numbers are shown.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Speed:
    """``tokens`` written in ``seconds`` (of one call, or summed over several), of which
    ``wait`` went before the first token (streamed answers only; else None)."""

    tokens: int = 0
    seconds: float = 0.0
    wait: float | None = None

    @property
    def rate(self) -> float | None:
        """Tokens per second of writing (after the wait when it is known), or None when no
        time was measured."""
        writing = self.seconds - (self.wait or 0.0)
        return self.tokens / writing if writing > 0 else None

    def __sub__(self, other: Speed) -> Speed:
        wait = None
        if self.wait is not None:
            wait = max(0.0, self.wait - (other.wait or 0.0))
        return Speed(self.tokens - other.tokens, max(0.0, self.seconds - other.seconds), wait)

    def describe(self) -> str:
        """``412 tokens in 8.7 s (47 tok/s)``, or with the wait ``412 tokens in 20.1 s
        (11.4 s before the first, then 47 tok/s)``; the rate is left out when unknown."""
        text = f"{self.tokens:,} tokens in {self.seconds:.1f} s"
        rate = self.rate
        if rate is None:
            return text
        if self.wait is not None:
            return f"{text} ({self.wait:.1f} s before the first, then {format_rate(rate)})"
        return f"{text} ({format_rate(rate)})"


def format_rate(rate: float) -> str:
    """``47 tok/s``, ``0.7 tok/s``: whole numbers from 10 up, one decimal below."""
    return f"{rate:.0f} tok/s" if rate >= 10 else f"{rate:.1f} tok/s"


class SpeedLog:
    """The answered calls of one run: the first, the last and the totals."""

    def __init__(self) -> None:
        self.first: Speed | None = None
        self.last: Speed | None = None
        self.total = Speed()

    def observe(self, tokens: int, seconds: float, wait: float | None = None) -> None:
        """Record one answered call: its output tokens, wall seconds and, when streamed,
        the seconds before its first piece."""
        seconds = max(0.0, seconds)
        call = Speed(max(0, tokens), seconds, None if wait is None else min(seconds, wait))
        if self.first is None:
            self.first = call
        self.last = call
        waited = None
        if call.wait is not None or self.total.wait is not None:
            waited = (self.total.wait or 0.0) + (call.wait or 0.0)
        self.total = Speed(self.total.tokens + call.tokens, self.total.seconds + seconds, waited)


def slow_answer_note(speed: Speed, max_tokens: int, timeout: float) -> str | None:
    """A warning when answers at ``speed`` may outlast ``timeout``; None when the speed is
    unknown or fast enough. Only a hint: a summary is usually far shorter than its limit.

    A streamed answer is only timed out while nothing comes, so then the wait for the
    first token counts: past half the timeout, a longer prompt may not make it. Otherwise
    the whole answer must fit: at the rate measured, one of ``max_tokens`` may not.
    """
    rate = speed.rate
    if rate is None or rate <= 0:
        return None
    if speed.wait is not None:
        if speed.wait <= timeout / 2:
            return None
        return (
            f"the first answer waited {speed.wait:.0f} s for its first token (the model "
            f"reading the prompt), more than half of llm.timeout ({timeout:g} s): a longer "
            "prompt may time out; raise llm.timeout if calls time out"
        )
    longest = max_tokens / rate
    if longest <= timeout:
        return None
    return (
        f"the model writes about {format_rate(rate)}: an answer of up to {max_tokens:,} tokens "
        f"may take {longest:,.0f} s, more than llm.timeout ({timeout:g} s); "
        "raise llm.timeout if calls time out"
    )
