"""A model that writes schema-valid nothing keeps every fact the rules keep, on every
recording of the recorded devset (`fixtures/devset`).

The llama-cpp-python fake refuses `json_schema`, ignores tools and answers each
`json_object` request with the minimal instance of the schema it carries (blank strings,
empty lists): what a tiny local model at its worst gives. `eval` through it must exit 0
with no failed turn, every citation resolving, and each recording's kept and cited facts
a superset of the offline rules' own: the merge holds whatever the model says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm_server import FakeLLMServer
from tests.fakes.local_servers import make_profile

# Two evals of five recordings, each a CLI process (tens of seconds on a loaded machine).
pytestmark = pytest.mark.slow

FACTS = Path(__file__).resolve().parents[2] / "fixtures" / "devset" / "facts.json"


def _eval(home: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(home / "data"))
    env.pop("OPENAI_API_KEY", None)  # a --base-url server needs none
    command = [sys.executable, "-m", "opencode_restore", "eval", str(FACTS), "--format", "json"]
    proc = subprocess.run(
        [*command, *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    return proc, json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def _facts(record: dict[str, Any], key: str) -> set[str]:
    return {fact["id"] for fact in record["facts"] if fact[key]}


def test_schema_valid_nothing_keeps_every_fact_the_rules_keep(tmp_path: Path) -> None:
    offline_proc, offline = _eval(tmp_path / "offline")
    assert offline_proc.returncode == 0, offline_proc.stderr[-2000:]
    with FakeLLMServer(profile=make_profile("llama_cpp_python", context_window=16384)) as server:
        proc, scored = _eval(
            tmp_path / "model", "-m", "openai:smollm2", "--base-url", server.openai_base_url
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    baseline = {r["recording"]: r for r in offline["recordings"]}
    assert {r["recording"] for r in scored["recordings"]} == set(baseline)
    for record in scored["recordings"]:
        name = record["recording"]
        assert record["model"]["failed_turns"] == [], name
        # The blanks reached the merge, and the rules' lines stood in for them.
        assert record["model"]["stood_in"], name
        assert record["citations_resolved"] == record["citations"], name
        for key in ("kept", "cited"):
            lost = _facts(baseline[name], key) - _facts(record, key)
            assert not lost, f"{name}: no longer {key}: {sorted(lost)}"
