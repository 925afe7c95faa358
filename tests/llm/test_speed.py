"""Output speed: what a turn's calls wrote per second, and the slow-model warning
(numbers injected: nothing here reads a clock)."""

from __future__ import annotations

from opencode_restore.llm.speed import Speed, SpeedLog, format_rate, slow_answer_note


def test_speed_is_described_with_its_rate() -> None:
    assert Speed(412, 8.7).describe() == "412 tokens in 8.7 s (47 tok/s)"
    assert Speed(7, 10.0).describe() == "7 tokens in 10.0 s (0.7 tok/s)"
    assert Speed(5, 0.0).describe() == "5 tokens in 0.0 s"
    assert format_rate(123.4) == "123 tok/s"


def test_the_log_keeps_the_first_the_last_and_the_totals() -> None:
    log = SpeedLog()
    log.observe(100, 2.0)
    mark = log.total
    log.observe(300, 4.0)
    log.observe(12, 1.0)
    assert log.first == Speed(100, 2.0)
    assert log.last == Speed(12, 1.0)
    assert log.total - mark == Speed(312, 5.0)


def test_a_slow_model_is_told_to_raise_the_timeout() -> None:
    note = slow_answer_note(Speed(7, 10.0), 2048, 120)
    assert note == (
        "the model writes about 0.7 tok/s: an answer of up to 2,048 tokens may take 2,926 s, "
        "more than llm.timeout (120 s); raise llm.timeout if calls time out"
    )
    assert slow_answer_note(Speed(470, 10.0), 2048, 120) is None
    assert slow_answer_note(Speed(0, 0.0), 2048, 120) is None


def test_a_streamed_answer_tells_the_wait_from_the_writing() -> None:
    call = Speed(214, 63.7, wait=56.2)
    assert call.describe() == "214 tokens in 63.7 s (56.2 s before the first, then 29 tok/s)"
    log = SpeedLog()
    log.observe(214, 63.7, wait=56.2)
    mark = log.total
    log.observe(100, 12.0, wait=8.0)
    assert log.total - mark == Speed(100, 12.0, wait=8.0)
    assert log.first == call


def test_a_streamed_answer_is_warned_of_by_its_wait_alone() -> None:
    # Writing 2,048 tokens at 29 tok/s takes 70 s, but a stream is only cut while silent.
    assert slow_answer_note(Speed(214, 63.7, wait=56.2), 2048, 120) is None
    note = slow_answer_note(Speed(214, 90.0, wait=82.5), 2048, 120)
    assert note == (
        "the first answer waited 82 s for its first token (the model reading the prompt), "
        "more than half of llm.timeout (120 s): a longer prompt may time out; "
        "raise llm.timeout if calls time out"
    )
