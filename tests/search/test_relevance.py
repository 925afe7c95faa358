"""The known-answer queries (fixtures/search/relevance.json) against the real index.

Target (issue 29): the right session in the top 3 for >= 90% of the queries. The real
devset's sessions join when ``../shared/samples/real-devset`` (or the environment's) is
there; the bundled sessions alone hold more than 30 queries.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "relevance.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_relevance", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


relevance = _bench()


def test_every_answer_names_a_session_of_the_set_and_labels() -> None:
    data = json.loads(relevance.FIXTURE.read_text(encoding="utf-8"))
    assert len(data["queries"]) >= 30
    assert len({q["id"] for q in data["queries"]}) == len(data["queries"])
    for q in data["queries"]:
        assert q["query"].strip(), q["id"]
        assert q["why"], q["id"]
        assert q["source"], q["id"]
        for session, labels in q["answers"].items():
            assert session in data["sessions"], q["id"]
            assert labels, q["id"]
            assert all(label.startswith("M") for label in labels), q["id"]
    bundled = relevance.corpus(data, None)
    assert sum(set(q["answers"]) <= set(bundled) for q in data["queries"]) >= 30


def test_a_label_of_the_fixture_opens_the_message_it_names(tmp_path: Path) -> None:
    """The labels are the ones `messages` prints: one checked end to end."""
    from click.testing import CliRunner

    from opencode_restore.cli import cli

    data = json.loads(relevance.FIXTURE.read_text(encoding="utf-8"))
    q = next(q for q in data["queries"] if q["id"] == "ghostty-colors")
    log = relevance.ROOT / data["sessions"]["pi-mono-themes"]["path"]
    label = q["answers"]["pi-mono-themes"][0]
    out = CliRunner().invoke(cli, ["messages", str(log), "--label", label, "--format", "json"])
    assert out.exit_code == 0, out.output
    assert "ghostty" in out.output.lower()


@pytest.mark.slow
def test_the_right_session_is_in_the_top_3_for_90_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = relevance.real_devset_dir(None)
    outcomes = relevance.evaluate(tmp_path, real if real.is_dir() else None)
    assert len(outcomes) >= 30
    share = relevance.report(outcomes, 3)
    with capsys.disabled():
        print("\n" + capsys.readouterr().out.rstrip())
    assert share >= 0.9
