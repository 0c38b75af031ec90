"""People, agents and approvals: pure, no I/O.

Writers `cli:...`, `web:...`, `mcp-user:...` (and the bare `cli`) are people; every
other writer (hooks, MCP sessions, imports) is an agent. An item that needs
approval may not be started, claimed or completed by an agent until a
person approves it; an approval holds for the item as it was approved, so
a change of its content, estimate, resources, phase or dependencies asks
for a person again, with the diff against what was approved.

`approve --plan` records the plan as it stands (its items' content, order,
dependencies and gates) with a hash; the plan is flagged, with the diff,
once it no longer hashes the same.
"""

from __future__ import annotations

from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

# `mcp-user:<client>:<session>`: the person at an MCP client, who answered the
# client's own approval prompt (an elicitation) during an agent's tool call.
PEOPLE_PREFIXES = ("cli:", "web:", "mcp-user:")
# What an approval of an item covers: a change to any of these asks again.
APPROVED_FIELDS = ("content", "parent", "depends_on", "estimate", "uses")


def is_person(writer: str) -> bool:
    """Is this writer a person (a terminal without an agent's marker, the board or
    a person's token, an MCP client's user answering its prompt)?"""
    return writer == "cli" or writer.startswith(PEOPLE_PREFIXES)


# The agent kinds, as the writers of each route name them (hooks and ingest:
# `<kind>:<session>`; an agent's shell: `agent-shell:<kind>[:<session>]`; MCP:
# `mcp:<client name>:<session>`, the client name mapped to its kind below).
AGENT_KINDS = ("claude-code", "codex", "gemini", "opencode")
MCP_CLIENT_KINDS = {
    "claude-code": "claude-code",
    "codex-mcp-client": "codex",
    "codex": "codex",
    "gemini-cli-mcp-client": "gemini",
    "gemini-cli": "gemini",
    "opencode": "opencode",
}


# The writers of local routes: an `@` in them (a hook's session id, an MCP
# client's name, an OS user) is part of what the process declared, never a token's.
LOCAL_HEADS = (*AGENT_KINDS, "agent-shell", "mcp", "script")


def token_identity(writer: str) -> str | None:
    """The token identity that leads a writer (`agent:ci` of `agent:ci@mcp:...`,
    `agent:ci@web`, `agent:ci@cli`; `ann` of `ann@mcp:...`), or None: a writer
    whose identity no token showed (its process declared it)."""
    identity, at, _ = writer.partition("@")
    if not at or not identity or writer.partition(":")[0] in LOCAL_HEADS:
        return None
    return identity.removeprefix("mcp-user:")


def authenticated(writer: str) -> bool:
    """Did a token show who this writer is? An agent's identity on this machine
    (its MCP client name, its shell's marker, a hook's agent, `--writer`) is what
    the process says, and the agent under review can say any of them."""
    return token_identity(writer) is not None


def proves(author: str, claimant: str) -> bool:
    """Does a passing check written by `author` prove `claimant`'s claim? A
    person's check does, whoever claims. An agent's does only when a token
    shows who wrote it and that principal is not the claimant's: a local agent
    identity can be forged by the claimant itself (another client name, an
    unset or swapped marker, a hook piped by hand), so its check is at most
    `self-checked`, whichever agent claims."""
    who = principal(author)
    if who.startswith("person:"):
        return True
    return authenticated(author) and who != principal(claimant)


def principal(writer: str) -> str:
    """Who stands behind a writer, for independence: `person:<name>` for a
    person, else `agent:<kind>` for an agent on this machine (one principal
    across its MCP server, its shell and its hooks, whatever the session), or a
    token's identity (`agent:ci`, `ann`) for a write through a server.

    Two writers with the same principal are not independent: a check one wrote
    and the other passed proves nothing about the other's claim."""
    identity, at, _ = writer.partition("@")
    # An agent's own writer keeps its kind whatever its session says (a hook's
    # session id is the agent's to choose: `claude-code:ann@board` is no token's).
    kind = writer.partition(":")[0]
    if at and identity and (kind in AGENT_KINDS or kind in ("agent-shell", "mcp", "script")):
        at = ""
    if at and identity:  # behind `serve --tokens` every writer starts `<identity>@`
        if identity.startswith("agent:"):
            return identity
        # A person's token answering an approval prompt: `mcp-user:<person>@<client>:…`.
        return f"person:{identity.removeprefix('mcp-user:')}"
    if is_person(writer):
        head, _, tail = writer.partition(":")
        if head == "mcp-user":  # the user at that MCP client
            return f"person:mcp-user:{tail.partition(':')[0]}"
        return f"person:{tail.partition(':')[0] or head}"
    head, _, tail = writer.partition(":")
    if head == "agent":  # a token's agent identity, named as such
        return f"agent:{tail.partition(':')[0] or 'unknown'}"
    if head == "agent-shell":
        return f"agent:{tail.partition(':')[0] or 'unknown'}"
    if head == "mcp":
        client = tail.partition(":")[0]
        return f"agent:{MCP_CLIENT_KINDS.get(client, 'mcp-' + client)}"
    return f"agent:{head}" if tail or head in AGENT_KINDS else f"agent:{writer}"


