"""`todoledger serve`: MCP over streamable HTTP, with a bearer token for
remote agents and Host/Origin checks against DNS rebinding."""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import socket
import sys
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from todoledger.core.model import MAX_PAYLOAD_BYTES, LedgerError
from todoledger.mcp.server import IDENTITY_HEADER, build_server
from todoledger.mcp.sessions import MAX_SESSIONS, SESSION_IDLE_SECONDS, ClientQuota
from todoledger.mcp.tools import PlanTools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.shared import SharedLedger

MCP_PATH = "/mcp"
# A browser cannot send a bearer header when it opens a page: the board asks
# for the token once (LOGIN_PATH) and keeps it in this cookie (HttpOnly, SameSite=Strict).
TOKEN_COOKIE = "todoledger_token"
LOGIN_PATH = "/login"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
# The JSON-RPC envelope around the largest accepted tool arguments.
MAX_BODY_BYTES = MAX_PAYLOAD_BYTES + 64 * 1024
KEEP_ALIVE_SECONDS = 75  # idle HTTP connections: longer than an agent pauses between calls


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hostnames(host: str, extra: Iterable[str] = ()) -> list[str]:
    """Names a request's Host (and a browser's Origin) may carry: loopback,
    the bound address, this machine's names when bound to every interface,
    and any the user allows."""
    names: list[str] = list(LOOPBACK_NAMES)
    if host in WILDCARDS:
        names.append(socket.gethostname())
        with contextlib.suppress(OSError):
            names.extend(str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None))
    elif host not in names:
        names.append(host.strip("[]"))
    names.extend(extra)
    return list(dict.fromkeys(n.lower() for n in names if n))


