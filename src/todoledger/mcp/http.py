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
from todoledger.mcp.duplicates import RememberBody
from todoledger.mcp.limits import LoginLimiter, client_key
from todoledger.mcp.server import build_server
from todoledger.mcp.sessions import (
    MAX_SESSIONS,
    SESSION_IDLE_SECONDS,
    ClientQuota,
    buffered,
    client_address,
    status_of,
)
from todoledger.mcp.tools import PlanTools
from todoledger.tokens import IDENTITY_HEADER, ROLE_HEADER, STARTER_ROLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.shared import SharedLedger
    from todoledger.tokens import Holder

    Registry = Callable[[str], Holder | None]

MCP_PATH = "/mcp"
# A browser cannot send a bearer header when it opens a page: the board asks
# for the token once (LOGIN_PATH) and keeps it in this cookie (HttpOnly, SameSite=Strict).
TOKEN_COOKIE = "todoledger_token"
LOGIN_PATH = "/login"
# The login form's body (`token=...`): read only up to this, refused (413) beyond it.
LOGIN_MAX_BYTES = 4096
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
# The JSON-RPC envelope around the largest accepted tool arguments.
MAX_BODY_BYTES = MAX_PAYLOAD_BYTES + 64 * 1024
KEEP_ALIVE_SECONDS = 75  # idle HTTP connections: longer than an agent pauses between calls
# A single `--token` is shared by whoever holds it: a person's only on loopback
# (the person who started the server); bound elsewhere its holders write as this agent.
SHARED_TOKEN_IDENTITY = "agent:token"


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
    """In front of every route (MCP and the board): Host and Origin must name
    this server (DNS rebinding), and with a token every request must carry
    `Authorization: Bearer <token>` (or the board's cookie, set at /login).

    The identity of a request comes from its token only: the identity and role
    headers (IDENTITY_HEADER, ROLE_HEADER) a client sends are dropped, and set
    from `serve --tokens` (each token's holder, a person or an agent), from the
    tokens a person registered in the ledger (`registry`, whoever started the
    server), or, for a single `--token` off loopback, to `shared` (an agent). A
    single token on loopback, or none, sets no identity: the person who
    started the server is behind it. Unless no person started it (`starter`:
    the writer of its agent's shell or script): then such a request carries
    the starter's identity in the role `starter`, and nobody there is a person."""

    def __init__(
        self,
        app: ASGIApp,
        settings: TransportSecuritySettings,
        token: str | None,
        origins_only: list[str] | None = None,
        identities: dict[str, Holder] | None = None,
        shared: Holder | None = None,
        registry: Registry | None = None,
        starter: str | None = None,
        limiter: LoginLimiter | None = None,
    ) -> None:
        self.app = app
        self.limiter = limiter or LoginLimiter()
        self.registry = registry
        self.starter = starter
        self.origin_check = TransportSecurityMiddleware(settings)
        self.token = token.encode() if token else None
        # serve --tokens: each bearer token names the person or agent whose writes it carries.
        # The file holds their SHA-256 only: a presented token is hashed, then compared.
        self.identities = [(hexed.encode(), holder) for hexed, holder in (identities or {}).items()]
        self.shared = shared
        # Bound to every interface (token required): clients may use any of the
        # machine's names or addresses, so only browser Origins are checked
        # against these host names.
        self.origins_only = origins_only

    def holder(self, credential: bytes) -> Holder | None:
        """The holder a `--tokens` token names (its hash compared in constant time, all of them)."""
        if not credential or not self.identities:
            return None
        from todoledger.tokens import token_digest

        hexed = token_digest(credential.decode("utf-8", "replace")).encode()
        found = None
        for known, holder in self.identities:
            if hmac.compare_digest(hexed, known):
                found = holder
        return found

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
        # Whatever a client sends in the identity and role headers is dropped: only a token sets them.
        dropped = (IDENTITY_HEADER.encode(), ROLE_HEADER.encode())
        raw = [(k, v) for k, v in scope["headers"] if k.lower() not in dropped]
        scope = dict(scope, headers=raw)
        required = self.token is not None or bool(self.identities)
        holder: Holder | None = None
        client = client_key(client_address(scope))
        if scope.get("path") == LOGIN_PATH and scope.get("method") == "POST":
            await self.login(scope, receive, send, client)
            return
        if scope.get("path") != LOGIN_PATH:
            given = headers.get("authorization", "").encode()
            scheme, _, credential = given.partition(b" ")
            credential = credential.strip() if scheme.lower() == b"bearer" else b""
            cookie = Request(scope).cookies.get(TOKEN_COOKIE, "").encode()
            presented = credential or cookie
            # Counted on every server, a tokenless one too: it still looks tokens up in the
            # ledger's registry, where a guess would otherwise go on unbounded.
            if presented and await self.held_back(scope, receive, send, client):
                return
            holder = self.holder(credential) or (None if credential else self.holder(cookie))
            if holder is None and presented and self.registry is not None:
                holder = await self.registered(presented)
            single = self.token is not None and (
                hmac.compare_digest(credential, self.token)
                or (not credential and bool(cookie) and hmac.compare_digest(cookie, self.token))
            )
            if holder is None and presented and not single:
                self.limiter.failed(client)
            if holder is None and single:
                holder = self.shared  # None on loopback: the person who started the server
            elif holder is None and required:
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
        if holder is not None:
            role = b"person" if holder.person else b"agent"
            scope["headers"] = [*raw, (dropped[0], holder.name.encode()), (dropped[1], role)]
        elif self.starter is not None:  # no person started this server: no one here is a person
            scope["headers"] = [
                *raw,
                (dropped[0], self.starter.encode()),
                (dropped[1], STARTER_ROLE.encode()),
            ]
        await self.app(scope, receive, send)

    async def held_back(self, scope: Scope, receive: Receive, send: Send, client: str) -> bool:
        """Answer 429 when `client` failed too many logins this minute (see `mcp.limits`)."""
        wait = self.limiter.retry_after(client)
        if wait is None:
            return False
        message = (
            f"too many wrong tokens from {client or 'this client'}:"
            f" at most {self.limiter.limit} a minute; try again in {wait} s"
        )
        await JSONResponse({"error": message}, status_code=429, headers={"retry-after": str(wait)})(
            scope, receive, send
        )
        return True

    async def login(self, scope: Scope, receive: Receive, send: Send, client: str) -> None:
        """A POST to /login: the client's failed logins counted, its body capped before it is read."""
        if await self.held_back(scope, receive, send, client):
            return
        length = Headers(scope=scope).get("content-length")
        too_big = length is not None and (not length.isdigit() or int(length) > LOGIN_MAX_BYTES)
        if not too_big:  # a chunked body is read only up to the cap
            body, receive = await buffered(receive, LOGIN_MAX_BYTES)
            too_big = len(body) > LOGIN_MAX_BYTES
        if too_big:
            await _refuse(scope, receive, send, 413, f"a login is at most {LOGIN_MAX_BYTES} bytes")
            return
        status = await status_of(self.app, scope, receive, send)
        if status == 401:  # the board said: not the token
            self.limiter.failed(client)

    async def registered(self, credential: bytes) -> Holder | None:
        """The holder of a token a person registered in the ledger (a query, in a thread)."""
        import anyio

        assert self.registry is not None
        lookup = self.registry
        try:
            return await anyio.to_thread.run_sync(lambda: lookup(credential.decode("utf-8", "replace")))
        except LedgerError:  # the ledger cannot answer now: no identity from it
            return None


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    await JSONResponse({"error": message}, status_code=status)(scope, receive, send)