def item_snapshot(row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an approval of the item covers, in a stable form."""
    out: dict[str, Any] = {}
    for name in APPROVED_FIELDS:
        value = row.get(name)
        if name in ("depends_on", "uses"):
            value = sorted(value or [])
        out[name] = value
    return out


def plan_snapshot(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The plan as approved: its items in order with what each approval covers,
    their status and whether each needs approval (its gate)."""
    return [
        {"id": r["id"], **item_snapshot(r), "needs_approval": bool(r.get("needs_approval"))} for r in rows
    ]


def plan_hash(snapshot: Sequence[Mapping[str, Any]]) -> str:
    import hashlib  # here: OpenSSL's start-up costs the hook path (which asks is_person): bench/bench_core.py
    import json  # and `json` costs `start`/`done` (which ask is_person) more

    text = json.dumps(list(snapshot), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def item_diff(approved: Mapping[str, Any], current: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field by field, what changed since the approval: [{field, approved, now}]."""
    now = item_snapshot(current)
    return [
        {"field": name, "approved": approved.get(name), "now": now[name]}
        for name in APPROVED_FIELDS
        if approved.get(name) != now[name]
    ]


def plan_diff(
    approved: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """What changed in the plan since it was approved: items added and removed,
    items whose approved fields or gate changed, and a changed order."""
    old = {r["id"]: r for r in approved}
    new = {r["id"]: r for r in plan_snapshot(current)}
    out: list[dict[str, Any]] = []
    for item_id, r in new.items():
        if item_id not in old:
            out.append({"change": "added", "item": item_id, "content": r["content"]})
            continue
        fields = [
            {"field": name, "approved": old[item_id].get(name), "now": r[name]}
            for name in (*APPROVED_FIELDS, "needs_approval")
            if old[item_id].get(name) != r[name]
        ]
        if fields:
            out.append({"change": "changed", "item": item_id, "content": r["content"], "fields": fields})
    for item_id, gone in old.items():
        if item_id not in new:
            out.append({"change": "removed", "item": item_id, "content": gone.get("content")})
    kept_old = [i for i in old if i in new]
    kept_new = [i for i in new if i in old]
    if kept_old != kept_new:
        out.append({"change": "reordered", "approved": kept_old, "now": kept_new})
    return out


@dataclass(frozen=True)
class ItemApproval:
    """One item's standing with people: what was approved, whether it still holds."""

    item: str
    needs_approval: bool
    by: str | None  # who approved it last (None: never)
    at: str | None
    diff: tuple[dict[str, Any], ...]  # changes since that approval

    @property
    def approved(self) -> bool:
        """Approved as it is now."""
        return self.by is not None and not self.diff

    @property
    def waiting(self) -> bool:
        """An agent may not start it: it needs a person's approval it lacks."""
        return self.needs_approval and not self.approved

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "needs_approval": self.needs_approval,
            "approved": self.approved,
            "by": self.by,
            "at": self.at,
            "diff": list(self.diff),
        }


def item_approvals(
    rows: Sequence[Mapping[str, Any]], approvals: Iterable[Mapping[str, Any]]
) -> dict[str, ItemApproval]:
    """Per item, its standing given the approval events (oldest first):
    `approved` events (item, new: snapshot) and `plan_approved` events (new:
    {"items": plan snapshot}); the latest that covers an item counts."""
    last: dict[str, tuple[str, str, Mapping[str, Any]]] = {}
    for ev in approvals:
        if ev["field"] == "approved" and ev.get("item"):
            last[ev["item"]] = (ev["writer"], ev["at"], ev["new"] or {})
        elif ev["field"] == "plan_approved":
            for r in (ev["new"] or {}).get("items", []):
                last[r["id"]] = (ev["writer"], ev["at"], r)
    out: dict[str, ItemApproval] = {}
    for r in rows:
        seen = last.get(r["id"])
        diff = tuple(item_diff(seen[2], r)) if seen else ()
        out[r["id"]] = ItemApproval(
            r["id"], bool(r.get("needs_approval")), seen[0] if seen else None, seen[1] if seen else None, diff
        )
    return out


def plan_standing(rows: Sequence[Mapping[str, Any]], last: Mapping[str, Any] | None) -> dict[str, Any]:
    """The plan against its last approval (a `plan_approved` event or None)."""
    if last is None:  # nothing to compare with: the hash is made when someone approves
        return {"approved": False, "by": None, "at": None, "hash": None, "approved_hash": None, "diff": []}
    current = plan_hash(plan_snapshot(rows))
    snap = (last.get("new") or {}).get("items", [])
    approved_hash = (last.get("new") or {}).get("hash")
    same = approved_hash == current
    return {
        "approved": same,
        "by": last["writer"],
        "at": last["at"],
        "hash": current,
        "approved_hash": approved_hash,
        "diff": [] if same else plan_diff(snap, rows),
    }


PERSON_ROUTES = "from a plain terminal, the board, or with TODOLEDGER_TOKEN set to a person's token"


def person_only(verb: str, writer: str) -> str:
    """The one line that refuses a person-only `verb` to `writer` (an agent, or a
    process that cannot show it is a person): what it is and where a person runs it."""
    if writer.startswith("script:") or writer == "script":
        where = "this process has no terminal and no token: set TODOLEDGER_TOKEN to a person's token"
    elif writer.startswith("agent-shell:"):
        where = (
            "this shell carries an agent's marker (an agent's shell tool, an IDE terminal or Claude Code's"
            f" `!`): {PERSON_ROUTES}"
        )
    else:
        where = PERSON_ROUTES
    return f"{verb}: a person must run it, not {writer} ({where}); nothing was done"


def require_person(verb: str, writer: str) -> None:
    """Refuse a person-only verb to anyone else (one line, nothing written)."""
    if not is_person(writer):
        from todoledger.core.model import LedgerError

        raise LedgerError(person_only(verb, writer))
