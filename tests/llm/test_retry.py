"""The retry policy: which failures retry, how long it waits, what it raises."""

from __future__ import annotations

import email.utils
import json
import weakref

import httpx2
import openai
import pytest
from tenacity import RetryCallState

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import ChatMessage, LLMRequest
from opencode_restore.llm.openai_provider import OpenAIProvider
from opencode_restore.llm.retry import (
    LOCAL_TIMEOUT_HINT,
    RetryPolicy,
    call_with_retry,
    error_message,
    is_read_timeout,
    is_retryable_response,
    retry_after_seconds,
)
from opencode_restore.llm.scripted import ScriptedProvider, ScriptedStatusError
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.speed import Speed, SpeedLog
from opencode_restore.llm.usage import UsageLedger
from opencode_restore.llm.window import Overflow
from tests.llm.conftest import Recorder, SleepLog, openai_reply

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest(messages=[ChatMessage("user", "hi")], stage="turn_summary", template="t.j2")


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    request = httpx2.Request("POST", "https://api.example.test/v1/chat/completions")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    return openai.APIStatusError("boom", response=response, body=None)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (404, False),
        (422, False),
    ],
)
def test_retryable_statuses(status: int, expected: bool) -> None:
    assert is_retryable_response(httpx2.Response(status)) is expected


def test_x_should_retry_header_wins() -> None:
    assert is_retryable_response(httpx2.Response(400, headers={"x-should-retry": "true"}))
    assert not is_retryable_response(httpx2.Response(503, headers={"x-should-retry": "false"}))


def test_retry_after_ms_beats_retry_after() -> None:
    exc = status_error(429, {"retry-after-ms": "1500", "retry-after": "9"})
    assert retry_after_seconds(exc) == 1.5


def test_retry_after_seconds_fraction_and_http_date() -> None:
    assert retry_after_seconds(status_error(429, {"retry-after": "0.25"})) == 0.25
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after_seconds(status_error(503, {"retry-after": date}), now=1_000_000) == 30
    past = email.utils.formatdate(999_000, usegmt=True)
    assert retry_after_seconds(status_error(503, {"retry-after": past}), now=1_000_000) == 0


def test_unusable_retry_after_hints_are_ignored() -> None:
    assert retry_after_seconds(status_error(429, {"retry-after": "soon"})) is None
    assert retry_after_seconds(status_error(429, {"retry-after-ms": "x"})) is None
    assert retry_after_seconds(status_error(429)) is None
    assert retry_after_seconds(ValueError("no response")) is None


def test_error_message_prefers_the_server_text() -> None:
    request = httpx2.Request("POST", "https://x.test")
    response = httpx2.Response(429, request=request)
    nested = openai.APIStatusError("x", response=response, body={"error": {"message": "slow down"}})
    flat = openai.APIStatusError("x", response=response, body={"error": "quota"})
    plain = openai.APIStatusError("Error code: 429", response=response, body="text")
    assert error_message(nested) == "slow down"
    assert error_message(flat) == "quota"
    assert error_message(plain) == "Error code: 429"
    assert error_message(TimeoutError()) == "TimeoutError"


def wait_for(policy: RetryPolicy, exc: BaseException, attempt: int) -> float:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return policy.wait(state)


def test_wait_is_capped_retry_after_or_jittered_backoff() -> None:
    policy = RetryPolicy(multiplier=0.5, max_wait=8, retry_after_cap=60)
    assert wait_for(policy, status_error(429, {"retry-after": "3"}), 1) == 3
    assert wait_for(policy, status_error(429, {"retry-after": "3600"}), 1) == 60
    first = wait_for(policy, status_error(500), 1)
    third = wait_for(policy, status_error(500), 3)
    assert 0.5 <= first <= 1.0
    assert 2.0 <= third <= 2.5
    assert wait_for(policy, status_error(500), 10) == 8


def test_policy_from_settings() -> None:
    settings = ProviderSettings(
        max_attempts=6, retry_multiplier=1, retry_max_wait=4, retry_after_cap=9
    )
    policy = RetryPolicy.from_settings(settings)
    assert (policy.max_attempts, policy.multiplier, policy.max_wait, policy.retry_after_cap) == (
        6,
        1,
        4,
        9,
    )


