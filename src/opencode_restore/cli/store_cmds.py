"""Store commands: ``hook``, ``sessions scan``, ``sessions list`` and ``serve``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import UsageError, missing_packages_hint
from ..fields import counted
from ..redact import redact_optional
from ..since import Since
from ..store.discovery import AGENTS
from .exits import friendly_errors
from .options import SINCE

#: The import names of the packages ``serve`` needs (and what they bring: starlette).
API_EXTRA = {"fastapi", "starlette", "uvicorn", "fastapi_offline"}
SERVE_INSTALL_HINT = missing_packages_hint("serve", ["fastapi", "uvicorn", "fastapi-offline"])


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--agent", default=None, help="The agent sending the payload (codex, gemini, ...).")
@click.option(
    "--memory",
    is_flag=True,
    help="Answer a fresh session's start with a digest of the project's recent sessions.",
)
@click.argument("payload", nargs=-1)
def hook(agent: str | None, memory: bool, payload: tuple[str, ...]) -> None:
    """Record a session from an agent hook (JSON on stdin, or as the last argument).

    Problems go to hook.log in the data directory (exit 0); when it cannot be written, one
    line on stderr and exit 1.
    """
    from ..hooks.receiver import run

    sys.exit(run(agent, payload[-1] if payload else None, memory=memory))


@click.group()
def sessions() -> None:
    """The session store: find sessions on disk and list them."""


def _store() -> object:
    from ..config import load_config
    from ..store import open_store

    return open_store(load_config().data_dir)


@sessions.command("scan")
@click.option("--agent", type=click.Choice(AGENTS), default=None, help="Only this agent.")
@click.option(
    "--root",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="Search this folder instead of the agents' default locations.",
)
@friendly_errors
def scan_cmd(agent: str | None, root: Path | None) -> None:
    """Find sessions where each agent writes them, register them and index what changed
    of them for ``search``."""
    from ..command_sink import command_sink
    from ..config import load_config
    from ..search.index import index_path, update
    from ..store.discovery import scan
    from ..store.store import Store
    from .search_cmds import progress_bar

    store = _store()
    assert isinstance(store, Store)
    result = scan(store, agent=agent, root=root, sink=command_sink())
    with progress_bar("indexing", announce=False) as step:
        update(store, index_path(load_config().data_dir), progress=step)
    per_agent: dict[str, set[str]] = {}
    for item in result.found:
        per_agent.setdefault(item.agent, set()).add(item.session_id)
    for name, ids in sorted(per_agent.items()):
        click.echo(f"{name:<12} {counted(len(ids), 'session')}")
    total = sum(len(ids) for ids in per_agent.values())
    files = counted(result.appended, "new transcript file")
    click.echo(f"{counted(total, 'session')} found, {files} registered")


def _list_line(when: str, agent: str, session_id: str, cwd: str, title: str) -> str:
    """One row of ``sessions list`` (the header row too, so the columns line up)."""
    return f"{when:<16}  {agent:<11} {session_id:<38} {cwd}  {title}".rstrip()


@sessions.command("list")
@click.option(
    "--agent", type=click.Choice(AGENTS), default=None, help="Only this agent's sessions."
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Only the sessions of this working directory.",
)
@click.option(
    "--since",
    type=SINCE,
    default=None,
    help="Only sessions active after this time (ISO 8601, or a span back from now: 24h, 7d).",
)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option(
    "--scan/--no-scan",
    default=True,
    show_default=True,
    help="Find new sessions in the agents' default locations first (file heads only).",
)
@friendly_errors
def list_cmd(
    agent: str | None, cwd: Path | None, since: Since | None, limit: int, fmt: str, scan: bool
) -> None:
    """List sessions, most recently active first, titled by their first request."""
    import orjson

    from ..command_sink import command_sink
    from ..store.db import iso_utc
    from ..store.discovery import scan as scan_sessions
    from ..store.lookup import chain_size
    from ..store.paths import cwd_variants
    from ..store.store import Store

    store = _store()
    assert isinstance(store, Store)
    if scan:
        scan_sessions(store, agent=agent, sink=command_sink())
    cwds = cwd_variants(cwd) if cwd is not None else None
    after = iso_utc(since.cutoff()) if since is not None else None
    rows, total = store.sessions(agent=agent, cwds=cwds, since=after, limit=limit)
    if fmt == "json":
        out = []
        for r in rows:
            full = store.session(r.id) or r
            out.append(
                {
                    "id": r.id,
                    "agent": r.agent,
                    "updated_at": r.updated_at,
                    "created_at": r.created_at,
                    "files": r.file_count,
                    "size": chain_size(full),
                    "native_log_file": r.native_log_file,
                    "cwd": redact_optional(r.cwd),
                    "title": redact_optional(r.title),
                }
            )
        click.echo(orjson.dumps({"sessions": out, "total": total}).decode())
        return
    if rows:
        click.echo(_list_line("updated", "agent", "id", "cwd", "title"))
    for r in rows:
        when = r.updated_at[:16].replace("T", " ")
        cwd_shown = redact_optional(r.cwd) or "-"
        click.echo(_list_line(when, r.agent, r.id, cwd_shown, redact_optional(r.title) or ""))
    click.echo(f"{len(rows)} of {counted(total, 'session')}")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    envvar="OPENCODE_RESTORE_TOKEN",
    default=None,
    help="The bearer token (env OPENCODE_RESTORE_TOKEN); given, every request needs it. "
    "Default: DATA_DIR/api-token (made 0600), needed for POST only on loopback.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Also answer requests with this Host name (repeatable; '*' = any). "
    "Loopback names are always allowed.",
)
@friendly_errors
def serve(host: str, port: int, token: str | None, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the HTTP API over the session store (docs at /docs, the web viewer at /)."""
    try:
        import uvicorn

        from ..api import create_app
        from ..api.security import is_loopback, load_or_create_token
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in API_EXTRA:
            raise UsageError(SERVE_INSTALL_HINT) from None
        raise

    loopback = is_loopback(host)
    if not loopback and not token:
        raise click.UsageError(
            f"refusing to bind {host} (not loopback) without --token; the API reads your sessions"
        )
    from ..config import load_config
    from ..store import open_store

    config = load_config()
    hosts = [*config.api.allowed_hosts, *allowed_hosts]
    if not loopback and host not in ("0.0.0.0", "::"):
        hosts.append(host)  # the address bound is a name clients use
    elif not loopback and not hosts:
        click.echo(
            f"bound to {host}: only loopback Host names are answered; "
            "add --allowed-host NAME for each name clients use",
            err=True,
        )
    explicit = token is not None
    if token is None:
        token, token_file = load_or_create_token(config.data_dir)
        click.echo(f"POST requests need the bearer token in {token_file}", err=True)
    app = create_app(
        open_store(config.data_dir),
        token=token,
        config=config,
        # An explicit token guards everything; the generated one guards POST on loopback.
        reads_need_token=explicit or not loopback,
        allowed_hosts=hosts,
    )
    shown = f"[{host}]" if ":" in host else host
    sign_in = " (reads need the token: open /#token=TOKEN once)" if explicit or not loopback else ""
    click.echo(f"web viewer: http://{shown}:{port}/{sign_in}", err=True)
    uvicorn.run(app, host=host, port=port, log_level="info")
