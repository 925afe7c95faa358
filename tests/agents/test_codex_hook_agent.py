"""``install codex``'s hooks inside the real Codex CLI from npm (opt-in, slow).

Codex 0.171 reads ``$CODEX_HOME/hooks.json`` (Claude Code's shape) but runs a hook only
once the user trusted it in ``/hooks``; ``--dangerously-bypass-hook-trust`` stands in for
that here. Against the fake Responses API (``fake_responses``), one session: ``codex
exec`` (startup: nothing), ``exec resume`` (the restoration, once), ``exec resume`` that
compacts at once (``model_auto_compact_token_limit``: PreCompact, SessionStart resume and
compact back to back; the compaction drops the earlier copy, the request after it carries
exactly one) and a plain ``exec resume`` again (Codex keeps that one: still exactly one).
Skipped unless Codex is found (``CODEX_BIN``, else ``codex`` on PATH). Checked with
Codex 0.171.0:

    npm install --prefix /tmp/agents-codex @openai/codex@0.171.0
    CODEX_BIN=/tmp/agents-codex/node_modules/.bin/codex unshare --net sh -c \
        'ip link set lo up && pytest --no-cov tests/agents/test_codex_hook_agent.py'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_model import FakeModel
from tests.agents.fake_responses import ResponsesModel, codex_config
from tests.agents.test_real_agents import MARK, _binary, _env, _project, install, run_ok

pytestmark = pytest.mark.slow
#: Makes ``exec resume`` compact before its turn (the reloaded history is over the limit).
COMPACT_NOW = ["-c", "model_auto_compact_token_limit=10", "-c", "model_context_window=1000"]


def _turn_bodies(model: FakeModel, since: int) -> list[dict[str, Any]]:
    return [b for p, b in model.requests[since:] if p.split("?")[0].endswith("/responses")]


def _count(body: dict[str, Any]) -> int:
    return json.dumps(body, ensure_ascii=False).count(MARK)


def test_codex_hooks_deliver_the_restoration_once(tmp_path: Path) -> None:
    codex = _binary("CODEX_BIN", "codex")
    home, data_dir = tmp_path / "home", tmp_path / "data"
    project = _project(tmp_path)
    with ResponsesModel() as model:
        # A generous wait for the restore (the default 8 s is tight on a loaded box).
        env = _env(home, data_dir, FAKE_API_KEY="fake", OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS="40")
        env.pop("CODEX_HOME", None)
        config = home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(codex_config(model.url))
        installed = install(env, "codex")
        assert "/hooks" in installed.stdout

        def run(*args: str) -> list[dict[str, Any]]:
            since = len(model.requests)
            exec_ = [codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check"]
            result = run_ok([*exec_, *args], env, project)
            bodies = _turn_bodies(model, since)
            assert bodies, result.stderr
            return bodies

        started = run("Add a --shout flag to greet.py")
        assert [_count(b) for b in started] == [0]  # startup restores nothing
        resumed = run("resume", "--last", "Go on")
        assert [_count(b) for b in resumed] == [1], (data_dir / "hook.log").read_text()
        restored = json.dumps(resumed[0], ensure_ascii=False).split(MARK, 1)[1]
        assert restored.startswith(" codex session `")  # this session, read from its rollout
        assert "Add a --shout flag" in restored
        compacted = run(*COMPACT_NOW, "resume", "--last", "And now?")
        summary, after = compacted[0], compacted[-1]
        assert len(compacted) == 2
        assert "summar" in json.dumps(summary).lower()  # the compaction's own request
        assert _count(after) == 1, (data_dir / "hook.log").read_text()
        again = run("resume", "--last", "Still there?")
        assert [_count(b) for b in again] == [1]  # kept in the history, not added again
    log = data_dir / "hook.log"
    assert not log.exists() or "Error" not in log.read_text()