async def test_scripted_transient_errors_then_success(sleeps: SleepLog) -> None:
    provider = ScriptedProvider([TimeoutError(), ScriptedStatusError(502), "done"])
    policy = RetryPolicy(max_attempts=3, multiplier=0.01, max_wait=0.02, sleep=sleeps)
    ledger = UsageLedger()
    result = await call_with_retry(provider, REQUEST, policy, ledger)
    assert (result.text, result.attempts) == ("done", 3)
    assert len(sleeps.waits) == 2
    assert len(provider.requests) == 3
    assert ledger.calls[0].ok
    assert ledger.calls[0].attempts == 3


async def test_give_up_raises_provider_error_and_records_failure(sleeps: SleepLog) -> None:
    provider = ScriptedProvider([ScriptedStatusError(500, "db down")] * 2, model="m1")
    ledger = UsageLedger()
    policy = RetryPolicy(max_attempts=2, multiplier=0, max_wait=0, sleep=sleeps)
    with pytest.raises(ProviderError) as info:
        await call_with_retry(provider, REQUEST, policy, ledger)
    assert str(info.value) == "scripted:m1 (HTTP 500): db down"
    record = ledger.calls[0]
    assert (record.ok, record.attempts, record.model, record.usage.total) == (False, 2, "m1", 0)


async def test_provider_error_from_the_provider_is_recorded_and_kept() -> None:
    provider = ScriptedProvider([ProviderError("scripted", "m", "refused", 403)])
    ledger = UsageLedger()
    with pytest.raises(ProviderError, match="refused"):
        await call_with_retry(provider, REQUEST, ledger=ledger)
    assert ledger.calls[0].error == "scripted:m (HTTP 403): refused"


async def test_bugs_are_not_disguised_as_provider_errors() -> None:
    provider = ScriptedProvider([KeyError("oops")])
    ledger = UsageLedger()
    with pytest.raises(KeyError):
        await call_with_retry(provider, REQUEST, ledger=ledger)
    assert ledger.calls == []


async def test_default_policy_and_no_ledger() -> None:
    result = await call_with_retry(ScriptedProvider(["x"]), REQUEST)
    assert (result.text, result.attempts) == ("x", 1)


def test_local_urls() -> None:
    local = ["http://localhost:8080/v1", "http://127.0.0.1:11434", "http://[::1]:8000/v1"]
    local += ["http://192.168.1.20:8000/v1", "http://10.0.0.5/v1", "http://gpu.localhost/v1"]
    assert all(ProviderSettings(base_url=url).local for url in local)
    remote = [None, "https://api.openai.com/v1", "http://8.8.8.8/v1", "http://llm.example.test/v1"]
    assert not any(ProviderSettings(base_url=url).local for url in remote)
    assert RetryPolicy.from_settings(ProviderSettings(base_url=local[0])).local


def openai_over(*steps: httpx2.Response | Exception) -> tuple[OpenAIProvider, Recorder]:
    recorder = Recorder(list(steps))
    settings = ProviderSettings(base_url="http://127.0.0.1:8080/v1")
    return OpenAIProvider("smollm2", settings, "k", http_client=recorder.client()), recorder


async def test_a_local_server_read_timeout_is_not_asked_again(sleeps: SleepLog) -> None:
    provider, recorder = openai_over(httpx2.ReadTimeout("timed out"), openai_reply("late"))
    policy = RetryPolicy(max_attempts=4, sleep=sleeps, local=True)
    with pytest.raises(ProviderError, match="timed out") as info:
        await call_with_retry(provider, REQUEST, policy)
    assert len(recorder.requests) == 1
    assert str(info.value).endswith(f" {LOCAL_TIMEOUT_HINT}")


