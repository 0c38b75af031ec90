"""Tokens: who holds each secret, a person or an agent.

A tokens file has one `sha256:HASH IDENTITY [ROLE]` a line (`#` comments): the
SHA-256 of each token, never the token, so that reading the file gives nothing
to log in with. A line with a token in plain text refuses the whole file, with
the one command that converts it in place (`todoledger token hash-file FILE`,
`hash_file`). ROLE is `person` or `agent`; without it an identity that starts
`agent:` is an agent and any other is a person. A person's identity comes only from a route: a
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


HASH_PREFIX = "sha256:"  # a tokens file's first field: this, then the token's hex SHA-256
_HASH_HEX = 64


def token_digest(token: str) -> str:
    """The hex SHA-256 a tokens file and the ledger keep for a token, never the token."""
    import hashlib  # here: OpenSSL's start-up is paid only by a command that holds a token

    return hashlib.sha256(token.strip().encode("utf-8")).hexdigest()


def _stored_digest(field: str) -> str | None:
    """The hex digest of a `sha256:HASH` field, or None for a token in plain text."""
    hexed = field.removeprefix(HASH_PREFIX)
    if field.startswith(HASH_PREFIX) and len(hexed) == _HASH_HEX and set(hexed) <= set("0123456789abcdef"):
        return hexed
    return None


def check_token(token: str) -> None:
    """One clear line for a token too short or with spaces; never shows it."""
    if len(token) < MIN_TOKEN_CHARS:
        raise LedgerError(f"a token needs at least {MIN_TOKEN_CHARS} characters")
    if not token.isprintable() or any(c.isspace() for c in token):
        raise LedgerError("a token is printable characters without spaces")


def holder_for(token: str, identity: str, role: str) -> Holder:
    """The holder of a token given to `identity` in `role`; one clear line for a bad one."""
    check_token(token)
    return holder_named(identity, role)


def holder_named(identity: str, role: str) -> Holder:
    """The holder `identity` in `role` names; one clear line for a bad identity or role."""
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


def _fields(path: str, number: int, text: str) -> tuple[str, str, str]:
    """A line's token field, identity and role; one clear line for a malformed one."""
    parts = text.split()
    if len(parts) not in (2, 3):
        raise LedgerError(
            f"{path}:{number}: expected `sha256:HASH IDENTITY` or `sha256:HASH IDENTITY person|agent`"
        )
    identity = parts[1]
    role = parts[2] if len(parts) == 3 else ("agent" if identity.startswith("agent:") else "person")
    return parts[0], identity, role


def load_tokens(path: str) -> dict[str, Holder]:
    """The hashed tokens of a file (hex SHA-256 -> holder); one clear line for a
    bad file, and for a token in plain text the command that hashes the file."""
    found: dict[str, Holder] = {}
    for number, text in _lines(path):
        field, identity, role = _fields(path, number, text)
        hexed = _stored_digest(field)
        if hexed is None:
            raise LedgerError(
                f"{path}:{number}: a token in plain text: whoever reads this file could log in with it;"
                f" hash every token in place with `todoledger token hash-file {path}`, then start serve again"
            )
        try:
            holder = holder_named(identity, role)
        except LedgerError as exc:
            raise LedgerError(f"{path}:{number}: {exc}") from None
        if hexed in found:
            raise LedgerError(f"{path}:{number}: this token is given twice")
        found[hexed] = holder
    if not found:
        raise LedgerError(f"{path}: no tokens in the file")
    return found


def _lines(path: str) -> list[tuple[int, str]]:
    """The file's lines that are not blank or comments, numbered from 1."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: cannot read the tokens file ({exc.__class__.__name__})") from None
    return [
        (n, line.strip())
        for n, line in enumerate(lines, 1)
        if line.strip() and not line.strip().startswith("#")
    ]


def hashed_text(path: str, text: str) -> tuple[str, int]:
    """The text of a tokens file with each token in plain text replaced by
    `sha256:HASH` (comments, blank lines and hashed lines kept), and how many
    were replaced. Each token is checked first: one clear line, never the token."""
    out: list[str] = []
    replaced = 0
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            out.append(line)
            continue
        field, identity, role = _fields(path, number, stripped)
        hexed = _stored_digest(field)
        try:
            if hexed is None:
                check_token(field)
                hexed, replaced = token_digest(field), replaced + 1
            holder_named(identity, role)
        except LedgerError as exc:
            raise LedgerError(f"{path}:{number}: {exc} (nothing was changed)") from None
        if hexed in seen:
            raise LedgerError(f"{path}:{number}: this token is given twice (nothing was changed)")
        seen.add(hexed)
        out.append(" ".join([HASH_PREFIX + hexed, *stripped.split()[1:]]))
    return "".join(f"{line}\n" for line in out), replaced


def hash_file(path: str) -> int:
    """Hash every plain token of a tokens file in place (`todoledger token
    hash-file`): written to a new file beside it, then renamed over it, with the
    file's mode kept. How many tokens were hashed."""
    import os

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        mode = os.stat(path).st_mode & 0o777
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: cannot read the tokens file ({exc.__class__.__name__})") from None
    new, replaced = hashed_text(path, text)
    if not replaced:
        return 0
    temporary = f"{path}.hashing"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise LedgerError(
            f"{path}: cannot write the hashed tokens file ({exc.strerror}); nothing was changed"
        ) from None
    return replaced
