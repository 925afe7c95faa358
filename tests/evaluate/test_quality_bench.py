"""bench/quality.py: the real devset's table, and a clean skip where the set is absent."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.evaluate.test_fields import CHECK, REAL, real_like_folder

BENCH = Path(__file__).resolve().parents[2] / "bench" / "quality.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_quality", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quality = _bench()


def test_the_real_devset_folder_is_the_flag_else_the_environment_else_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(quality.REAL_ENV, raising=False)
    assert quality.real_devset_dir(None) == quality.REAL_DEFAULT
    assert quality.REAL_DEFAULT.parts[-3:] == ("shared", "samples", "real-devset")
    monkeypatch.setenv(quality.REAL_ENV, str(tmp_path))
    assert quality.real_devset_dir(None) == tmp_path
    assert quality.real_devset_dir(tmp_path / "x") == tmp_path / "x"


def test_a_missing_real_devset_is_a_note_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert quality.main(["--set", "real", "--smoke", "--real-devset", str(tmp_path / "no")]) == 0
    assert "real devset: skipped, no folder" in capsys.readouterr().out
    assert quality.run_real(tmp_path, "offline", True, None) == 0
    assert "no facts*.json with its log" in capsys.readouterr().out


def test_the_real_table_and_the_cross_check(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = real_like_folder(tmp_path / "set", fixtures)
    if CHECK is not None:  # the set's own scorer scores the very same restorations
        shutil.copyfile(REAL / "check.py", folder / "check.py")
    keep = tmp_path / "keep"
    assert quality.run_real(folder, "offline", True, keep) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:5] == ["recording", "agent", "kept", "cited", "must_not"]
    assert "overall: facts kept " in out
    assert "must_not hits 1/2" in out
    assert (keep / "pi.json").is_file()
    if CHECK is not None:
        assert "check.py: same facts kept and cited" in out
    else:
        assert "check.py: not in the folder" in out