async def test_a_remote_read_timeout_and_a_local_refused_connection_are_retried(
    sleeps: SleepLog,
) -> None:
    remote, sent = openai_over(httpx2.ReadTimeout("timed out"), openai_reply("ok"))
    await call_with_retry(remote, REQUEST, RetryPolicy(max_attempts=2, sleep=sleeps))
    refused = httpx2.ConnectError("[Errno 111] Connection refused")
    local, sent_local = openai_over(refused, openai_reply("ok"))
    result = await call_with_retry(
        local, REQUEST, RetryPolicy(max_attempts=2, sleep=sleeps, local=True)
    )
    assert (len(sent.requests), len(sent_local.requests), result.text) == (2, 2, "ok")


def test_read_timeouts_told_from_connection_failures() -> None:
    def chained(outer: BaseException, inner: BaseException) -> BaseException:
        outer.__cause__ = inner
        return outer

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    assert is_read_timeout(openai.APITimeoutError(request))
    assert is_read_timeout(TimeoutError())
    # The aiohttp transport says "timed out" for a refused port: the cause tells.
    refused = chained(openai.APITimeoutError(request), ConnectionRefusedError(111, "refused"))
    assert not is_read_timeout(refused)
    assert not is_read_timeout(httpx2.ConnectTimeout("connect"))
    assert not is_read_timeout(ScriptedStatusError(500))


@pytest.mark.usefixtures("no_gc")
async def test_a_call_leaves_no_cycle_holding_its_policy() -> None:
    """tenacity's retrying object refers to itself; emptied after the call, it goes by
    reference counting, and with it the policy and what its refit holds (a restore's
    window and journal). (A retried failure's traceback still holds it until a
    collection: rare, and not the offline restore's path.)"""

    class Window:
        async def refit(self, request: LLMRequest, overflow: Overflow) -> LLMRequest | None:
            return None

    window = Window()
    held = weakref.ref(window)
    policy = RetryPolicy(refit=window.refit)
    del window
    assert (await call_with_retry(ScriptedProvider(["done"]), REQUEST, policy)).text == "done"
    del policy
    assert held() is None


async def test_each_answer_is_timed_for_its_speed() -> None:
    ticks = iter([10.0, 10.0, 18.7])
    speed = SpeedLog()
    provider = ScriptedProvider(["x"])
    policy = RetryPolicy(speed=speed, clock=lambda: next(ticks))
    result = await call_with_retry(provider, REQUEST, policy)
    assert speed.first == speed.last == Speed(result.usage.output, 8.7)


def overflow_reply() -> httpx2.Response:
    body = {
        "error": {
            "message": "Requested tokens (3117) exceed context window of 2048",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    return httpx2.Response(400, json=body)


async def test_a_context_overflow_is_refitted_once(sleeps: SleepLog) -> None:
    provider, recorder = openai_over(overflow_reply(), openai_reply("fits"))
    seen: list[Overflow] = []
    shorter = LLMRequest(messages=[ChatMessage("user", "h")], stage="turn_summary")

    async def refit(request: LLMRequest, overflow: Overflow) -> LLMRequest | None:
        seen.append(overflow)
        return shorter

    ledger = UsageLedger()
    result = await call_with_retry(
        provider, REQUEST, RetryPolicy(sleep=sleeps, refit=refit), ledger
    )
    assert result.text == "fits"
    assert [(o.window, o.requested) for o in seen] == [(2048, 3117)]
    assert json.loads(recorder.requests[1].content)["messages"] == [
        {"role": "user", "content": "h"}
    ]
    assert [c.ok for c in ledger.calls] == [False, True]


async def test_an_overflow_that_cannot_be_refitted_fails_once(sleeps: SleepLog) -> None:
    provider, recorder = openai_over(overflow_reply(), overflow_reply(), overflow_reply())

    async def cannot(request: LLMRequest, overflow: Overflow) -> LLMRequest | None:
        return None

    with pytest.raises(ProviderError, match="context window of 2048"):
        await call_with_retry(provider, REQUEST, RetryPolicy(sleep=sleeps, refit=cannot))
    assert len(recorder.requests) == 1

    async def same(request: LLMRequest, overflow: Overflow) -> LLMRequest | None:
        return request

    with pytest.raises(ProviderError, match="context window of 2048"):
        await call_with_retry(provider, REQUEST, RetryPolicy(sleep=sleeps, refit=same))
    assert len(recorder.requests) == 3  # refitted once, not again
