"""Bounds on MCP sessions over HTTP: a fair share of the session table for each client.

The SDK's session manager already bounds the total (`max_sessions`) and
expires idle sessions (`session_idle_timeout`); todoledger sets both far
below its defaults (10,000 sessions, 30 minutes), at which one client's loop
of `initialize` requests filled the table and locked every other agent out.
What the SDK does not do is share the table fairly: `ClientQuota` refuses a
client a new session (429) while it holds `per_client` live ones. A client is
its address plus the name it gives in `initialize` (`clientInfo.name`), so
agents on one machine (all at 127.0.0.1) are told apart.

It sees sessions only through HTTP: the session id the server answers an
`initialize` with, requests that carry it, a DELETE that ends it, a 404 that
says it is gone; a session unused for the idle timeout is counted as expired,
as the SDK expires it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_SESSIONS = 256
SESSIONS_PER_CLIENT = 16
SESSION_IDLE_SECONDS = 300.0
SESSION_HEADER = "mcp-session-id"


class ClientQuota:
    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        per_client: int = SESSIONS_PER_CLIENT,
        idle_seconds: float = SESSION_IDLE_SECONDS,
        max_body: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.path = path
        self.per_client = per_client
        self.idle_seconds = idle_seconds
        self.max_body = max_body
        self.clock = clock
        self.last_seen: dict[str, float] = {}  # session id -> last request
        self.owner: dict[str, tuple[str, str]] = {}  # session id -> client
        self.by_client: dict[tuple[str, str], set[str]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        session = Headers(scope=scope).get(SESSION_HEADER)
        if session is not None:
            await self._existing(session, scope, receive, send)
        elif scope["method"] == "POST":
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _existing(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        if session in self.last_seen:
            self.last_seen[session] = self.clock()
        status = await status_of(self.app, scope, receive, send)
        if status == 404 or (scope["method"] == "DELETE" and status is not None and status < 300):
            self._forget(session)
        elif session in self.last_seen:
            self.last_seen[session] = self.clock()  # idle counts from the end of a request, as in the SDK

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self.last_seen) > 2 * MAX_SESSIONS:  # clients that never came back: drop what expired
            for client in list(self.by_client):
                self._live(client)
        body, receive = await buffered(receive, self.max_body)
        client = (client_address(scope), _client_name(body))
        live = self._live(client)
        if len(live) >= self.per_client:
            message = (
                f"client {client[1] or client[0]!r} already has {len(live)} open sessions (the limit);"
                " end one with DELETE or reuse its mcp-session-id"
            )
            await JSONResponse({"error": message}, status_code=429, headers={"retry-after": "60"})(
                scope, receive, send
            )
            return
        opened: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                sid = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if sid:
                    opened.append(sid)
            await send(message)

        await self.app(scope, receive, watch)
        for sid in opened:
            self.last_seen[sid] = self.clock()
            self.owner[sid] = client
            self.by_client.setdefault(client, set()).add(sid)

    def _live(self, client: tuple[str, str]) -> set[str]:
        sessions = self.by_client.get(client, set())
        limit = self.clock() - self.idle_seconds
        for sid in [s for s in sessions if self.last_seen.get(s, 0.0) < limit]:
            self._forget(sid)
        return self.by_client.get(client, set())

    def _forget(self, session: str) -> None:
        self.last_seen.pop(session, None)
        client = self.owner.pop(session, None)
        if client is not None:
            sessions = self.by_client.get(client, set())
            sessions.discard(session)
            if not sessions:
                self.by_client.pop(client, None)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def _client_name(body: bytes) -> str:
    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return ""
    params = message.get("params")
    info = params.get("clientInfo") if isinstance(params, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name[:200] if isinstance(name, str) else ""


async def buffered(receive: Receive, limit: int) -> tuple[bytes, Receive]:
    """The request body (up to `limit` + 1 bytes, the SDK refuses bigger ones),
    and a `receive` that hands the same messages on."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body", False) or size > limit:
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay


async def status_of(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> int | None:
    status: int | None = None

    async def watch(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    await app(scope, receive, watch)
    return status
