"""Duplicate keys in a tool call's arguments, caught on the raw request.

The SDK parses each JSON-RPC message itself, and its parser keeps the last of
two equal keys: seed 003's `{"priority":"pending","priority":"high"}` reached
the tools with its "pending" gone. The CLI and the hooks read agents' JSON
strictly (`core.jsonload`), so over MCP the transports hand this module the
text of each message before the SDK parses it (`remember`: stdio per line in
`mcp/stdio.py`, HTTP per body with `RememberBody`); the text rides the
request's context into the tool call (the SDK's streams carry each message's
contextvars to its handler), and `lost_keys` names what the parse lost.

The common call is parsed once. The fast check counts `":` in the text, one
per key of compact JSON (an upper bound: a string may hold one too), and
compares it with the keys the SDK's parse kept: equal counts mean no key was
lost. Only a call where they differ, or whose text has a quote before
whitespace (`"key" : 1`, pretty-printed JSON), is parsed a second time,
strictly, to name the key and both values.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any

from todoledger.core.jsonload import load_checked
from todoledger.core.model import Finding, LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["RememberBody", "lost_keys", "may_have_lost", "remember"]

# The text of the message being handled; set by the transport, read in the tool call.
_RAW: ContextVar[str | bytes | None] = ContextVar("todoledger_raw_message", default=None)
# jsonrpc, id, method, params: the envelope of every request, beside the params' own keys.
_ENVELOPE_KEYS = 4
_ARGUMENTS = "params.arguments"
# A quote followed by whitespace: a key may end `" :`, which `":` would not count.
_QUOTE_SPACE = re.compile(r'"\s')
_QUOTE_SPACE_BYTES = re.compile(rb'"\s')


def remember(raw: str | bytes) -> None:
    """The text of the message the transport is about to hand the SDK."""
    _RAW.set(raw)


def _kept_keys(value: dict[str, Any]) -> int:
    """How many keys the parsed value holds, in all its objects (iterative: it
    may be deep; exact types: the SDK's parse makes plain dicts and lists)."""
    count = 0
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        values = node.values() if type(node) is dict else node
        if type(node) is dict:
            count += len(node)
        for v in values:
            kind = type(v)
            if kind is dict or kind is list:
                push(v)
    return count


def may_have_lost(raw: str | bytes, params: dict[str, Any]) -> bool:
    """The fast check: could the parse of `raw` into these params have lost a key?

    Every key of compact JSON ends in `":`; a string may add more. So when no
    quote is followed by whitespace, the count of `":` is at least the number
    of keys in the text, and a count equal to the keys kept means none was lost."""
    if isinstance(raw, bytes):
        spaced = _QUOTE_SPACE_BYTES.search(raw) is not None
        marks = raw.count(b'":')
    else:
        spaced = _QUOTE_SPACE.search(raw) is not None
        marks = raw.count('":')
    return spaced or marks != _ENVELOPE_KEYS + _kept_keys(params)


def _under_arguments(f: Finding) -> Finding | None:
    """A finding of the whole message, rooted at the tool's arguments (as the CLI roots
    its payload); None for one outside them (the envelope is the client library's)."""
    where = f.where
    if where == _ARGUMENTS:
        return Finding(f.level, "$", f.code, f.message)
    if where.startswith(_ARGUMENTS + "."):
        return Finding(f.level, where[len(_ARGUMENTS) + 1 :], f.code, f.message)
    if where.startswith(_ARGUMENTS + "["):
        return Finding(f.level, where[len(_ARGUMENTS) :], f.code, f.message)
    return None


def lost_keys(params: Any) -> list[Finding]:
    """Duplicate keys in the arguments of the call being handled, as the CLI
    words them (`todos[1]: duplicate key "priority" (values "pending", "high");
    the first was lost`); empty when none, or when no transport gave the text."""
    raw = _RAW.get()
    if raw is None or not isinstance(params, dict) or not may_have_lost(raw, params):
        return []
    try:
        _, findings = load_checked(raw)
    except LedgerError:  # text the SDK read but the strict reader does not: not this check's to refuse
        return []
    found = (_under_arguments(f) for f in findings if f.code == "duplicate-key")
    return [f for f in found if f is not None]


class RememberBody:
    """ASGI: the body of each POST to the MCP path is remembered before the SDK
    reads it (up to `max_body` + 1 bytes: the SDK refuses bigger ones)."""

    def __init__(self, app: ASGIApp, *, path: str, max_body: int) -> None:
        self.app = app
        self.path = path
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].rstrip("/") == self.path:
            from todoledger.mcp.sessions import buffered

            body, receive = await buffered(receive, self.max_body)
            remember(body)
        await self.app(scope, receive, send)
