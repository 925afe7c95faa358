"""The README's install line, run as written in a fresh home with no pipx and nothing on PATH
but the system's tools and a Python: the command lands in ``~/.local/bin`` and works.

It runs offline: pip gets no index and borrows the test environment's packages through
``PYTHONPATH`` (not a site directory, so the checkout's editable-install hook is not run;
pip sees the dependencies as present and leaves the test environment alone, being outside
the new one), so ``opencode_restore`` itself can only come from the checkout via install.sh.
What the line pulls from PyPI is what CI's own install of the dev extra pulls.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow


def readme_install_line() -> str:
    """The one command of the README's set-up section (its first ``sh`` block)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme[readme.index("\n## Set-up") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "README.md's set-up section has no sh block"
    (line,) = block.group(1).strip().splitlines()
    return line


@pytest.fixture
def fresh(tmp_path: Path) -> dict[str, str]:
    """A home with nothing in it; PATH: the system's tools and this test's Python only."""
    pytest.importorskip("hatchling", reason="the build backend (pip install -e '.[dev]')")
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # The interpreter the test environment was made from: the borrowed packages' own.
    (bin_dir / "python3").symlink_to(Path(sys.base_prefix, "bin", "python3"))
    borrowed = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]),
        "PYTHONPATH": os.pathsep.join(borrowed),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        # pip's inverted switch: this turns build isolation off (hatchling is borrowed too).
        "PIP_NO_BUILD_ISOLATION": "0",
        "OPENCODE_RESTORE_DATA_DIR": str(tmp_path / "data"),
    }


def _run(
    args: list[str], env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def test_the_readme_line_installs_a_working_command(fresh: dict[str, str]) -> None:
    home = Path(fresh["HOME"])
    line = readme_install_line()
    assert line.startswith("./install.sh")

    done = _run(["sh", "-c", line], fresh)

    assert done.stdout.startswith("# SESSION SUMMARY — Add --shout flag to greet CLI")
    assert f"{home}/.local/bin is not on PATH" in done.stderr
    command = home / ".local/bin/opencode-restore"
    venv = home / ".local/share/opencode-restore-venv"
    assert command.resolve() == (venv / "bin/opencode-restore").resolve()
    where = _run(
        [str(venv / "bin/python"), "-c", "import opencode_restore as m; print(m.__file__)"],
        fresh,
        cwd=home,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)
    where_version = _run([str(command), "--version"], fresh).stdout
    assert where_version.startswith("opencode-restore, version")
    assert "Serve the HTTP API" in _run([str(command), "serve", "--help"], fresh).stdout
    assert "over MCP" in _run([str(command), "mcp", "--help"], fresh).stdout
    # serve's and mcp's packages come with the default install, not with an extra.
    (metadata,) = venv.glob("lib/python3*/site-packages/opencode_restore-*.dist-info/METADATA")
    requires = [
        r for r in metadata.read_text("utf-8").splitlines() if r.startswith("Requires-Dist:")
    ]
    for package in ("fastapi", "uvicorn", "fastapi-offline", "mcp"):
        assert any(r.split()[1].startswith(package) and "extra ==" not in r for r in requires)

    # Again, now with ~/.local/bin on PATH: an upgrade over the same environment, no note.
    on_path = {**fresh, "PATH": os.pathsep.join([str(command.parent), fresh["PATH"]])}
    again = _run(["sh", "-c", line], on_path)
    assert again.stdout.startswith("# SESSION SUMMARY")
    assert "not on PATH" not in again.stderr
    assert _run(["opencode-restore", "--version"], on_path, cwd=home).stdout == where_version


def test_a_python_too_old_is_named(fresh: dict[str, str], tmp_path: Path) -> None:
    fake = tmp_path / "bin/python3"
    fake.unlink()
    fake.write_text("#!/bin/sh\necho 'Python 3.9.2'; exit 1\n")
    fake.chmod(0o755)
    done = subprocess.run(
        ["./install.sh"], cwd=ROOT, env=fresh, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr == (
        "install.sh: Python 3.9.2 is too old: opencode-restore needs 3.11 or newer (PYTHON=...)\n"
    )
