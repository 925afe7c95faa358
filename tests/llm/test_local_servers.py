"""End to end through fakes of the local servers: `check` and `restore` adapt to each.

The CLI runs as a subprocess (real SDK, real HTTP) against `FakeLLMServer` with a local
server profile (`tests/fakes/local_servers.py`): llama-cpp-python refuses
`json_schema` with a 500 and ignores tools, llama.cpp takes both but has a small window
in /props, ollama refuses tools for a model without them, vLLM refuses "auto" tool
choice and tells its window in /v1/models. Every run must end with exit 0 and no failed
turn, the provider having adapted once (a stderr note, one refusal in the request log).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm_server import FakeLLMServer
from tests.fakes.local_servers import LocalServer, make_profile

# Each test runs the CLI as a process (seconds each on a loaded machine).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "fixtures" / "opencode" / "recorded" / "tui-compact" / "export.json"
MODEL = "smollm2"


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Any]:
    servers: list[FakeLLMServer] = []

    def start(profile: LocalServer) -> FakeLLMServer:
        server = FakeLLMServer(profile=profile).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(tmp_path), OPENCODE_RESTORE_DATA_DIR=str(tmp_path / "data"))
    # The SDK wants a key; local servers take any.
    env["OPENAI_API_KEY"] = "sk-local"
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        env.pop(name, None)
    return env


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "opencode_restore", *args]
    return subprocess.run(
        command, env=_env(tmp_path), capture_output=True, text=True, timeout=300, check=False
    )


def _check(server: FakeLLMServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return _cli(tmp_path, "check", "-m", f"openai:{MODEL}", "--base-url", server.openai_base_url)


def _restore(server: FakeLLMServer, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = tmp_path / "restoration.json"
    proc = _cli(
        tmp_path,
        "restore",
        str(EXPORT),
        "-m",
        f"openai:{MODEL}",
        "--base-url",
        server.openai_base_url,
        "--format",
        "json",
        "-o",
        str(out),
    )
    return proc, json.loads(out.read_text()) if out.exists() else None


def _chats(server: FakeLLMServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["path"].endswith("/chat/completions")]


def _refused(server: FakeLLMServer) -> list[dict[str, Any]]:
    return [r for r in _chats(server) if r.get("status")]


def _notes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("note:")]


def _read(server: FakeLLMServer, method: str, path: str) -> bool:
    return any(r.get("method") == method and r["path"] == path for r in server.requests)


def _assert_restored(proc: subprocess.CompletedProcess[str], data: Any) -> None:
    assert proc.returncode == 0, proc.stderr
    assert data is not None, proc.stderr
    assert data["failed_turns"] == [], proc.stderr
    assert len(data["turns"]) == 3
    assert "FAILED" not in proc.stderr


# -- llama-cpp-python: json_schema is a 500, tools are ignored -------------------------


def test_check_learns_json_object_from_llama_cpp_python(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("llama_cpp_python", context_window=8192))
    proc = _check(server, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    # The refusal is recognised from the 500 body's loc, and the rung that works shown.
    assert "json_schema" in lines["response_format"]
    assert "json_object" in lines["response_format"]
    assert "unknown" not in lines["response_format"]
    # One attempt per probe: the 500 is not retried.
    statuses = [r.get("status") for r in _chats(server)]
    assert statuses.count(500) == 1


def test_check_tells_that_llama_cpp_python_ignores_tools(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("llama_cpp_python", context_window=8192))
    proc = _check(server, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The tools reach the server and no call ever comes back: check says what it learned
    # (as against the real llama-cpp-python 0.3.36: "tool calls  text protocol (server
    # ignored tools unless tool_choice names one)").
    learned = [line for line in proc.stdout.splitlines() if line.startswith("tool calls")]
    assert len(learned) == 1, proc.stdout
    assert "text protocol" in learned[0]
    assert "ignored" in learned[0]
    structured = [line for line in proc.stdout.splitlines() if line.startswith("structured")]
    assert len(structured) == 1, proc.stdout
    assert "json_object" in structured[0]


def test_restore_through_llama_cpp_python_steps_down_once(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("llama_cpp_python", context_window=8192))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    refused = _refused(server)
    # Learned once for the run: one 500, then json_object (or plain text) only.
    assert [r["status"] for r in refused] == [500]
    assert refused[0]["body"]["response_format"]["type"] == "json_schema"
    later = _chats(server)[_chats(server).index(refused[0]) + 1 :]
    assert later
    assert all((r["body"].get("response_format") or {}).get("type") != "json_schema" for r in later)
    notes = [n for n in _notes(proc) if "response_format" in n]
    assert len(notes) == 1
    assert f"openai:{MODEL}" in notes[0]
    # The tools went unanswered (never a call): the text protocol, said once.
    assert len([n for n in _notes(proc) if "tools" in n]) == 1


def test_restore_through_a_small_model_on_llama_cpp_python(local: Any, tmp_path: Path) -> None:
    # SmolLM2-135M echoed a schema it only read in its prompt (the real run: 10 of 10
    # turns failed): json_object must carry it as llama-cpp-python's grammar.
    server = local(
        make_profile("llama_cpp_python", context_window=8192, follows_prompt_schema=False)
    )
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    assert "fell back" not in proc.stderr


def test_a_window_too_small_for_any_prompt_is_one_error_naming_it(
    local: Any, tmp_path: Path
) -> None:
    # The 2,048 default of llama-cpp-python's --n_ctx: every turn used to fail with a 400.
    server = local(make_profile("llama_cpp_python", context_window=2048))
    proc, _ = _restore(server, tmp_path)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "2,048 tokens" in errors[0]
    assert "--n_ctx" in errors[0]
    overflows = [r for r in _refused(server) if r["status"] == 400]
    assert len(overflows) <= 1


# -- llama.cpp: json_schema and tools taken, the window is /props' n_ctx ---------------


def test_check_through_llama_cpp(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("llama_cpp", context_window=8192))
    proc = _check(server, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _refused(server) == []


def test_restore_through_llama_cpp_fits_the_window_from_props(local: Any, tmp_path: Path) -> None:
    # A 4k window in /props (n_ctx) under an 8k trained one (meta.n_ctx_train): the
    # prompts must fit the runtime window, never overflow it.
    server = local(make_profile("llama_cpp", context_window=4096, trained_context=8192))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    assert _read(server, "GET", "/props")
    assert [r["status"] for r in _refused(server)] == []
    assert all(r["body"]["max_tokens"] < 4096 for r in _chats(server))


# -- ollama: tools refused for a model without them; the window in /api/show ----------


def test_restore_through_ollama_gives_up_native_tools_once(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("ollama", context_window=32768, trained_context=32768))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    refused = _refused(server)
    # At most one "does not support tools" for the run; never tools after it.
    assert [r["status"] for r in refused] in ([], [400])
    if refused:
        assert "tools" in refused[0]["body"]
        after = _chats(server)[_chats(server).index(refused[0]) + 1 :]
        assert all("tools" not in r["body"] for r in after)
        assert any("tools" in note for note in _notes(proc)), proc.stderr


def test_restore_through_ollama_reads_the_loaded_window(local: Any, tmp_path: Path) -> None:
    # ollama cuts an overlong prompt silently: only asking /api/ps (or /api/show) keeps
    # the transcript whole.
    server = local(make_profile("ollama", context_window=4096, trained_context=8192))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    assert _read(server, "GET", "/api/ps") or _read(server, "POST", "/api/show")
    profile = server.profile
    assert profile is not None
    assert all(profile.prompt_tokens(r["body"]) < 4096 for r in _chats(server))


# -- vLLM: "auto" tool choice refused; max_model_len in /v1/models ---------------------


def test_restore_through_vllm_gives_up_auto_tools_once(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("vllm", context_window=32768))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    refused = _refused(server)
    assert [r["status"] for r in refused] in ([], [400])
    if refused:
        assert "tools" in refused[0]["body"]
        assert any("tools" in note for note in _notes(proc)), proc.stderr


def test_restore_through_vllm_fits_max_model_len(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("vllm", context_window=4096))
    proc, data = _restore(server, tmp_path)
    _assert_restored(proc, data)
    assert _read(server, "GET", "/v1/models")
    assert [r["status"] for r in _refused(server) if "tools" not in r["body"]] == []


def test_check_through_vllm(local: Any, tmp_path: Path) -> None:
    server = local(make_profile("vllm", context_window=32768))
    proc = _check(server, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
