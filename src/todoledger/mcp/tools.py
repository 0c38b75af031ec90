"""What the MCP tools and resources do, without the SDK: argument checks,
calls into `Ledger`, small JSON results.

Every refusal is a `ToolInputError` or another `LedgerError` with one clear
sentence; `server.py` turns it into an MCP tool error. The tools' names,
descriptions and input schemas live here too, so their token footprint is
measurable without starting a server.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from todoledger.core.markdown import md_code, md_text
from todoledger.core.model import (
    DEFAULT_PLAN,
    MAX_CONTENT_CHARS,
    MAX_LEASE_SECONDS,
    MAX_NOTES_CHARS,
    MAX_PAYLOAD_BYTES,
    PRIORITIES,
    STATUSES,
    Finding,
    LedgerError,
    LintError,
)
from todoledger.core.sanitize import INVISIBLE
from todoledger.core.unicode import unicode_findings
from todoledger.core.view import PlanView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.ledger import Ledger
    from todoledger.ledger.shared import SharedLedger

T = TypeVar("T")

MAX_PLAN_CHARS = 100
MAX_WRITER_CHARS = 200
MAX_LIMIT = 100
MAX_TOKEN = 2**62  # fencing tokens only grow, one a claim: far below the stores' 64-bit integers
SHOWN = 5  # ready / recent items in the compact read
SLOW_VERIFY_MS = 2000  # a plan_verify whose checks last took longer runs as an MCP task
# The tools whose calls may run as MCP tasks (mcp/tasks.py), where `PlanTools.open_task` finds them long.
TASK_TOOLS = frozenset({"plan_verify", "plan_sweep", "plan_update"})
WAIT_POLL_MS = 2000  # a task that waits for a person (hours, days) is polled more slowly
# A plan_sweep without the tasks extension runs in the call only when it is this short.
SYNC_SWEEP_RUNS = 10
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

INSTRUCTIONS = (
    "todoledger keeps your todo list durable (it survives restarts and compaction) and shared "
    "with other agents. Habits: for work of 3+ steps, write the plan first with todowrite. "
    "Keep exactly one item in_progress. Update as you go, not in batches. Mark an item "
    "completed only when it is really done, with evidence (test output, file, figure); "
    "partial or failing work stays in_progress. Add items you discover; cancel ones no longer "
    "needed. At session start or after compaction, call todoread and continue that plan "
    "instead of starting anew. Sharing work: plan_next claim=true takes one ready item for you. "
    "If a reply returns a writer or a secret, pass each back as it is named."
)

_PLAN = {"type": "string", "description": "Plan name (default: main)"}
_WRITER = {"type": "string"}  # default: this session (INSTRUCTIONS say to pass back a returned one)
_STATUS = {"type": "string", "enum": list(STATUSES)}

TOOLS: dict[str, dict[str, Any]] = {
    "todowrite": {
        "description": (
            "Write your whole todo list (replaces your previous one; history is kept). Plan multi-step "
            "work first; keep one item in_progress; update as you go; complete only when really done "
            "(evidence via plan_update). Items you leave out are dropped (the reply names them); list one "
            "again to revive it."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": _STATUS,
                            "priority": {"type": "string", "enum": list(PRIORITIES)},
                            "activeForm": {"type": "string"},
                            "id": {"type": "string"},
                        },
                        "required": ["content", "status"],
                    },
                },
                "plan": _PLAN,
                "writer": _WRITER,
            },
            "required": ["todos"],
        },
    },
    "todoread": {
        "description": (
            "The plan: counts, in progress, ready next, recently done (all=true: every item). Call at "
            "session start or after compaction and continue from it."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"all": {"type": "boolean"}, "plan": _PLAN, "writer": _WRITER},
        },
    },
    "plan_next": {
        "description": (
            "Ready items by priority. claim=true atomically starts one for you, leased (30 min default; "
            "your updates renew it; others' are refused; renew/release=<id>; token fences a lapsed one). "
            "Finish it first."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "claim": {"type": "boolean"},
                "lease_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_LEASE_SECONDS},
                "renew": {"type": "string"},
                "release": {"type": "string"},
                "token": {"type": "integer", "minimum": 1},
                "secret": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                "plan": _PLAN,
                "writer": _WRITER,
            },
        },
    },
    "plan_update": {
        "description": (
            "Change one item: status as you go; evidence when done; notes; depends_on/undepend (an id "
            "it waits for); estimate (15m); uses (resources held alone: gpu:0-3); needs_approval (a "
            "person first); check (gate: cmd:, http://, port:H:P, disk:P>=5G, file:P, metric:N>=V); "
            "metrics (tok_s=60); force past unmet prerequisites; reason (kept in history): why it is "
            "cancelled, or why force passes a failing gate; token of your claim (names you)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "status": _STATUS,
                "evidence": {"type": "string"},
                "notes": {"type": "string"},
                "priority": {"type": "string", "enum": list(PRIORITIES)},
                "content": {"type": "string"},
                "depends_on": {"type": "string"},
                "undepend": {"type": "string"},
                "parent": {"type": "string"},
                "estimate": {"type": "string"},
                "uses": {"type": "array", "items": {"type": "string"}},
                "needs_approval": {"type": "boolean"},
                "force": {"type": "boolean"},
                "reason": {"type": "string"},
                "token": {"type": "integer", "minimum": 1},
                "secret": {"type": "string"},
                "check": {"type": "string"},
                "metrics": {"type": "array", "items": {"type": "string"}},
                "plan": _PLAN,
                "writer": _WRITER,
            },
            "required": ["id"],
        },
    },
    "plan_verify": {
        "description": "Run the plan's checks (or those of ids); returns their receipts.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}},
                "plan": _PLAN,
                "writer": _WRITER,
            },
        },
    },
    "plan_sweep": {
        "description": "Run a person-approved sweep's pending runs (setup, runs, teardown); resumable.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "plan": _PLAN, "writer": _WRITER},
            "required": ["name"],
        },
    },
}

TOOL_ANNOTATIONS: dict[str, dict[str, bool]] = {
    "todoread": {"readOnlyHint": True},
}


class ToolInputError(LedgerError):
    """The tool's arguments are wrong; the message says which and how."""


def footprint_tokens(text: str) -> int:
    """The usual estimate: four characters a token."""
    return (len(text) + 3) // 4


