"""``serve`` without its packages (fastapi, uvicorn): one line naming the install command, no
traceback."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from opencode_restore.cli.store_cmds import SERVE_INSTALL_HINT
from opencode_restore.mcp.launch import INSTALL_HINT

#: Runs the command line with ``missing`` made unimportable, as when the extra is absent.
SCRIPT = """
import sys
sys.modules[sys.argv[1]] = None
from opencode_restore.entry import main
sys.argv = ["opencode-restore", "serve", "--port", "0"]
main()
"""


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn", "starlette", "fastapi_offline"])
def test_serve_without_the_api_extra_prints_the_install_hint(missing: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, missing], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {SERVE_INSTALL_HINT}\n"
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("hint", "requirements"),
    [(SERVE_INSTALL_HINT, "fastapi uvicorn fastapi-offline"), (INSTALL_HINT, "'mcp>=2.3,<3'")],
)
def test_the_hint_installs_into_this_installation(hint: str, requirements: str) -> None:
    # Not a package name missing from PyPI (opencode-restore[api]) nor `pipx install '.[api]'`
    # (a no-op once installed): this interpreter's own pip.
    assert hint.endswith(f": {shlex.quote(sys.executable)} -m pip install {requirements}")
