"""Who an MCP call writes as: the rules both `todoledger mcp` paths share (the
SDK's, `mcp/server.py`, and the lean one, `mcp/lean.py`), so that neither adds
rules of its own. SDK-free: the lean path imports it before any SDK."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# A stdio server process serves one client: that is its session, whichever path answers
# (os.urandom, not secrets: that module would load hashlib on the lean start).
PROCESS_SESSION = os.urandom(4).hex()


def client_writer(client_name: str | None, session: str) -> str:
    """`mcp:<client name>:<session>`: the client's own name from the handshake
    (sanitised, no `@`: it marks a token's identity) and the session."""
    name = client_name if client_name is not None else "client"
    name = "".join(c if c.isalnum() or c in "-_./" else "-" for c in name)[:64] or "client"
    return f"mcp:{name}:{session}"


def lead_writer(identity: str | None, args: Any, writer: str) -> tuple[Any, str]:
    """Behind `serve --tokens`, the token's person or agent leads every writer
    name, the one an agent passes included: writers are not self-declared."""
    from todoledger.core.model import LedgerError

    mark = f"{identity}@" if identity else ""
    given = args.get("writer") if isinstance(args, dict) else None
    if isinstance(given, str) and "@" in given and not (mark and given.startswith(mark)):
        # `<identity>@...` is how a token's holder leads a writer: never self-declared.
        raise LedgerError(
            f"writer {given!r} has an '@': only a token's identity leads a writer (serve --tokens)"
        )
    if not identity:
        return args, writer
    if isinstance(given, str) and given.strip() and not given.startswith(mark):
        args = args | {"writer": mark + given}
    return args, mark + writer