# argument checks -------------------------------------------------------------


# Longest text each argument takes (the published schemas stay within the strict
# subset that OpenAI and Gemini accept, which has no maxLength).
TEXT_LIMITS: dict[str, int] = {
    "id": 64,
    "parent": 64,
    "depends_on": 64,
    "undepend": 64,
    "content": MAX_CONTENT_CHARS,
    "evidence": MAX_NOTES_CHARS,
    "notes": MAX_NOTES_CHARS,
    "reason": MAX_NOTES_CHARS,
    "writer": MAX_WRITER_CHARS,
    "plan": MAX_PLAN_CHARS,
    "estimate": 32,
    "renew": 64,
    "release": 64,
    "check": MAX_NOTES_CHARS,
    "secret": 64,
}
MAX_LISTED = 100  # strings in `metrics` or `ids`
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "array": (list,),
    "object": (dict,),
}
_TYPE_NAMES = {
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "array": "an array",
    "object": "an object",
}


def check_arguments(tool: str, args: Any) -> dict[str, Any]:
    """The arguments checked against the tool's published input schema (the
    one the agent was shown): one sentence for the first thing wrong."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolInputError(f"{tool} takes a JSON object of arguments, not {_kind(args)}")
    schema = TOOLS[tool]["inputSchema"]
    known = schema["properties"]
    unknown = sorted(k for k in args if k not in known)
    if unknown:
        raise ToolInputError(f"{tool} has no argument {unknown[0]!r}; its arguments are {', '.join(known)}")
    bad = unicode_findings(args)
    if bad:
        raise ToolInputError(f"{tool}: {bad[0].where}: {bad[0].message}")
    size = len(json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ToolInputError(f"{tool} arguments are {size} bytes; the limit is {MAX_PAYLOAD_BYTES}")
    for name in schema.get("required", []):
        if args.get(name) is None:
            raise ToolInputError(f'"{name}" is required' + REQUIRED_HINTS.get(name, ""))
    for name, value in args.items():
        if value is not None:
            _check_value(name, value, known[name])
    return args


# What a missing required argument looks like when given.
REQUIRED_HINTS = {"todos": ': the whole list, e.g. [{"content": "...", "status": "pending"}]'}


def _check_value(name: str, value: Any, spec: dict[str, Any]) -> None:
    kind = spec["type"]
    if not isinstance(value, _TYPES[kind]) or (kind == "integer" and isinstance(value, bool)):
        raise ToolInputError(f'"{name}" must be {_TYPE_NAMES[kind]}, not {_kind(value)}')
    if "enum" in spec and value not in spec["enum"]:
        raise ToolInputError(f'"{name}" must be one of {", ".join(spec["enum"])}, not {value!r}')
    if kind == "integer":
        low, high = spec.get("minimum", -MAX_TOKEN), spec.get("maximum", MAX_TOKEN)
        if not low <= value <= high:
            raise ToolInputError(f'"{name}" must be between {low} and {high}, not {value}')
    if isinstance(value, list) and spec["items"]["type"] == "string":
        if len(value) > MAX_LISTED:
            raise ToolInputError(f'"{name}" has {len(value)} entries; the limit is {MAX_LISTED}')
        if not all(isinstance(v, str) and v.strip() for v in value):
            raise ToolInputError(f'"{name}" must be an array of non-empty strings')
    limit = TEXT_LIMITS.get(name)
    if isinstance(value, str) and limit is not None and len(value) > limit:
        raise ToolInputError(f'"{name}" is {len(value)} characters; the limit is {limit}')


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _blank(args: dict[str, Any], *names: str) -> None:
    """Text that is given must say something."""
    for name in names:
        value = args.get(name)
        if value is not None and not value.strip():
            raise ToolInputError(f'"{name}" must not be empty')


# Zero-width and bidi characters make a plan name look like another one.
_INVISIBLE = INVISIBLE


def plan_name(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolInputError(f'"plan" must be a plan name (a string), not {_kind(value)}')
    if (
        not value.strip()
        or len(value) > MAX_PLAN_CHARS
        or not all(c.isprintable() and c not in _INVISIBLE for c in value)
    ):
        raise ToolInputError(f'"plan" must be a name of 1 to {MAX_PLAN_CHARS} printable characters')
    return value


# the tools -------------------------------------------------------------------


def _also_in_progress(lg: Ledger, plan: str, writer: str, item_id: str) -> list[str]:
    """The writer's other items in progress: the habit is one at a time."""
    return [
        it["id"]
        for it in lg.show(plan)["items"]
        if it["status"] == "in_progress" and it["updated_by"] == writer and it["id"] != item_id
    ]


def self_checked_hint(lg: Ledger, plan: str, item_id: str) -> str:
    """What the claimant is told when only its own check passed."""
    ids = " ".join(r.id for r in lg.checks([item_id], plan=plan))
    return (
        "self-checked: its gate is an agent's check with no person behind it (yours, or one"
        " you could have written), so it does not prove your claim; what waits on it starts once a"
        f" person approves the check (todoledger trust {ids}, from a terminal or the board)"
    )


def _verification(lg: Ledger, plan: str, item_id: str) -> str | None:
    return next((it["verification"] for it in lg.show(plan)["items"] if it["id"] == item_id), None)


def _compact(item: dict[str, Any], *fields: str) -> dict[str, Any]:
    out = {"id": item["id"], "content": item["content"]}
    for name in fields:
        value = item.get(name)
        if value not in (None, [], "") and value is not False:
            out[name] = value
    return out


