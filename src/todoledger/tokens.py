"""Tokens: who holds each secret, a person or an agent.

A tokens file has one `TOKEN IDENTITY [ROLE]` a line (`#` comments). ROLE is
`person` or `agent`; without it an identity that starts `agent:` is an agent
and any other is a person. A person's identity comes only from a route: a
terminal without an agent's marker, or a person's token (the board, HTTP MCP,
or the command line through `TODOLEDGER_TOKEN`). Errors never show a token.

A tokens file is read by `serve --tokens FILE` only, and believed only when a
person started that server (`mcp/http.py`). The command line believes only the
tokens a person registered in the ledger (`ledger.tokens`, `todoledger token
add`): a file that its environment names could be the agent's own.
"""

from __future__ import annotations

from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass

ROLES = ("person", "agent")
# Set on each request by `serve`'s Guard (mcp/http.py) from the token, never by
# a client: the holder's identity and role (`person` or `agent`). The board and
# the MCP server read them (who writes; whose answer an approval prompt is).
IDENTITY_HEADER = "x-todoledger-identity"
ROLE_HEADER = "x-todoledger-role"
# The role of a request with no token's identity on a server that no person
# started (`serve` from an agent's shell, or without a terminal): its identity is
# the starter's writer, and no one there is a person.
STARTER_ROLE = "starter"


@dataclass(frozen=True)
class Holder:
    """Who a token names: `name` leads the writer of every write it makes."""

    name: str
    person: bool


MIN_TOKEN_CHARS = 16
# `serve --token`: at least 128 bits of randomness, as 32 hex or 22 base64url characters.
HEX_TOKEN_CHARS = 32
BASE64URL_TOKEN_CHARS = 22
_HEX = frozenset("0123456789abcdefABCDEF")
# A random token of the length asked for repeats a few characters, never only these.
MIN_DISTINCT_CHARS = 8
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


def weak_token(token: str) -> str | None:
    """Why a single shared token (`serve --token`) is too weak to guard a
    server, or None: fewer than 128 bits of randomness, read as hex when it is
    only hex digits and as base64url otherwise. Never shows the token."""
    hex_only = set(token) <= _HEX
    need = HEX_TOKEN_CHARS if hex_only else BASE64URL_TOKEN_CHARS
    if len(token) < need:
        kind = "hex digits" if hex_only else "characters"
        why = f"it has {len(token)} {kind}, under 128 bits of randomness"
    elif len(set(token)) < MIN_DISTINCT_CHARS:
        why = f"it repeats {len(set(token))} characters, nothing like a random one"
    elif (pattern := low_entropy_pattern(token)) is not None:
        why = f"it is {pattern}, nothing like a random one"
    else:
        return None
    return (
        f"--token is too weak to guard the server: {why}; a token needs at least"
        f" {HEX_TOKEN_CHARS} hex or {BASE64URL_TOKEN_CHARS} base64url characters; make one with {MAKE_TOKEN}"
    )


# Rows a person types without thinking: a token made of runs of them is a pattern.
_KEYBOARD = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm", "abcdefghijklmnopqrstuvwxyz")
_RUN = 4  # characters in a row along one of those before a stretch counts as a run


def low_entropy_pattern(token: str) -> str | None:
    """What makes a long, varied-looking token guessable, or None: a block
    repeated (`0123456789abcdef` twice), or mostly runs along the alphabet, the
    digits or a keyboard row (`abcdefghijklmnopqrstuvwxyz012345`, `qwertyuiop...`)."""
    n = len(token)
    for period in range(1, n // 2 + 1):
        if all(token[i] == token[i % period] for i in range(n)):
            return f"a block of {period} characters repeated"
    grams = [token[i : i + 3] for i in range(n - 2)]
    if grams and len(set(grams)) * 10 < len(grams) * 6:  # the same few stretches again and again
        return "mostly the same stretches repeated"
    lower = token.lower()
    covered = [False] * n
    for row in _KEYBOARD:
        for line in (row, row[::-1]):
            for start in range(n - _RUN + 1):
                end = start + _RUN
                if lower[start:end] in line:
                    while end < n and lower[start : end + 1] in line:
                        end += 1
                    covered[start:end] = [True] * (end - start)
    if sum(covered) * 3 >= n * 2:
        return "mostly runs along the alphabet, the digits or a keyboard row"  # two thirds of it or more
    return None


def holder_for(token: str, identity: str, role: str) -> Holder:
    """The holder of a token given to `identity` in `role`; one clear line for a bad one."""
    if len(token) < MIN_TOKEN_CHARS:
        raise LedgerError(f"a token needs at least {MIN_TOKEN_CHARS} characters")
    if not token.isprintable() or any(c.isspace() for c in token):
        raise LedgerError("a token is printable characters without spaces")
    if not identity or not all(c.isalnum() or c in "-_.:/" for c in identity) or len(identity) > 64:
        raise LedgerError("an identity is up to 64 letters, digits and -_.:/")
    if role not in ROLES:
        raise LedgerError(f"the role is person or agent, not {role!r}")
    if role == "person" and identity.startswith("agent:"):
        raise LedgerError(f"{identity} names an agent: it cannot hold a person's token")
    # An agent's identity says so wherever it leads a writer (`agent:ci@web`), so that
    # it is never read as a person's (`core.approval.principal`).
    name = identity if role == "person" or identity.startswith("agent:") else f"agent:{identity}"
    return Holder(name, role == "person")


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
        try:
            holder = holder_for(token, identity, role)
        except LedgerError as exc:
            raise LedgerError(f"{path}:{number}: {exc}") from None
        if token in found:
            raise LedgerError(f"{path}:{number}: this token is given twice")
        found[token] = holder
    if not found:
        raise LedgerError(f"{path}: no tokens in the file")
    return found
