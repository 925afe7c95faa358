"""Issue 14.4: small hostile files must not take gigabytes or minutes.

Each case of `hostile_corpus` is read by the real CLI in a subprocess with a 4 GB
address-space limit (a regression fails fast instead of taking the machine) and a 60 s
deadline; its peak RSS (``wait4``) must stay under 1.5 GB and the run must end in output
or a one-line error, never a traceback.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.base import LLMRequest
from opencode_restore.sources.base import iter_lines
from tests.waits import RUNAWAY_S

from .hostile_corpus import CASES

DEADLINE = RUNAWAY_S  # a runaway guard: a loaded machine is slow, not wrong
ADDRESS_SPACE = 4 << 30
RSS_LIMIT_MB = 1536
#: Sizes for the suite: enough to cross every cap (the long line crosses a lowered one).
SCALE = {
    "long-line": 0.01,
    "eval-zip-bomb": 0.6,
    "million-bad-lines": 0.05,
    "opencode-600mb": 0.01,
    "claude-deep-100k": 0.5,
    "gemini-185mb-json": 0.01,
    "eval-120mb-member": 0.01,
    "eval-120mb-member-restore": 0.02,
    "terminal-full-screen-60mb": 0.01,
}
ENV = {"OPENCODE_RESTORE_MAX_LINE_BYTES": "100000"}


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_bounded(args: list[str], cwd: Path) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of the CLI, killed at the deadline."""
    env = {**os.environ, **ENV, "OPENCODE_RESTORE_DATA_DIR": str(cwd / "data")}
    err_path = cwd / "stderr.txt"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "opencode_restore", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=_limit,
            env=env,
            cwd=cwd,
        )
        deadline = time.monotonic() + DEADLINE
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:  # pragma: no cover - only on a regression
                proc.kill()
                os.wait4(proc.pid, 0)
                pytest.fail(f"{args[0]} ran past the {DEADLINE} s deadline")
            time.sleep(0.02)
    return (
        os.waitstatus_to_exitcode(status),
        err_path.read_text(errors="replace"),
        (usage.ru_maxrss / 1024),
    )


EXPECTED = {
    "inspect-deep-100k": "nested more than 128 deep",
    "claude-deep-json": "deep.jsonl:2: JSON nested more than 128 deep; skipped",
    "claude-deep-100k": "deep.jsonl:2: JSON nested more than 128 deep; skipped",
    "claude-deep-1000": "deep.jsonl:2: JSON nested more than 128 deep; skipped",
    "eval-zip-bomb": "archive member",
    "eval-120mb-member": "",
    "eval-120mb-member-restore": "the session has 2,800 turns, more than restore.max_session_turns",
    "opencode-generated-column": "",
    "opencode-duplicate-ids": "2999 messages repeat an earlier id; skipped",
    "opencode-generated-session-id": "message.session_id is missing or not a stored column",
    "opencode-600mb": "data over the 100000-byte limit; skipped",
    "long-line": "over the 100000-byte limit; skipped",
    "huge-user-message": "",
    "million-bad-lines": "more warnings not shown",
    "dev-zero": "not a regular file",
    "gemini-185mb-json": "",
    "claude-10k-branches": "",
    "claude-10k-branches-tree": "",
    "terminal-cursor-30000": "",
    "terminal-script-20000": "",
    "terminal-full-screen-60mb": "",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_is_bounded(tmp_path: Path, name: str) -> None:
    args = CASES[name](tmp_path, SCALE.get(name, 1.0))
    code, err, rss = run_bounded(args, tmp_path)
    # At a line start: a restore's stderr may quote a search pattern naming "Traceback".
    assert "\nTraceback (most recent call last):" not in "\n" + err
    assert "MemoryError" not in err
    assert code in (0, 2), err[-500:]
    assert rss < RSS_LIMIT_MB
    assert EXPECTED[name] in err


def test_a_long_line_is_skipped_and_the_next_lines_are_read(tmp_path: Path) -> None:
    args = CASES["long-line"](tmp_path, 0.01)
    path = Path(args[1])
    result = subprocess.run(
        [sys.executable, "-m", "opencode_restore", *args, "--format", "jsonl"],
        capture_output=True,
        timeout=DEADLINE,
        env={**os.environ, **ENV},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    texts = [orjson.loads(line)["text"] for line in result.stdout.splitlines()]
    # The message after the skipped line is found where the first pass noted it.
    assert texts == ["first request", "after the long line"]
    assert f"{path}:2: line of" in result.stderr.decode()


def test_iter_lines_counts_a_skipped_line_in_the_offsets(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"ab\n" + b"x" * 50 + b"\nlast")
    sink = WarningSink()
    with path.open("rb") as fh:
        got = list(iter_lines(fh, path, sink, limit=10))
    assert got == [(1, b"ab\n", 3), (2, b"", 51), (3, b"last", 4)]
    assert "line of 51 bytes, over the 10-byte limit" in sink.warnings[0].message


def test_a_huge_request_is_not_sent_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    from click.testing import CliRunner

    from opencode_restore.cli import cli
    from opencode_restore.llm.offline import OfflineProvider

    seen: list[LLMRequest] = []
    original = OfflineProvider.complete

    async def complete(self: OfflineProvider, request: LLMRequest) -> object:
        seen.append(request)
        return await original(self, request)

    monkeypatch.setattr(OfflineProvider, "complete", complete)
    args = CASES["huge-user-message"](tmp_path, 0.1)  # a 2 MB request
    out = tmp_path / "summary.md"
    result = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert seen
    for request in seen:
        sizes = [len(m.content) for m in request.messages]
        sizes.append(len(orjson.dumps(request.facts)))
        assert max(sizes) < 100_000, request.stage
    assert out.stat().st_size < 100_000


def test_loads_capped_refuses_what_the_recursive_walks_cannot_follow() -> None:
    from opencode_restore.sources.base import MAX_JSON_DEPTH, loads_capped

    assert loads_capped('{"a": [1]}') == {"a": [1]}
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(orjson.JSONDecodeError, match="nested more than 128 deep"):
        loads_capped(deep)
    with pytest.raises(orjson.JSONDecodeError):
        loads_capped(deep.encode() * 1000)