class PlanTools:
    """The six tools and two resources over the project's ledger.

    The SDK runs these calls on worker threads; each runs in `locked`, with a
    Ledger of its own over the `SharedLedger` (service.py).
    """

    def __init__(
        self, *, default_plan: str | None = None, cwd: Path | None = None, shared: SharedLedger | None = None
    ) -> None:
        from todoledger.ledger.shared import SharedLedger

        self.default_plan = default_plan
        self.cwd = cwd
        self.shared: SharedLedger = shared if shared is not None else SharedLedger(cwd)
        self._call = threading.local()  # this thread's call: its getter of the Ledger
        self._tokens: dict[tuple[str, str], int] = {}  # (writer, item): the token of its claim
        # (writer, item): the secret of its claim, kept here for the session that claimed
        # and never sent on: it proves that session the holder (ledger/leases.py).
        self._secrets: dict[tuple[str, str], str] = {}
        # Checks written here are trusted (stdio: this machine's user); the HTTP
        # server marks them untrusted and runs none unless started --allow-checks.
        self.trusted_checks = True
        self.run_checks = True

    def plan_or_default(self, plan: str | None) -> str:
        if plan:
            return plan
        if self.default_plan:
            return self.default_plan
        from todoledger.defaults import default_plan

        return default_plan() or DEFAULT_PLAN

    def ledger(self, *, write: bool) -> Ledger:
        """This call's Ledger (inside `locked`). Until a SQLite ledger's file
        exists, reads see it empty and create nothing; the first write creates it."""
        found: Ledger = self._call.get(write)
        return found

    def close(self) -> None:
        self.shared.close()

    def locked(self, fn: Callable[[], T]) -> T:
        """Run one call on the ledger: on PostgreSQL a pooled connection of its
        own (calls run side by side), on SQLite one connection, a call at a time."""
        with self.shared.session(
            run_checks=self.run_checks, override="force true with a reason", route="mcp"
        ) as get:
            wrote: list[Ledger] = []

            def getter(write: bool) -> Ledger:
                found = get(write)
                if write:
                    wrote.append(found)
                return found

            self._call.get = getter
            try:
                out = fn()
            finally:
                del self._call.get
            if wrote:
                _panel(wrote[0], self.cwd)
            return out

    def _known(self, lg: Ledger, plan: str, explicit: bool) -> bool:
        """Whether the plan exists. A plan named explicitly must exist; the
        default plan reads as empty before its first write."""
        names = [p["plan"] for p in lg.plans()]
        if plan in names:
            return True
        if not explicit:
            return False
        known = ", ".join(repr(n) for n in names) if names else "none yet (todowrite creates one)"
        raise LedgerError(f"no plan {plan!r} in the ledger; known plans: {known}")

    # todowrite -------------------------------------------------------------
    def todowrite(self, args: dict[str, Any], writer: str) -> dict[str, Any]:
        args = check_arguments("todowrite", args)
        plan = plan_name(args.get("plan"))
        todos = args["todos"]
        writer = self.writer_arg(args, writer)
        name = self.plan_or_default(plan)
        return self.locked(lambda: self._todowrite({"todos": todos}, name, writer))

    def note_refusal(self, tool: str, args: Any, writer: str, reason: str) -> None:
        """A refused write, recorded in its plan's story for the person (issue 31): the writer
        and the reason, nothing else. Reads are not writes; a plan that does not exist gets none.
        Never fails the reply: the refusal is what the agent reads."""
        if tool == "todoread" or (tool == "plan_next" and not (isinstance(args, dict) and args.get("claim"))):
            return
        try:
            given = plan_name(args.get("plan")) if isinstance(args, dict) else None
            plan = self.plan_or_default(given)
            self.locked(
                lambda: self.ledger(write=True).record_refusal(f"{tool}: {reason}", plan=plan, writer=writer)
            )
        except Exception:  # an unreadable plan name, a closed ledger: the reply still goes out
            pass

    def duplicate_refusal(self, tool: str, args: Any, lost: list[Finding]) -> str:
        """The one line a call whose arguments repeated a key is refused with:
        the CLI's own for the same payload (its other errors counted after the
        duplicate's), so the agent reads one message on every route."""
        findings = list(lost)
        todos = args.get("todos") if isinstance(args, dict) else None
        if tool == "todowrite" and isinstance(todos, list):
            from todoledger.dialects import read

            try:
                found = read({"todos": todos}).findings
            except LedgerError:
                found = []
            findings += [f for f in found if f.level == "error" and f.code != "duplicate-key"]
        return str(LintError(findings))

    def _todowrite(self, payload: dict[str, Any], plan: str, writer: str) -> dict[str, Any]:
        from todoledger.dialects import parse

        parsed = parse(payload)
        if not parsed.whole:
            raise ToolInputError(f"{parsed.dialect} updates are patches, not a whole list; use plan_update")
        lg = self.ledger(write=True)
        for (holder, _), secret in self._secrets.items():
            if holder == writer:  # this session's claims: its list writes them as their holder
                lg.hold(secret)
        result = lg.apply(parsed, plan=plan, writer=writer, restore_hint=RESTORE_CALL)
        mine = lg.rows(plan, result.ids)
        out: dict[str, Any] = {"plan": plan, "revision": result.revision}
        out |= _render(parsed.dialect, mine)
        out["ids"] = result.ids
        if sessionless(writer):
            out["writer"] = writer  # sessionless HTTP: pass it back to keep one view across calls
        changes: dict[str, int] = {}
        for ch in result.changes:
            if ch["kind"] not in ("conflict", "dropped"):
                changes[ch["kind"]] = changes.get(ch["kind"], 0) + 1
        if changes:
            out["changes"] = changes
        dropped = [
            {"id": c["item"], "content": c["content"], "was": c["was"]}
            for c in result.changes
            if c["kind"] == "dropped"
        ]
        if dropped:
            out["dropped"] = dropped
        if result.notices:
            out["notices"] = result.notices
        conflicts = [
            {"id": c["item"], "field": c["field"], "kept": c["kept"], "yours": c["rejected"]}
            for c in result.changes
            if c["kind"] == "conflict"
        ]
        if conflicts:
            out["conflicts"] = conflicts
        if result.warnings:
            out["warnings"] = [w.line() for w in result.warnings]
        doing = sum(1 for it in mine if it["status"] == "in_progress")
        if doing > 1:
            out["hint"] = f"{doing} items are in_progress; keep exactly one"
        return out

    # todoread --------------------------------------------------------------
    def todoread(self, args: dict[str, Any], writer: str) -> dict[str, Any]:
        args = check_arguments("todoread", args)
        explicit = plan_name(args.get("plan"))
        full = bool(args.get("all"))
        writer = self.writer_arg(args, writer)
        plan = self.plan_or_default(explicit)
        return self.locked(lambda: self._todoread(plan, explicit is not None, full, writer))

    def _todoread(self, plan: str, explicit: bool, full: bool, writer: str) -> dict[str, Any]:
        lg = self.ledger(write=False)
        if not self._known(lg, plan, explicit):
            return {
                "plan": plan,
                "revision": 0,
                "counts": {},
                "hint": "empty: write your plan with todowrite",
            }
        # A full read shows the writer every item: they join its base, so its
        # next whole list may drop what it leaves out (as its own tool would).
        # A compact read is how an agent recovers after a compaction: its base
        # shrinks to what it is shown, so its rebuilt list cancels nothing else.
        if full:
            view = lg.view(plan, writer=writer) if lg.exists else lg.view(plan)
        else:  # bounded: what it names, and counts by aggregate (ledger/reading.py `recovery_view`)
            view = lg.recovery_view(plan, scheduled=True)
        if not full and lg.exists:
            from todoledger.core.prime import shown_ids

            lg.recover_base(view, writer, shown_ids(view))
        return read_reply(view, full)

    # plan_next -------------------------------------------------------------
    def plan_next(self, args: dict[str, Any], writer: str) -> dict[str, Any]:
        args = check_arguments("plan_next", args)
        explicit = plan_name(args.get("plan"))
        claim = bool(args.get("claim"))
        limit = args.get("limit") or SHOWN
        lease = args.get("lease_seconds")
        renew, release = args.get("renew"), args.get("release")
        token = args.get("token")
        writer = self.writer_arg(args, writer)
        plan = self.plan_or_default(explicit)
        if renew or release:
            if claim or (renew and release):
                raise ToolInputError("give one of claim, renew or release")
            ref = str(renew or release)
            secret = args.get("secret")

            def lease_call() -> dict[str, Any]:
                self.ledger(write=True).hold(secret)  # a sessionless client's claim: its own proof
                return self._lease_call(plan, ref, bool(renew), token, lease, writer)

            return self.locked(lease_call)
        return self.locked(lambda: self._plan_next(plan, explicit is not None, claim, limit, writer, lease))

    def _lease_call(
        self, plan: str, ref: str, renew: bool, token: int | None, lease: int | None, writer: str
    ) -> dict[str, Any]:
        lg = self.ledger(write=True)
        item = lg.get(ref, plan)["id"]
        lg.hold(self._secrets.get((writer, item)))
        writer = _token_holder(lg, plan, item, token, writer)
        token = token or self._tokens.get((writer, item))
        if token is None:
            raise ToolInputError(f"no claim of yours on {item} in this session: give its token")
        if renew:
            held = lg.renew(item, plan=plan, writer=writer, token=token, lease=lease)
            return {"plan": plan, "renewed": item, "token": token, "lease_expires": held["expires_at"]}
        lg.release(item, plan=plan, writer=writer, token=token)
        self._tokens.pop((writer, item), None)
        self._secrets.pop((writer, item), None)
        return {"plan": plan, "released": item}

    def _plan_next(
        self, plan: str, explicit: bool, claim: bool, limit: int, writer: str, lease: int | None = None
    ) -> dict[str, Any]:
        known = self._known(self.ledger(write=False), plan, explicit)
        lg = self.ledger(write=claim and known)
        if not claim:
            rows = lg.next(plan, limit=limit) if known else []
            listing: dict[str, Any] = {"plan": plan, "ready": [_compact(it, "priority") for it in rows]}
            stranded = lg.stranded(plan) if known else []
            if stranded:
                listing["waits_on_cancelled"] = [
                    _compact(it, "waits_on_cancelled") for it in stranded[:SHOWN]
                ]
            return listing
        got = lg.next(plan, claim=True, writer=writer, lease=lease) if known else []
        if not got:
            waiting = lg.approvals(plan)["waiting"] if known else []
            if waiting:
                return {
                    "plan": plan,
                    "claimed": None,
                    "waiting_for_approval": waiting[:SHOWN],
                    "hint": f"{len(waiting)} item(s) wait for a person's approval; an agent cannot claim them",
                }
            return {"plan": plan, "claimed": None, "hint": "nothing is ready"}
        item = got[0]
        self._tokens[(writer, item["id"])] = item["token"]
        if not sessionless(writer):  # a session's claims: kept here, for that session alone
            self._secrets[(writer, item["id"])] = item["lease_secret"]
        out: dict[str, Any] = {
            "plan": plan,
            "claimed": _compact(item, "priority", "notes", "token", "lease_expires"),
        }
        if sessionless(writer):
            out["writer"] = writer  # the lease's holder: passed back, later calls are its holder's
            # A sessionless client has no session for the server to keep its proof in: the
            # secret goes back to it alone, and its later calls pass it (`secret`).
            out["claimed"]["secret"] = item["lease_secret"]
        others = _also_in_progress(lg, plan, writer, item["id"])
        if others:
            out["hint"] = f"you also have {', '.join(others[:5])} in_progress; finish or pause them"
        return out

    # plan_update -----------------------------------------------------------
    def plan_update(self, args: dict[str, Any], writer: str, *, task: str | None = None) -> dict[str, Any]:
        """`task`: the MCP task whose wait a person's approval ended (mcp/taskwaits.py)."""
        from todoledger.ledger.tasks import PLAN_UPDATE_FIELDS

        args = check_arguments("plan_update", args)
        explicit = plan_name(args.get("plan"))
        _blank(args, "id", "content")
        ref: str = args["id"]
        # The ledger holds a forced completion that a person let through to these same fields.
        fields: dict[str, Any] = {
            name: args.get(arg) for name, arg in PLAN_UPDATE_FIELDS if name not in ("uses", "force_reason")
        }
        fields["uses"] = _uses_arg(args)
        force = bool(args.get("force"))
        fields.update(_reason_arg(args, force))
        token = args.get("token")
        proof = self._proof(args)
        if all(v is None for v in fields.values()) and not proof:
            raise ToolInputError(
                "nothing to change: give status, evidence, notes, priority, content, depends_on, undepend,"
                " parent, estimate, uses, needs_approval, check or metrics"
            )
        writer = self.writer_arg(args, writer)
        plan = self.plan_or_default(explicit)
        secret = args.get("secret")

        def update() -> dict[str, Any]:
            self.ledger(write=True).hold(secret)  # a sessionless client's claim: its own proof
            return self._plan_update(
                plan, explicit is not None, ref, fields, writer, force, token, proof, task
            )

        return self.locked(update)

    @staticmethod
    def _proof(args: dict[str, Any]) -> dict[str, Any]:
        """The gate and the numbers to record, checked before anything is written."""
        from todoledger.core.checkspec import parse
        from todoledger.ledger.verify import parse_metric

        _blank(args, "check")
        out: dict[str, Any] = {}
        if args.get("check") is not None:
            parse(args["check"])
            out["check"] = args["check"]
        if args.get("metrics"):
            out["metrics"] = [parse_metric(m) for m in args["metrics"]]
        return out

    def _plan_update(
        self,
        plan: str,
        explicit: bool,
        ref: str,
        fields: dict[str, Any],
        writer: str,
        force: bool,
        token: int | None = None,
        proof: dict[str, Any] | None = None,
        task: str | None = None,
    ) -> dict[str, Any]:
        if not self._known(self.ledger(write=False), plan, explicit):
            raise LedgerError(f"no item {ref!r}: plan {plan!r} is empty (write it with todowrite)")
        lg = self.ledger(write=True)
        recorded = self._record_proof(lg, plan, ref, writer, proof or {})
        if all(v is None for v in fields.values()):
            item = lg.get(ref, plan)
            return {"plan": plan, "item": _compact(item, "status", "verification")} | recorded
        try:
            out = self._apply_update(lg, plan, ref, fields, writer, force, token, task)
        except LedgerError as exc:
            if not recorded:
                raise
            kept = " and ".join(k for k in ("check", "metrics") if k in recorded)
            raise LedgerError(
                f"{exc} (the {kept} you gave {'is' if len(recorded) == 1 else 'are'} recorded)"
            ) from None
        return out | recorded

    def _record_proof(
        self, lg: Ledger, plan: str, ref: str, writer: str, proof: dict[str, Any]
    ) -> dict[str, Any]:

        out: dict[str, Any] = {}
        if "check" in proof:
            row = lg.add_check(ref, proof["check"], plan=plan, writer=writer, trusted=self.trusted_checks)
            out["check"] = {"id": row["id"], "spec": row["spec"], "trusted": row["trusted"]}
            if not row["trusted"]:
                out["check"]["hint"] = f"not run until a person approves it: todoledger trust {row['id']}"
        if "metrics" in proof:
            rows = lg.record_metrics(ref, proof["metrics"], plan=plan, writer=writer)
            out["metrics"] = [f"{r['name']}={r['value']:g} (run {r['run']})" for r in rows]
        return out

    def _apply_update(
        self,
        lg: Ledger,
        plan: str,
        ref: str,
        fields: dict[str, Any],
        writer: str,
        force: bool,
        token: int | None = None,
        task: str | None = None,
    ) -> dict[str, Any]:
        status = fields["status"]
        kind = {"completed": "done", "in_progress": "start", "cancelled": "cancel"}.get(
            status or "", "update"
        )
        if status == "cancelled":
            fields["reason"] = fields.get("reason") or "cancelled"
        if self._secrets:
            lg.hold(self._secrets.get((writer, lg.get(ref, plan)["id"])))
        if token is None and self._tokens:
            # A claim made in this session fences this session's updates of its item.
            token = self._tokens.get((writer, lg.get(ref, plan)["id"]))
        elif token is not None:
            writer = _token_holder(lg, plan, lg.get(ref, plan)["id"], token, writer)
        item = lg.update(
            ref,
            plan=plan,
            writer=writer,
            kind=kind,
            force=force,
            token=token,
            task=task,
            **{k: v for k, v in fields.items() if v is not None},
        )
        out: dict[str, Any] = {
            "plan": plan,
            "item": _compact(
                item,
                "status",
                "priority",
                "parent",
                "depends_on",
                "evidence",
                "notes",
                "estimate",
                "uses",
                "needs_approval",
            ),
        }
        state = (
            _verification(lg, plan, item["id"])
            if fields.get("force_reason") or status == "completed"
            else None
        )
        if fields.get("force_reason") and state not in (None, "verified"):
            out["hint"] = f"completed past its gate on your reason (kept in history); it shows {state}"
        elif state == "self-checked":
            out["item"]["verification"] = state
            out["hint"] = self_checked_hint(lg, plan, item["id"])
        elif state not in (None, "verified", "reported") and status == "completed":
            # cross-checked, stand-in, typed, accepted by <person>: said as it is, never as verified
            out["item"]["verification"] = state
        elif status == "completed" and not item.get("evidence"):
            out["hint"] = "add evidence: what shows it is done"
        elif status == "in_progress":
            others = _also_in_progress(lg, plan, writer, item["id"])
            if others:
                out["hint"] = f"you also have {', '.join(others[:5])} in_progress; keep exactly one"
        return out

    # plan_verify -----------------------------------------------------------
    def plan_verify(self, args: dict[str, Any], writer: str) -> dict[str, Any]:
        args = check_arguments("plan_verify", args)
        explicit = plan_name(args.get("plan"))
        ids: list[str] = args.get("ids") or []
        writer = self.writer_arg(args, writer)
        plan = self.plan_or_default(explicit)
        return self.locked(lambda: self._plan_verify(plan, explicit is not None, ids, writer))

    def _plan_verify(self, plan: str, explicit: bool, ids: list[str], writer: str) -> dict[str, Any]:
        from todoledger.core.verification import tail

        if not self._known(self.ledger(write=False), plan, explicit):
            return {"plan": plan, "receipts": [], "hint": "empty: write your plan with todowrite"}
        lg = self.ledger(write=True)
        done = lg.verify(ids, plan=plan, writer=writer, cwd=str(self.cwd) if self.cwd else None)
        out: dict[str, Any] = {
            "plan": plan,
            "receipts": [
                {
                    "item": r["item"],
                    "check": r["check"],
                    "spec": r["spec"],
                    "result": r["result"],
                    "code": r["code"],
                    "output": tail(r["output"], 300),
                }
                for r in done["receipts"]
            ],
        }
        if done["skipped"]:
            out["skipped"] = [{"check": s["id"], "item": s["item"], "why": s["why"]} for s in done["skipped"]]
        if not done["receipts"] and not done["skipped"]:
            out["hint"] = "no checks: add one with plan_update check"
        return out

    # plan_sweep --------------------------------------------------------------
    def plan_sweep(self, args: dict[str, Any], writer: str) -> dict[str, Any]:
        """Without the tasks extension: a short sweep (at most SYNC_SWEEP_RUNS runs to
        go, no setup) runs in the call; a longer one is refused in one line."""
        name, plan, writer = self._sweep_arguments(args, writer)
        if not self.run_checks:
            raise LedgerError("plan_sweep: this server runs no commands (started without --allow-checks)")
        self.locked(lambda: self._sweep_startable(plan, name, synchronous=True))
        return self.run_sweep(name, plan, writer)

    def _sweep_arguments(self, args: dict[str, Any], writer: str) -> tuple[str, str, str]:
        args = check_arguments("plan_sweep", args)
        name = str(args["name"]).strip()
        if not name:
            raise ToolInputError('"name" is required: the sweep\'s name (todoledger sweep show)')
        writer = self.writer_arg(args, writer)
        return name, self.plan_or_default(plan_name(args.get("plan"))), writer

    def _sweep_startable(self, plan: str, name: str, *, synchronous: bool) -> str:
        """The task's first status message, or a LedgerError's one line: the sweep is
        missing, not approved, run by another live runner, or (`synchronous`) too long."""
        lg = self.ledger(write=False)
        sweep, _, work = lg.sweep_work(name, plan=plan)  # refuses one no person wrote or approved
        busy = lg.sweep_busy(name, plan=plan)
        if busy is not None:
            raise LedgerError(busy)
        runs = sum(sweep.repeat - made for _, _, _, made in work)
        setup = " (a setup per combination)" if sweep.has_lifecycle else ""
        if synchronous and work and (runs > SYNC_SWEEP_RUNS or sweep.has_lifecycle):
            raise LedgerError(
                f"sweep {name} has {runs} runs to go{setup}: too long for one call (at most"
                f" {SYNC_SWEEP_RUNS} runs, no setup); call plan_sweep from a client that declares the"
                f" {TASKS_EXTENSION} extension, or ask a person to run `todoledger sweep run {name}`;"
                " nothing was run"
            )
        return f"sweep {name}: {len(work)} combinations, {runs} runs to go{setup}"

    def run_sweep(
        self, name: str, plan: str, writer: str, on_progress: Callable[[dict[str, Any]], None] | None = None
    ) -> dict[str, Any]:
        """`ledger.sweeps.run` as `writer` (its runner lease is this process's), in the
        folder the sweep was added in."""
        from todoledger.ledger import sweeps

        def go() -> dict[str, Any]:
            lg = self.ledger(write=True)
            return sweeps.run(lg, name, plan=plan, writer=writer, on_progress=on_progress)

        return self.locked(go)

    # tasks (mcp/tasks.py) ---------------------------------------------------
    def open_task(
        self, tool: str, args: Any, writer: str, started: Callable[[dict[str, Any]], object]
    ) -> dict[str, Any] | None:
        """Open this call as an MCP task (its request declared the extension) where it
        is long: a `plan_verify` that runs a `cmd:` or `http:` check, or whose checks'
        last receipts took more than 2 s; a `plan_sweep` that may start (approved, no
        other live runner) with runs to go. The task's row is committed, then
        `started(row)` (its worker: mcp/taskworker.py); the row, or None: the call runs
        as today and says itself what is wrong with it. One ledger session for both."""
        if tool == "plan_update":
            return self._open_wait(args, writer)
        if tool not in TASK_TOOLS or not self.run_checks:
            return None
        try:
            if tool == "plan_sweep":
                name, plan, writer = self._sweep_arguments(args, writer)
                args = {"name": name, "plan": plan}
            else:
                args = check_arguments(tool, args)
                explicit = plan_name(args.get("plan"))
                ids: list[str] = args.get("ids") or []
                writer = self.writer_arg(args, writer)
                plan = self.plan_or_default(explicit)
        except LedgerError:
            return None

        def open_it() -> dict[str, Any] | None:
            from todoledger.core.approval import principal

            if tool == "plan_sweep":
                try:
                    message: str | None = self._sweep_startable(plan, name, synchronous=False)
                except LedgerError:
                    return None  # the call runs as ever and refuses in the same line
            else:
                message = self._long_verify(plan, explicit is not None, ids)
            if message is None:
                return None
            row = self.ledger(write=True).create_task(
                tool,
                args,
                principal=principal(writer),
                writer=writer,
                plan=plan,
                message=message,
                cwd=str(self.cwd) if self.cwd is not None else os.getcwd(),
            )
            started(row)  # after the commit: the reply names the task after this
            return row

        try:
            return self.locked(open_it)
        except LedgerError:
            return None

    # waiting for a person (mcp/taskwaits.py) -------------------------------------------
    def person_wait(self, args: Any, writer: str, task: str | None = None) -> dict[str, str] | None:
        """The item this `plan_update` would be refused for because it waits for a
        person: their approval to start it or complete it, or, for a completion forced
        past a person's gate, their consent (an approval of the item that names `task`,
        the waiting task: `Ledger.gate_consent`). {plan, id, status, writer, gate?};
        None: the call runs as ever. On a signed ledger too."""
        try:
            args = check_arguments("plan_update", args)
            status = args.get("status")
            writer = self.writer_arg(args, writer)
            plan = self.plan_or_default(plan_name(args.get("plan")))
            forced = status == "completed" and bool(args.get("force")) and bool(_reason_arg(args, True))
        except LedgerError:
            return None
        if status not in ("in_progress", "completed"):
            return None
        return self.locked(
            lambda: self._person_wait(plan, str(args["id"]), str(status), writer, forced, task)
        )

    def _person_wait(
        self, plan: str, ref: str, status: str, writer: str, forced: bool, task: str | None
    ) -> dict[str, str] | None:
        lg = self.ledger(write=False)
        if plan not in [p["plan"] for p in lg.plans()]:
            return None
        try:
            item = lg.get(ref, plan)
        except LedgerError:
            return None
        if item["status"] == status:
            return None
        wait = {"plan": plan, "id": item["id"], "status": status, "writer": writer}
        # A completion forced past a person's gate waits for their consent to this task, whether
        # or not the item also needs their approval: an approval to start it is not that consent.
        gate = lg.persons_gate(item["id"], plan=plan, writer=writer) if forced else None
        if gate is not None:
            if task is not None and lg.gate_consent(task, item["id"], plan=plan, writer=writer) is not None:
                return None
            return wait | {"gate": gate["check"], "gate_by": gate["by"]}
        if item["id"] in lg.approvals(plan)["waiting"]:
            return wait
        return None

    def _open_wait(self, args: Any, writer: str) -> dict[str, Any] | None:
        """A `plan_update` that waits for a person becomes a task with no worker: it
        stays `working` ("waiting for a person: todoledger approve ID"), and the
        `tasks/get` after a person approved applies the update (mcp/taskwaits.py)."""
        from todoledger.core.approval import principal
        from todoledger.ledger.tasks import new_task_id

        wait = self.person_wait(args, writer)
        if wait is None:
            return None
        task_id = new_task_id()

        def open_it() -> dict[str, Any]:
            return self.ledger(write=True).create_task(
                "plan_update",
                check_arguments("plan_update", args),
                principal=principal(wait["writer"]),
                writer=wait["writer"],
                plan=wait["plan"],
                message=waiting_line(wait["id"], wait.get("gate"), task_id),
                cwd=str(self.cwd) if self.cwd is not None else os.getcwd(),
                poll_ms=WAIT_POLL_MS,
                task_id=task_id,
            )

        try:
            return self.locked(open_it)
        except LedgerError:
            return None

    def _long_verify(self, plan: str, explicit: bool, ids: list[str]) -> str | None:
        """The task's first status message if this verify is long, else None."""
        from todoledger.core.verification import ROLES

        lg = self.ledger(write=False)
        if not self._known(lg, plan, explicit):
            return None
        rows = [r for r in lg.checks(ids, plan=plan) if r.role in ROLES and r.trusted]
        if not rows:
            return None
        kinds = sorted({r.check.kind for r in rows if r.check.kind in ("cmd", "http")})
        last: dict[str, int] = {}
        for receipt in lg.receipts(plan=plan):
            last[receipt["check"]] = int(receipt["duration_ms"] or 0)
        slow = [r for r in rows if last.get(r.id, 0) > SLOW_VERIFY_MS]
        if not kinds and not slow:
            return None
        what = f"{len(rows)} check{'s' if len(rows) != 1 else ''}"
        why = " and ".join(f"{k}:" for k in kinds) or "slow"
        return f"verifying: {what} ({why}) running"

    # resources -------------------------------------------------------------
    def plan_markdown(self, name: str) -> str:
        plan = plan_name(name)
        assert plan is not None
        return self.locked(lambda: self._plan_markdown(plan))

    def _plan_markdown(self, plan: str) -> str:
        lg = self.ledger(write=False)
        self._known(lg, plan, True)
        return render_markdown(lg.view(plan))

    def prime(self) -> str:
        plan = self.plan_or_default(None)
        return self.locked(lambda: str(self.ledger(write=False).prime(plan)))

    # identity --------------------------------------------------------------
    @staticmethod
    def writer_arg(args: dict[str, Any], session_writer: str) -> str:
        """The writer the agent names (checked with the other arguments), else the session's."""
        from todoledger.core.approval import is_person, principal

        _blank(args, "writer")
        given: str | None = args.get("writer")
        if given and is_person(given):
            # A person's writer would let the agent start what waits for a person's approval.
            raise ToolInputError(f"writer {given!r} names a person; an agent writes as itself (mcp:...)")
        if given and principal(given) != principal(session_writer):
            # Another agent's name would make this agent's own check look independent.
            raise ToolInputError(
                f"writer {given!r} is not this session's agent: it writes as {session_writer} or its own writers"
            )
        if (
            given
            and given.startswith("mcp:")
            and given != session_writer
            and not sessionless(session_writer)
            and given.count(":") >= 2
        ):
            # A session's writer is the session's: another client's would pass as its lease holder.
            raise ToolInputError(
                f"writer {given!r} names another client's session; this session writes as {session_writer}"
            )
        return given or session_writer

    # approval asked from inside a call (elicitation) -----------------------
    def approval_question(self, tool: str, args: Any, writer: str) -> dict[str, str] | None:
        """The item this call would be refused for because it waits for a
        person's approval: {plan, id, content, verb}; else None (the call runs
        as usual and says what is wrong itself)."""
        try:
            if tool == "plan_update":
                args = check_arguments(tool, args)
                if args.get("status") not in ("in_progress", "completed"):
                    return None
                verb = "start" if args["status"] == "in_progress" else "complete"
            elif tool == "plan_next":
                args = check_arguments(tool, args)
                if not args.get("claim"):
                    return None
                verb = "claim"
            else:
                return None
            writer = self.writer_arg(args, writer)
            explicit = plan_name(args.get("plan"))
        except LedgerError:
            return None
        plan = self.plan_or_default(explicit)
        return self.locked(lambda: self._approval_question(plan, tool, args, verb))

    def _approval_question(
        self, plan: str, tool: str, args: dict[str, Any], verb: str
    ) -> dict[str, str] | None:
        lg = self.ledger(write=False)
        if plan not in [p["plan"] for p in lg.plans()]:
            return None
        if lg.signed():  # an answer through the agent's client is never a person's signature: not asked
            return None
        waiting = set(lg.approvals(plan)["waiting"])
        if tool == "plan_update":
            try:
                item = lg.get(args["id"], plan)
            except LedgerError:
                return None
            if item["id"] not in waiting or item["status"] == args["status"]:
                return None
        else:
            ready = lg.next(plan, limit=SHOWN, awaiting=True)
            # An agent's claim skips what waits for a person: ask only when nothing else is ready.
            if not ready or any(r["id"] not in waiting for r in ready):
                return None
            item = ready[0]
        return {"plan": plan, "id": item["id"], "content": item["content"], "verb": verb}

    def approve_from_client(self, question: dict[str, str], person: str) -> None:
        """Record the client's user's approval of the item they were shown, as
        `person`; refused when the item changed while they were asked."""

        def approve() -> None:
            lg = self.ledger(write=True)
            item = lg.get(question["id"], question["plan"])
            if item["content"] != question["content"]:
                raise LedgerError(f"{item['id']} changed while you were asked; not approved")
            lg.approve(item["id"], plan=question["plan"], writer=person)

        self.locked(approve)