def load_tokens(path: str) -> dict[str, Holder]:
    """`serve --tokens FILE` (`todoledger.tokens`): a token's SHA-256 -> its holder,
    whose identity leads the writer name of every write the token makes."""
    from todoledger.tokens import load_tokens as holders

    return holders(path)


def shared_token_holder(host: str, token: str | None) -> Holder | None:
    """Who holds a single `--token`: on loopback the person who started the
    server (None: no identity is set); bound elsewhere, an agent."""
    from todoledger.tokens import Holder

    if token is None or is_loopback(host):
        return None
    return Holder(SHARED_TOKEN_IDENTITY, False)


def shared_token_line(host: str, token: str | None) -> str | None:
    """The line `serve` prints at start about a single token off loopback."""
    if shared_token_holder(host, token) is None:
        return None
    return (
        f"todoledger: on {host} the --token's holders write as {SHARED_TOKEN_IDENTITY}, an agent:"
        " they cannot approve, trust or undo others' changes; give people their own tokens (--tokens FILE)"
    )


def starter_line(starter: str) -> str:
    """The line `serve` prints at start when no person started it."""
    return (
        f"todoledger: started by {starter}, not a person: without a person's registered token"
        " (todoledger token add), writes here are that writer's and nobody here can approve, trust or"
        " undo others' changes"
    )


