"""Tokens registered in the ledger: who holds each secret, a person or an
agent. Only a person adds or removes one (`todoledger token add|remove`); the
ledger keeps the SHA-256 of each secret, never the secret. The command line
(`TODOLEDGER_TOKEN`) believes only these, and `serve` believes them whoever
started it: a tokens file is whatever its writer put in it, and the agent under
review can write one. Each registration and removal is an event (in the
`(tokens)` history, which no plan lists), so `todoledger check` reports a row
written around todoledger (`breaks`)."""

from __future__ import annotations

from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.store.tokens import TokenRepo
from todoledger.tokens import Holder, holder_for, token_digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit

TOKENS_PLAN = "(tokens)"  # the history token events are kept in: no plan, never listed
ID_CHARS = 12  # a token's id: the first characters of its hash, safe to show


def digest(token: str) -> str:
    """The SHA-256 kept for a token: the same as a tokens file's (`todoledger.tokens`)."""
    return token_digest(token)


def add(u: Unit, writer: str, name: str, *, agent: bool = False, token: str | None = None) -> dict[str, Any]:
    """Register a token for `name` (a person, or with `agent` an agent's
    `agent:<name>`); a fresh secret unless `token` gives one. Returns the secret
    once: the ledger keeps only its hash."""
    from todoledger.ledger.signed import person, sign

    writer = person(u, "token add", writer)
    import secrets

    secret = token.strip() if token is not None else secrets.token_urlsafe(24)
    holder = holder_for(secret, name, "agent" if agent else "person")
    role = "person" if holder.person else "agent"
    hashed, at = digest(secret), now()
    with u.transaction():
        repo = TokenRepo(u.store)
        if repo.find(hashed) is not None:
            raise LedgerError("this token is registered already: give another (or none: one is made)")
        sign(u, "token add", TOKENS_PLAN, None, _record(hashed, holder.name, role))
        repo.add(hashed, holder.name, role, writer, at)
        w = u.op(TOKENS_PLAN, writer, at, "token", summary=f"token {hashed[:ID_CHARS]} for {holder.name}")
        w.annotate(None, "token", None, _record(hashed, holder.name, role))
    return {"id": hashed[:ID_CHARS], "name": holder.name, "role": role, "token": secret}


def remove(u: Unit, writer: str, ref: str) -> list[dict[str, Any]]:
    """Remove the tokens `ref` names: a token's id (or a prefix of six or more
    characters), or a holder's name (all of that holder's)."""
    from todoledger.ledger.signed import person, sign

    writer = person(u, "token remove", writer)
    at = now()
    with u.transaction():
        repo = TokenRepo(u.store)
        rows = repo.all()
        chosen = [r for r in rows if r[1] == ref or (len(ref) >= 6 and r[0].startswith(ref))]
        if not chosen:
            raise LedgerError(
                f"no token {ref!r}: give a token's id or its holder's name (todoledger token list)"
            )
        w = u.op(TOKENS_PLAN, writer, at, "untoken", summary=f"removed {len(chosen)} token(s) of {ref}")
        sign(u, "token remove", TOKENS_PLAN, None, [r[0] for r in chosen])
        for hashed, name, role, _by, _at in chosen:
            repo.remove(hashed)
            w.annotate(None, "token", _record(hashed, name, role), None)
    return [{"id": r[0][:ID_CHARS], "name": r[1], "role": r[2]} for r in chosen]


def listing(u: Unit) -> list[dict[str, Any]]:
    """The registered tokens, without their secrets."""
    with u.store.read():
        rows = TokenRepo(u.store).all()
    return [{"id": r[0][:ID_CHARS], "name": r[1], "role": r[2], "added_by": r[3], "at": r[4]} for r in rows]


def holder(u: Unit, token: str) -> Holder | None:
    """Who holds `token`, if a person registered it in this ledger."""
    if not token.strip():
        return None
    with u.store.read():
        row = TokenRepo(u.store).find(digest(token))
    return Holder(row[1], row[2] == "person") if row is not None else None


def breaks(u: Unit) -> list[str]:
    """Token rows that their events do not account for: added, changed or
    removed around todoledger (with `sqlite3`, `psql`, ...)."""
    with u.store.read():
        rows = {r[0]: (r[1], r[2]) for r in TokenRepo(u.store).all()}
        told: dict[str, tuple[str, str]] = {}
        for ev in u.repo.events(TOKENS_PLAN):
            if ev.field != "token":
                continue
            if isinstance(ev.new, dict) and isinstance(ev.new.get("hash"), str):
                told[ev.new["hash"]] = (str(ev.new.get("name")), str(ev.new.get("role")))
            elif isinstance(ev.old, dict) and isinstance(ev.old.get("hash"), str):
                told.pop(ev.old["hash"], None)
    out = []
    for hashed, (name, role) in rows.items():
        if told.get(hashed) != (name, role):
            out.append(
                f"{TOKENS_PLAN}: token {hashed[:ID_CHARS]} for {name} ({role}) has no registration in the"
                " history: a row written around todoledger"
            )
    for hashed, (name, role) in told.items():
        if hashed not in rows:
            out.append(
                f"{TOKENS_PLAN}: token {hashed[:ID_CHARS]} for {name} ({role}) is gone without its removal"
                " in the history: a row removed around todoledger"
            )
    return out


def _record(hashed: str, name: str, role: str) -> dict[str, str]:
    # The hash is no secret (the token cannot be read back from it) and ties the event to its row.
    return {"id": hashed[:ID_CHARS], "hash": hashed, "name": name, "role": role}