def waiting_line(item: str, gate: str | None = None, task: str | None = None) -> str:
    """A person-wait task's status message: what the person runs (for a completion
    forced past a person's gate, the approval that names the task and lets it through)."""
    if gate and task:
        return f"waiting for a person: todoledger approve {item} --task {task} (lets it complete past the gate {gate})"
    return f"waiting for a person: todoledger approve {item}"


def sessionless(writer: str) -> bool:
    """A writer made for one request of the sessionless HTTP protocol (`...:req-<hex>`)."""
    return writer.rpartition(":")[2].startswith("req-")


def _token_holder(lg: Ledger, plan: str, item: str, token: int | None, writer: str) -> str:
    """Without a session, the claim's token names its holder: a request that
    passes the token of a lease held by another request of the same client
    writes as that holder (any other writer's token is refused by its fence)."""
    if token is None or not sessionless(writer):
        return writer
    client = writer.rpartition(":")[0]
    for lease in lg.leases(plan):
        holder = lease["holder"]
        if lease["item"] == item and lease["token"] == token and sessionless(holder):
            return str(holder) if holder.rpartition(":")[0] == client else writer
    return writer


def _reason_arg(args: dict[str, Any], force: bool) -> dict[str, str]:
    """`reason` is the why kept in history: of a cancellation (the item's reason),
    or of a forced completion past a failing gate (recorded with the override,
    as `done --force --reason`)."""
    _blank(args, "reason")
    reason = args.get("reason")
    if reason is None:
        return {}
    if args.get("status") == "cancelled":
        return {"reason": reason}
    if args.get("status") == "completed" and force:
        return {"force_reason": reason}
    raise ToolInputError(
        '"reason" says why an item is cancelled or completed past a failing gate: give it with'
        " status cancelled, or with status completed and force true"
    )