def check_exposure(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise LedgerError(
            f"refusing to serve on {host} without a token: other machines could change the ledger;"
            " pass --token or set TODOLEDGER_TOKEN (clients send Authorization: Bearer <token>)"
        )


def check_token(token: str | None) -> None:
    """A single `--token` guards the whole server: refuse one a guesser could find."""
    from todoledger.tokens import weak_token

    why = weak_token(token) if token else None
    if why is not None:
        raise LedgerError(why)


def create_app(
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    plan: str | None = None,
    allow_hosts: Iterable[str] = (),
    routes: Iterable[Route] = (),
    identities: dict[str, Holder] | None = None,
    allow_checks: bool = False,
    shared: SharedLedger | None = None,
    starter: str | None = None,
) -> tuple[ASGIApp, PlanTools]:
    """The ASGI app: MCP at /mcp plus any extra `routes` (the web board),
    all behind the Host/Origin checks and the token(s). Checks that arrive
    here are untrusted (`todoledger trust`); none runs unless `allow_checks`.
    `starter`: who started the server when that was no person (see `Guard`);
    None: a person did (the command line decides, `cmd_board.serve`)."""
    check_exposure(host, token or ("tokens" if identities else None))
    check_token(token)
    if starter is not None and identities:
        raise LedgerError(
            f"serve --tokens: this server is started by {starter}, not a person, so its tokens file"
            " cannot say who is a person (whoever started it wrote that file); start it from a plain"
            " terminal or with TODOLEDGER_TOKEN set to a person's registered token, or register the"
            " tokens in the ledger (todoledger token add) and serve without the file"
        )
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
    # Innermost: the body, as the client sent it, for the duplicate-key check of its tool call.
    remembered = RememberBody(app, path=MCP_PATH, max_body=MAX_BODY_BYTES)
    quota = ClientQuota(remembered, path=MCP_PATH, max_body=MAX_BODY_BYTES)
    registry = shared.token_holder if shared is not None else tools.shared.token_holder
    # No person started it: a single token's holders are the starter, never an agent a token shows.
    holder = shared_token_holder(host, token) if starter is None else None
    guard = Guard(quota, settings, token, origins_only, identities, holder, registry, starter)
    return guard, tools


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
    identities: dict[str, Holder] | None = None,
    starter: str | None = None,
) -> None:
    """Serve MCP (and any extra `routes`, the board) until stopped; `started`
    gets the base URL once the server listens. `identities`: the tokens file
    read already (else `tokens_file` is read)."""
    import threading

    import uvicorn

    if identities is None and tokens_file:
        identities = load_tokens(tokens_file)
    app, tools = create_app(
        host=host,
        token=token,
        plan=plan,
        allow_hosts=allow_hosts,
        routes=routes,
        identities=identities,
        allow_checks=allow_checks,
        shared=shared,
        starter=starter,
    )
    shown = f"[{host}]" if ":" in host else host
    auth = " (bearer token required)" if token or identities else ""
    print(f"todoledger: MCP on http://{shown}:{port}{MCP_PATH}{auth}", file=sys.stderr, flush=True)
    line = shared_token_line(host, token) if starter is None else starter_line(starter)
    if line:
        print(line, file=sys.stderr, flush=True)
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
