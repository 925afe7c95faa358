"""The HTTP API against a hostile web page and a hostile network (issue 14, item 6).

Each case is one request a browser page or a remote client can make; every test runs its
requests under ``anyio.fail_after`` so a hang fails instead of waiting.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from opencode_restore.api import create_app
from opencode_restore.api.security import (
    TOKEN_FILE,
    HostPolicy,
    host_name,
    is_loopback,
    load_or_create_token,
)
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.errors import ConfigError
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_COMPACT

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
TOKEN = "abuse-token-" + "x" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DEADLINE = 60
_JSON = "application/json"

#: Host values a DNS-rebinding page (or a confused proxy) sends: none names this machine.
HOSTILE_HOSTS = [
    "evil.example",
    "evil.example:8765",
    "127.0.0.1.evil.example",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "0.0.0.0:8765",
    "192.168.1.10",
    "[::ffff:7f00:1]:8765x",
    "",
]
LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765"]


def _run(app: FastAPI, body: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
    async def main() -> None:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            with anyio.fail_after(DEADLINE):
                await body(c)
            await app.state.jobs.close()

    anyio.run(main)


@pytest.fixture
def seeded(store: Store) -> Store:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    return store


def _loopback_app(store: Store, **kw: Any) -> FastAPI:
    """The app ``serve`` builds on loopback with the generated token: open reads."""
    return create_app(store, token=TOKEN, config=load_config(), reads_need_token=False, **kw)


def _runs(store: Store) -> int:
    count: int = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    return count


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
def test_dns_rebinding_host_is_refused(seeded: Store, host: str) -> None:
    """A page that re-pointed its name at 127.0.0.1 must not read the sessions."""

    async def body(c: httpx.AsyncClient) -> None:
        for path in ("/sessions", f"/sessions/{SID}/messages", "/healthz", "/openapi.json"):
            r = await c.get(path, headers={"host": host})
            assert r.status_code == 400, (path, r.text)
            assert r.headers["content-type"] == "application/json"
            assert "not allowed" in r.json()["detail"]
            assert SID not in r.text

    _run(_loopback_app(seeded), body)
    operations = _loopback_app(seeded).openapi()["paths"].values()
    assert all("400" in op["responses"] for methods in operations for op in methods.values())


def test_loopback_and_allowed_hosts_are_served(seeded: Store) -> None:
    async def body(c: httpx.AsyncClient) -> None:
        for host in [*LOOPBACK_HOSTS, "api.internal:8765"]:
            r = await c.get("/sessions", headers={"host": host})
            assert r.status_code == 200, (host, r.text)
        assert (await c.get("/sessions", headers={"host": "other.internal"})).status_code == 400

    _run(_loopback_app(seeded, allowed_hosts=["api.internal"]), body)
    assert HostPolicy(["*"]).allows("anything.example")
    assert not HostPolicy().allows(None)


def test_host_parsing() -> None:
    assert host_name("Example.COM.:80") == "example.com"
    assert host_name("[::1]:8765") == "::1"
    assert host_name("::1") == "::1"
    assert [is_loopback(h) for h in ("127.9.9.9", "[::1]", "localhost.", "10.0.0.1")] == [
        True,
        True,
        True,
        False,
    ]


def test_cross_site_post_starts_nothing(seeded: Store) -> None:
    """What a page can send cross-site without a preflight: a form or a no-cors fetch."""

    async def body(c: httpx.AsyncClient) -> None:
        url = f"/sessions/{SID}/restore"
        r = await c.post(url)  # no body, no content type, no token
        assert (r.status_code, r.json()["detail"]) == (401, "missing or wrong bearer token")
        for kind, content in [
            ("text/plain", b'{"max_turns": 1}'),
            ("application/x-www-form-urlencoded", b"max_turns=1"),
            ("multipart/form-data; boundary=x", b"--x--"),
        ]:
            r = await c.post(url, content=content, headers={"content-type": kind})
            assert r.status_code == 401, kind
            # Even with the token, a non-JSON request is refused before anything runs.
            r = await c.post(url, content=content, headers={"content-type": kind, **AUTH})
            assert r.status_code == 415, kind
            assert "application/json" in r.json()["detail"]
        r = await c.post(url, json={}, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        assert _runs(seeded) == 0
        for content in (b"", b'{"max_turns": true}', b'{"max_turns": 1, "x": 1}', b"[]"):
            r = await c.post(url, content=content, headers={"content-type": _JSON, **AUTH})
            assert r.status_code == 422, content
        assert _runs(seeded) == 0
        r = await c.post(url, json={}, headers=AUTH)
        assert r.status_code == 202  # the real client: token and a JSON object
        assert _runs(seeded) == 1

    _run(_loopback_app(seeded), body)


def test_beyond_loopback_every_endpoint_needs_the_token(seeded: Store) -> None:
    app = create_app(seeded, token=TOKEN, config=load_config())

    async def body(c: httpx.AsyncClient) -> None:
        paths = ["/healthz", "/sessions", f"/sessions/{SID}", f"/sessions/{SID}/messages"]
        paths += [f"/sessions/{SID}/summary", "/jobs/x", "/openapi.json", "/docs"]
        for path in paths:
            r = await c.get(path)
            assert r.status_code == 401, path
            assert r.json() == {"detail": "missing or wrong bearer token"}
            assert (await c.get(path, headers={"Authorization": "Bearer no"})).status_code == 401
            assert (await c.get(path, headers=AUTH)).status_code in (200, 404), path
        assert (await c.post(f"/sessions/{SID}/restore", json={})).status_code == 401

    _run(app, body)


def test_openapi_security_matches_what_is_enforced(seeded: Store) -> None:
    """Each operation declares the bearer scheme exactly when it answers 401 without it."""
    for reads_need_token in (False, True):
        app = create_app(
            seeded, token=TOKEN, config=load_config(), reads_need_token=reads_need_token
        )
        spec = app.openapi()
        assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
        declared: dict[tuple[str, str], bool] = {}
        for path, methods in spec["paths"].items():
            for method, op in methods.items():
                url = path.replace("{session_id}", SID).replace("{job_id}", "x")
                declared[(method.upper(), url)] = op.get("security") == [{"HTTPBearer": []}]
                assert ("401" in op["responses"]) == declared[(method.upper(), url)], path
        assert declared[("POST", f"/sessions/{SID}/restore")]
        assert sum(declared.values()) == (len(declared) if reads_need_token else 1)

        async def body(
            c: httpx.AsyncClient, declared: dict[tuple[str, str], bool] = declared
        ) -> None:
            for (method, url), secure in declared.items():
                r = await c.request(method, url, json={} if method == "POST" else None)
                assert (r.status_code == 401) == secure, (method, url, r.status_code)

        _run(app, body)


def test_unexpected_errors_are_json(seeded: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    app = _loopback_app(seeded)

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("database disk image is malformed")

    monkeypatch.setattr(Store, "sessions", broken)

    async def body(c: httpx.AsyncClient) -> None:
        r = await c.get("/sessions")
        assert r.status_code == 500
        assert r.json() == {"detail": "internal error (RuntimeError)"}
        assert "malformed" not in r.text  # no internals to the client
        for path, method in [("/nope", "GET"), ("/sessions", "DELETE")]:
            r = await c.request(method, path)
            assert r.status_code in (404, 405)
            assert r.headers["content-type"] == "application/json"

    _run(app, body)


def test_a_file_failing_as_it_is_opened_is_a_json_error(
    seeded: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opencode_restore.api.routes import messages as messages_routes

    def unreadable(*_a: object, **_k: object) -> Any:
        raise PermissionError(13, "Permission denied")
        yield  # a generator, as the readers are: it fails on the first read

    monkeypatch.setattr(messages_routes, "iter_json", unreadable)

    async def body(c: httpx.AsyncClient) -> None:
        r = await c.get(f"/sessions/{SID}/messages")
        assert r.status_code == 410
        assert r.json() == {"detail": "[Errno 13] Permission denied"}

    _run(_loopback_app(seeded), body)


def test_token_file_is_private_and_reused(tmp_path: Path) -> None:
    token, path = load_or_create_token(tmp_path / "data")
    assert path == tmp_path / "data" / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 32
    assert load_or_create_token(tmp_path / "data") == (token, path)
    assert [p.name for p in path.parent.iterdir()] == [TOKEN_FILE]  # no partial left behind
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_or_create_token(tmp_path / "data")
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)
    (tmp_path / "elsewhere").write_text("attacker-chosen\n")
    with pytest.raises(ConfigError, match="cannot read the API token"):
        load_or_create_token(tmp_path / "data")


def test_a_store_app_without_a_token_makes_one(seeded: Store) -> None:
    app = create_app(seeded, config=load_config())
    token = (seeded.path.parent / TOKEN_FILE).read_text().strip()

    async def body(c: httpx.AsyncClient) -> None:
        assert (await c.get("/sessions")).status_code == 401
        ok = await c.get("/sessions", headers={"Authorization": f"Bearer {token}"})
        assert ok.json()["total"] == 1

    _run(app, body)


def test_serve_guards(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``serve`` builds: the generated token guards POST on loopback, an explicit one
    (or a non-loopback bind) guards everything, and the bound address is an allowed Host."""
    built: list[dict[str, Any]] = []
    import uvicorn

    from opencode_restore.api import app as app_module

    real = app_module.create_app

    def spy(*args: Any, **kwargs: Any) -> FastAPI:
        built.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr("opencode_restore.api.create_app", spy)
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    monkeypatch.delenv("OPENCODE_RESTORE_TOKEN", raising=False)
    runner = CliRunner()
    r = runner.invoke(cli, ["serve"])
    assert r.exit_code == 0, r.output
    assert "POST requests need the bearer token in" in r.output
    generated = (data_dir / TOKEN_FILE).read_text().strip()
    assert (built[-1]["token"], built[-1]["reads_need_token"]) == (generated, False)
    r = runner.invoke(cli, ["serve", "--token", "mine"])
    assert (built[-1]["token"], built[-1]["reads_need_token"]) == ("mine", True)
    r = runner.invoke(cli, ["serve", "--host", "10.1.2.3", "--allowed-host", "box.lan"])
    assert r.exit_code == 2
    assert "without --token" in r.output
    r = runner.invoke(
        cli,
        ["serve", "--host", "10.1.2.3", "--allowed-host", "box.lan"],
        env={"OPENCODE_RESTORE_TOKEN": "from-env"},
    )
    assert r.exit_code == 0, r.output
    assert built[-1]["token"] == "from-env"
    assert built[-1]["reads_need_token"] is True
    assert list(built[-1]["allowed_hosts"]) == ["box.lan", "10.1.2.3"]
    r = runner.invoke(cli, ["serve", "--host", "0.0.0.0", "--token", "t"])
    assert "only loopback Host names are answered" in r.output