def _uses_arg(args: dict[str, Any]) -> list[str] | None:
    value = args.get("uses")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and len(v) <= 100 for v in value):
        raise ToolInputError('"uses" must be a list of resources like ["server", "gpu:0-3"]')
    return value


def _render(dialect: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The list as the agent's own tool shows it."""
    from todoledger.dialects import render

    try:
        return render(dialect, items)
    except LedgerError:  # a dialect without a renderer: the common shape
        return {"todos": [{"content": it["content"], "status": it["status"]} for it in items]}


def read_reply(view: PlanView, full: bool) -> dict[str, Any]:
    """The compact read: the plan's summary as `core.view` has it, as data
    (texts exactly as written: the agent matches them in its next list)."""
    out: dict[str, Any] = {"plan": view.plan, "revision": view.revision, "counts": view.counts}
    if view.in_progress:
        out["in_progress"] = [
            it.as_dict("forced") | ({"updated_by": it.writer} if it.writer else {}) for it in view.in_progress
        ]
    if view.contested:  # closed in the plan while a list works on them: said, never hidden
        out["contested"] = [it.as_dict("status", "contested") for it in view.contested]
    if view.ready:
        out["ready"] = [it.as_dict("priority", "needs_approval", "uses") for it in view.ready[:SHOWN]]
    if view.dropped:  # left out of a list: named, so that an agent that missed the reply gets them back
        from todoledger.core.prime import DROPPED_SHOWN

        out["dropped"] = [it.as_dict("reason") for it in view.dropped[:DROPPED_SHOWN]]
        more = view.counts.get("dropped", len(view.dropped)) - DROPPED_SHOWN
        out["dropped_note"] = "left out of a list, not done: listed again to revive" + (
            f"; {more} more (all=true)" if more > 0 else ""
        )
    if any(it.estimate or it.uses for it in view.items):  # the plan is scheduled: say its shape
        sched = view.schedule().as_dict()
        out["critical_path"] = {"items": sched["critical_path"], "length": sched["length"]}
        out["parallel"] = sched["parallel"]
    if view.blocked:
        out["blocked"] = len(view.blocked)
    waiting = [it.as_dict("waits_on_cancelled") for it in view.items if it.waits_on_cancelled and it.is_open]
    if waiting:
        out["waits_for_cancelled"] = waiting
    if view.recent:
        out["recent"] = [it.as_dict("evidence", "verification", "forced") for it in view.recent[:SHOWN]]
    if view.claimed:  # completed by their writer, gate failing: not among the completed
        out["claimed"] = [
            it.as_dict("evidence", "verification", "claimed", "forced") for it in view.claimed[:SHOWN]
        ]
    if full:
        out["items"] = [it.as_dict(*_FULL) for it in view.items]
    return out


# Fields of an item in a full read; the later ones appear once other work fills them.
_FULL = (
    "status",
    "priority",
    "parent",
    "depends_on",
    "evidence",
    "reason",
    "notes",
    "verification",
    "forced",
    "contested",
    "waits_on_cancelled",
    "estimate",
    "uses",
    "needs_approval",
)
_MARKS = {"pending": " ", "in_progress": "~", "completed": "x", "cancelled": "-", "dropped": "-"}
# How a writer whose list works on an item someone closed restores it, over MCP.
RESTORE_CALL = "plan_update id={id} status={status}"


def render_markdown(view: PlanView) -> str:
    """The plan as a Markdown checklist: phases nest their items. Every text
    from an agent is escaped: it cannot add lines, links or HTML."""
    lines = [f"# Plan {md_text(view.plan)} (revision {view.revision})", ""]
    if not view.items:
        return "\n".join([*lines, "_empty_", ""])
    for it in view.tree():
        extra = []
        if it.priority != "medium":
            extra.append(it.priority)
        if it.status == "in_progress":
            extra.append(f"in progress, {md_text(it.writer)}" if it.writer else "in progress")
        if it.status in ("dropped", "cancelled"):  # the same box: the word tells them apart
            extra.append(it.status)
        if it.depends_on:
            extra.append("waits for " + ", ".join(md_text(d) for d in it.depends_on))
        extra += [md_text(tag) for tag in it.tags()]
        tail = f" ({'; '.join(extra)})" if extra else ""
        indent = "  " * it.depth
        lines.append(f"{indent}- [{_MARKS.get(it.status, ' ')}] {md_text(it.content)} {md_code(it.id)}{tail}")
        for label, value in (("evidence", it.evidence), ("reason", it.reason), ("notes", it.notes)):
            if value:
                lines.append(f"{indent}  {label}: {md_text(value)}")
    return "\n".join(lines) + "\n"


def _panel(lg: Ledger, cwd: Path | None) -> None:
    """Claude Code's task panel, where `install claude-code --panel` set one up (todoledger.panel)."""
    from todoledger.panel import any_installed

    if any_installed():
        from todoledger.panel.sync import after_write

        after_write(lg, str(cwd) if cwd is not None else None)
