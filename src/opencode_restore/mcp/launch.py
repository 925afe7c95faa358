"""``opencode-restore mcp`` started the fast way: ``entry`` routes it here before the
command line's modules are imported, and the front door answers before the SDK is."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import IO

from ..errors import missing_packages_hint
from .front import Loaded, divert_std_streams, recorded, serve

INSTALL_HINT = missing_packages_hint("the MCP server", ["mcp>=2.3,<3"])
TTY_HINT = (
    "opencode-restore mcp speaks MCP on stdin/stdout; an agent starts it "
    "(see `opencode-restore install AGENT --mcp`)"
)


def has_sdk() -> bool:
    """True when the ``mcp`` SDK is installed (found, not imported)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def loader(
    model: str | None, base_url: str | None, config_path: Path | None
) -> Loaded:  # pragma: no cover - runs in the server's loading thread
    """Load the config, the SDK and the tools; return what serves the connection."""
    import anyio

    from ..config import load_config
    from .server import build_server, serve_files

    config = load_config(config_path, overrides={"llm": {"model": model, "base_url": base_url}})
    server = build_server(config)

    def run(stdin: IO[str], stdout: IO[str]) -> None:
        anyio.run(serve_files, server, stdin, stdout)

    return run


def run_server(model: str | None, base_url: str | None, config_path: Path | None) -> int:
    """Serve over stdin/stdout until the client closes it; the exit code (2: no SDK)."""
    if not has_sdk():
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        print(TTY_HINT, file=sys.stderr)
    wire = divert_std_streams()
    return serve(wire, lambda: loader(model, base_url, config_path), recorded())


def main(argv: list[str]) -> int:
    """``opencode-restore mcp [-m PROVIDER:MODEL] [--base-url URL] [--config FILE]``."""
    parser = argparse.ArgumentParser(prog="opencode-restore mcp", add_help=False)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--config", type=Path, default=None)
    args = parser.parse_args(argv)
    return run_server(args.model, args.base_url, args.config)
