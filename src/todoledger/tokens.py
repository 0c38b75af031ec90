"""Tokens: who holds each secret, a person or an agent.

A tokens file has one `TOKEN IDENTITY [ROLE]` a line (`#` comments). ROLE is
`person` or `agent`; without it an identity that starts `agent:` is an agent
and any other is a person. A person's identity comes only from a route: a
terminal without an agent's marker, or a person's token (the board, HTTP MCP,
or the command line through `TODOLEDGER_TOKEN`). Errors never show a token.

The command line finds the file at `TODOLEDGER_TOKENS`, else at
`$XDG_CONFIG_HOME/todoledger/tokens` (`~/.config/todoledger/tokens`).
"""

from __future__ import annotations

import os

from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass

ROLES = ("person", "agent")
# Set on each request by `serve`'s Guard (mcp/http.py) from the token, never by
# a client: the holder's identity and role (`person` or `agent`). The board and
# the MCP server read them (who writes; whose answer an approval prompt is).
IDENTITY_HEADER = "x-todoledger-identity"
ROLE_HEADER = "x-todoledger-role"


@dataclass(frozen=True)
class Holder:
    """Who a token names: `name` leads the writer of every write it makes."""

    name: str
    person: bool


def load_tokens(path: str) -> dict[str, Holder]:
    """The tokens of a file, each with its holder; one clear line for a bad file."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: cannot read the tokens file ({exc.__class__.__name__})") from None
    found: dict[str, Holder] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) not in (2, 3):
            raise LedgerError(f"{path}:{number}: expected `TOKEN IDENTITY` or `TOKEN IDENTITY person|agent`")
        token, identity = parts[0], parts[1]
        role = parts[2] if len(parts) == 3 else ("agent" if identity.startswith("agent:") else "person")
        if len(token) < 16:
            raise LedgerError(f"{path}:{number}: a token needs at least 16 characters")
        if not all(c.isalnum() or c in "-_.:/" for c in identity) or len(identity) > 64:
            raise LedgerError(f"{path}:{number}: an identity is up to 64 letters, digits and -_.:/")
        if role not in ROLES:
            raise LedgerError(f"{path}:{number}: the role is person or agent, not {role!r}")
        if role == "person" and identity.startswith("agent:"):
            raise LedgerError(f"{path}:{number}: {identity} names an agent: it cannot hold a person's token")
        if token in found:
            raise LedgerError(f"{path}:{number}: this token is given twice")
        # An agent's identity says so wherever it leads a writer (`agent:ci@web`), so that
        # it is never read as a person's (`core.approval.principal`).
        name = identity if role == "person" or identity.startswith("agent:") else f"agent:{identity}"
        found[token] = Holder(name, role == "person")
    if not found:
        raise LedgerError(f"{path}: no tokens in the file")
    return found


def tokens_file() -> str:
    """Where the command line looks for the tokens file."""
    given = os.environ.get("TODOLEDGER_TOKENS")
    if given:
        return given
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "todoledger", "tokens")


def holder_of(token: str, path: str | None = None) -> Holder | None:
    """The holder of `token` in the tokens file (compared in constant time), or None."""
    import hmac

    path = path or tokens_file()
    if not os.path.exists(path):
        raise LedgerError(
            f"TODOLEDGER_TOKEN is set but there is no tokens file at {path} (TODOLEDGER_TOKENS)"
        )
    given = token.strip().encode()
    match = None
    for known, holder in load_tokens(path).items():
        if hmac.compare_digest(given, known.encode()):
            match = holder
    return match
