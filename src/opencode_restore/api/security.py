"""Who may call the API: the ``Host`` header and the bearer token.

A web page the user visits can make the browser talk to the API on 127.0.0.1 in two ways.
It can re-point its own host name at 127.0.0.1 (DNS rebinding) and then read answers as
"same origin": the ``Host`` header still carries the page's name, so only loopback names
(and the names the user allows) are served. It can also send a "simple" cross-site POST
(a form, ``fetch`` with ``no-cors``) whose answer it never reads: every POST needs the
bearer token, which such a request cannot carry, and a JSON content type, which it cannot
set. Reads need the token too once the API is reachable from other machines.

A browser cannot put a bearer token on the pages it opens, so the web viewer signs in
once: opened as ``/#token=...`` (a fragment, never sent, so never in an access log) or
given the token in its form, the page posts it as a bearer token and gets a cookie holding
a value derived from the token (not the token), ``HttpOnly`` (no script reads it) and
``SameSite=Strict`` (no other site's request carries it). The cookie stands for the token
on reads only; a POST still needs the bearer token itself.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..dirs import make_private_dirs
from ..errors import ConfigError

#: The token file in the data directory (created 0600 on first use).
TOKEN_FILE = "api-token"
#: ``allowed_hosts`` entry that turns the Host check off.
ANY_HOST = "*"
#: The web viewer's sign-in cookie (see the module's docstring).
VIEWER_COOKIE = "opencode_restore_viewer"


def viewer_cookie(token: str) -> str:
    """The viewer cookie's value for ``token``: a keyed hash, so a leaked cookie is not the
    token (it cannot start a restore) and a new token voids every cookie."""
    return hmac.new(token.encode(), b"opencode-restore web viewer", hashlib.sha256).hexdigest()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1), bracketed or not."""
    name = host.strip().lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name part of a ``Host`` header value: no port, lower case, IPv6 without brackets."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    name, colon, port = value.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".")


class HostPolicy:
    """Loopback names always; the names in ``extra`` too; anything when ``extra`` holds ``*``."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        names = {host_name(h) for h in extra if h.strip()}
        self.any = ANY_HOST in names
        self.names = frozenset(names - {ANY_HOST})

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header value is served."""
        if self.any:
            return True
        if not header:
            return False
        name = host_name(header)
        return is_loopback(name) or name in self.names


class HostGuard:
    """ASGI middleware answering 400 (JSON) to a request whose ``Host`` is not allowed."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        if self.policy.allows(host):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        detail = (
            f"Host {host!r} is not allowed (DNS rebinding guard); "
            "serve --allowed-host NAME adds a name"
        )
        await JSONResponse({"detail": detail}, status_code=400)(scope, receive, send)


def _read_token(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the API token ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: the API token file is not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ConfigError(
                f"{path}: the API token file must be yours and private (chmod 600 {path})"
            )
        token = fh.read(4096).decode("utf-8", "replace").strip()
    if not token:
        raise ConfigError(f"{path}: the API token file is empty")
    return token


def load_or_create_token(data_dir: Path) -> tuple[str, Path]:
    """The API token kept in ``data_dir`` (made on first use, mode 0600) and its file."""
    path = data_dir / TOKEN_FILE
    if not path.exists() and not path.is_symlink():
        make_private_dirs(data_dir)
        # Written whole under a private name, then linked into place: a reader never sees a
        # half-written token, and of two servers starting at once the first link wins.
        partial = data_dir / f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(secrets.token_urlsafe(32) + "\n")
            os.link(partial, path)
        except FileExistsError:
            pass
        finally:
            partial.unlink(missing_ok=True)
    return _read_token(path), path
