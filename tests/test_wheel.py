"""The built wheel works on its own: installed outside the checkout, ``restore --demo`` runs.

The wheel is built offline with the installed backend (hatchling, in the dev extra) and
installed without its dependencies into a fresh virtual environment; that environment
borrows the test environment's third-party packages through a ``.pth`` line (a path
added that way is no site directory, so the checkout's editable-install hook is not
run): ``opencode_restore`` itself can only come from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow


def _run(
    args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The [dev] extra has it; an environment installed before it was added skips.
    pytest.importorskip("hatchling", reason="the build backend (pip install -e '.[dev]')")
    out = tmp_path_factory.mktemp("dist")
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "-q"]
    _run([sys.executable, "-m", "pip", "wheel", *offline, "-w", str(out), str(ROOT)])
    (built,) = out.glob("opencode_restore-*.whl")
    return built


def test_wheel_carries_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        "opencode_restore/py.typed",
        "opencode_restore/samples/opencode-export.json",
        "opencode_restore/_data/config.toml",
        "opencode_restore/_data/prompts/turn_summary.j2",
        "opencode_restore/integrations/opencode_plugin.ts",
        "opencode_restore/integrations/pi_extension.ts",
        "opencode_restore/mcp/handshake.json",
        "opencode_restore/redact/data/gitleaks.toml",
        "opencode_restore/redact/data/gitleaks-LICENSE",
    ):
        assert name in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_restore_demo_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    _run([*pip, "install", "-q", "--no-deps", "--no-index", str(wheel)])
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    Path(site.stdout.strip(), "borrowed-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "OPENCODE_RESTORE_DATA_DIR": str(tmp_path / "data")}
    where = _run(
        [str(python), "-c", "import opencode_restore; print(opencode_restore.__file__)"],
        cwd=elsewhere,
        env=env,
    )
    assert Path(where.stdout.strip()).is_relative_to(env_dir)
    result = _run(
        [str(env_dir / "bin" / "opencode-restore"), "restore", "-q", "--demo"],
        cwd=elsewhere,
        env=env,
    )
    assert result.stdout.startswith("# SESSION SUMMARY — Add --shout flag to greet CLI")
    assert "summarized by offline rules: no model called" in result.stdout