def origin_allowed(origin: str, names: Iterable[str]) -> bool:
    """A browser Origin names one of `names` exactly, on any port: parsed and
    compared, not pattern-matched (`[::1]` is a character class to fnmatch)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return False
    if parts.username is not None or parts.password is not None or port == 0:
        return False
    host = (parts.hostname or "").lower()
    return bool(host) and host in {name.lower().strip("[]") for name in names}


def security_settings(host: str, extra: Iterable[str] = ()) -> TransportSecuritySettings:
    hosts: list[str] = []
    origins: list[str] = []
    for name in allowed_hostnames(host, extra):
        shown = f"[{name}]" if ":" in name else name
        hosts += [shown, f"{shown}:*"]
        origins += [f"{scheme}://{shown}{port}" for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class Guard:
    """In front of every route (MCP now, the board later): Host and Origin
    must name this server (DNS rebinding), and with a token every request
    must carry `Authorization: Bearer <token>`."""

    def __init__(
        self,
        app: ASGIApp,
        settings: TransportSecuritySettings,
        token: str | None,
        origins_only: list[str] | None = None,
        identities: dict[str, str] | None = None,
    ) -> None:
        self.app = app
        self.origin_check = TransportSecurityMiddleware(settings)
        self.token = token.encode() if token else None
        # serve --tokens: each bearer token names the person or agent whose writes it carries.
        self.identities = [(t.encode(), who) for t, who in (identities or {}).items()]
        # Bound to every interface (token required): clients may use any of the
        # machine's names or addresses, so only browser Origins are checked
        # against these host names.
        self.origins_only = origins_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.origins_only is not None:
            origin = headers.get("origin")
            if origin and not origin_allowed(origin, self.origins_only):
                await _refuse(
                    scope,
                    receive,
                    send,
                    403,
                    f"origin {origin} is not allowed (todoledger serve --allow-host NAME)",
                )
                return
        else:
            refused = await self.origin_check.validate_request(Request(scope))
            if refused is not None:
                what = (
                    f"host {headers.get('host')}"
                    if refused.status_code == 421
                    else f"origin {headers.get('origin')}"
                )
                message = f"{what} does not name this server (todoledger serve --allow-host NAME adds it)"
                await _refuse(scope, receive, send, refused.status_code, message)
                return
        # Whatever a client sends in the identity header is dropped: only a token sets it.
        raw = [(k, v) for k, v in scope["headers"] if k.lower() != IDENTITY_HEADER.encode()]
        scope = dict(scope, headers=raw)
        if (self.token is not None or self.identities) and scope.get("path") != LOGIN_PATH:
            given = headers.get("authorization", "").encode()
            scheme, _, credential = given.partition(b" ")
            credential = credential.strip()
            bearer = scheme.lower() == b"bearer"
            cookie = Request(scope).cookies.get(TOKEN_COOKIE, "").encode()
            who = [
                name for known, name in self.identities if bearer and hmac.compare_digest(credential, known)
            ]
            if who:
                scope["headers"] = [*raw, (IDENTITY_HEADER.encode(), who[0].encode())]
            elif not (
                self.token is not None
                and (
                    (bearer and hmac.compare_digest(credential, self.token))
                    or (cookie and hmac.compare_digest(cookie, self.token))
                )
            ):
                if scope.get("method") == "GET" and "text/html" in headers.get("accept", ""):
                    await RedirectResponse(LOGIN_PATH, status_code=303)(scope, receive, send)
                    return
                reason = "wrong bearer token" if given else "missing bearer token"
                body = {
                    "error": f"{reason}: send Authorization: Bearer <token> (todoledger serve --token/--tokens)"
                }
                challenge = {"www-authenticate": 'Bearer realm="todoledger"'}
                await JSONResponse(body, status_code=401, headers=challenge)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    await JSONResponse({"error": message}, status_code=status)(scope, receive, send)


def load_tokens(path: str) -> dict[str, str]:
    """`serve --tokens FILE` (`todoledger.tokens`): token -> the identity that
    leads the writer name of every write the token makes."""
    from todoledger.tokens import load_tokens as holders

    return {token: holder.name for token, holder in holders(path).items()}


def check_exposure(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise LedgerError(
            f"refusing to serve on {host} without a token: other machines could change the ledger;"
            " pass --token or set TODOLEDGER_TOKEN (clients send Authorization: Bearer <token>)"
        )


def create_app(
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    plan: str | None = None,
    allow_hosts: Iterable[str] = (),
    routes: Iterable[Route] = (),
    identities: dict[str, str] | None = None,
    allow_checks: bool = False,
    shared: SharedLedger | None = None,
) -> tuple[ASGIApp, PlanTools]:
    """The ASGI app: MCP at /mcp plus any extra `routes` (the web board),
    all behind the Host/Origin checks and the token(s). Checks that arrive
    here are untrusted (`todoledger trust`); none runs unless `allow_checks`."""
    check_exposure(host, token or ("tokens" if identities else None))
    server, tools = build_server(plan=plan, shared=shared)
    tools.trusted_checks, tools.run_checks = False, allow_checks
    for route in routes:
        server.custom_route(route.path, methods=sorted(route.methods or ["GET"]), name=route.name)(
            route.endpoint
        )
    settings = security_settings(host, allow_hosts)
    origins_only = None
    if host in WILDCARDS:
        origins_only = allowed_hostnames(host, allow_hosts)
        settings = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        transport_security=settings,
        host=host,
        max_sessions=MAX_SESSIONS,
        session_idle_timeout=SESSION_IDLE_SECONDS,
    )
    quota = ClientQuota(app, path=MCP_PATH, max_body=MAX_BODY_BYTES)
    return Guard(quota, settings, token, origins_only, identities), tools


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    plan: str | None = None,
    allow_hosts: Iterable[str] = (),
    log_level: str = "warning",
    routes: Iterable[Route] = (),
    started: Callable[[str], None] | None = None,
    tokens_file: str | None = None,
    allow_checks: bool = False,
    shared: SharedLedger | None = None,
) -> None:
    """Serve MCP (and any extra `routes`, the board) until stopped; `started`
    gets the base URL once the server listens."""
    import threading

    import uvicorn

    identities = load_tokens(tokens_file) if tokens_file else None
    app, tools = create_app(
        host=host,
        token=token,
        plan=plan,
        allow_hosts=allow_hosts,
        routes=routes,
        identities=identities,
        allow_checks=allow_checks,
        shared=shared,
    )
    shown = f"[{host}]" if ":" in host else host
    auth = " (bearer token required)" if token or identities else ""
    print(f"todoledger: MCP on http://{shown}:{port}{MCP_PATH}{auth}", file=sys.stderr, flush=True)
    # SIGTERM: stop accepting, give requests in flight a moment, then close what is left
    # (an open event stream, such as the board's live updates, would otherwise hold the
    # shutdown for as long as its client wants).
    # Keep-alive: uvicorn closes an idle connection after 5 s, while an agent often thinks
    # longer than that between two tool calls; a request sent as the server closes its
    # connection is reset (the client sees a ReadError), so idle connections stay 75 s.
    config: Any = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=1,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    server = uvicorn.Server(config)
    if started is not None:
        base = f"http://{'127.0.0.1' if host in WILDCARDS else shown}:{port}"

        def announce() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.02)
            if server.started:
                started(base)

        threading.Thread(target=announce, daemon=True).start()
    try:
        server.run()
    finally:
        tools.close()
