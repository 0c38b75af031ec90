"""MCP Tasks in the ledger: a tool call that runs on after its reply, as a row
that any process on the ledger reads (store/tasks.py), below the façade.

A task (the `io.modelcontextprotocol/tasks` extension, SEP-2663; the MCP side is
mcp/tasks.py, its worker mcp/taskworker.py) is:

- `id`: 128 random bits (32 hex digits); with the principal, all that finds it;
- `tool`, `arguments`: the call, as the server resolved it (a token's identity
  already leads any `writer` argument);
- `principal`: who it belongs to (`core.approval.principal` of the writer: the
  agent kind, or a token's identity), never a session writer: on the 2026
  protocol every request and every server process is a new writer. Another
  principal is told "task not found";
- `writer`: the writer the work writes as; the worker writes only as it;
- `plan`: where each transition is told, as an event `task` (no item) of an op
  `task`, in the same transaction as the row's change;
- `status` (working, input_required, completed, failed, cancelled) and `message`;
- `created_at`, `updated_at`; `ttl_ms`: how long a finished task is kept after it
  ended (`expires_at`, set when it ends); the next task call removes expired rows
  (no daemon), their events stay;
- `poll_ms`, `result` or `error` (JSON), `input_requests` ({key: {"request",
  "response"?}}), the `cancel` flag;
- the worker's lease: `host`, `pid`, `ticks` (the process's start time, so a
  reused pid is told apart), `beat` (its heartbeat, seconds since 1970: a row
  update, never an event) and `workers` (how many were started).

TTL: SEP-2663's `ttlMs` counts from creation ("Time-to-live duration from
creation", and a client MAY give up at `createdAt + ttlMs`), and MAY change over
a task's life. So a task in progress says `ttlMs: null` (unlimited: an approval
wait may last days), and a finished one says its age at the end plus `ttl_ms`
(24 h): it is kept 24 h after it ended, whenever that was (`wire_ttl`).
"""

from __future__ import annotations

import os

from todoledger.core.model import LedgerError
from todoledger.core.timefmt import epoch, now, shift
from todoledger.store.tasks import OPEN, TaskRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit

STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
KEEP_MS = 24 * 3600 * 1000  # a finished task is kept this long after it ended
POLL_MS = 1000
BEAT = 2.0  # seconds between two heartbeats of a worker
LAPSE = 30.0  # seconds without a heartbeat after which a worker on another host counts as gone
START_GRACE = 30.0  # seconds a new task waits for its first worker to take the lease
NOT_FOUND = "task not found"
# The tools whose tasks wait for a person (mcp/taskwaits.py): no worker, by design, however long.
WAITS = frozenset({"plan_update"})


def tasks_repo(u: Unit) -> TaskRepo:
    return TaskRepo(u.store)


def new_task_id() -> str:
    """128 random bits, as 32 hex digits."""
    return os.urandom(16).hex()


def _event(u: Unit, row: dict[str, Any], writer: str, at: str, status: str, message: str | None) -> None:
    """The transition, told in the task's plan (inside the caller's transaction)."""
    u.repo.ensure_plan(row["plan"], at)
    w = u.op(row["plan"], writer, at, "task", summary=f"task {row['id'][:8]} {row['tool']}: {status}")
    told: dict[str, Any] = {"task": row["id"], "tool": row["tool"], "status": status}
    if message:
        told["message"] = message
    w.annotate(None, "task", None, told)


def create(
    u: Unit,
    *,
    tool: str,
    arguments: dict[str, Any],
    principal: str,
    writer: str,
    plan: str,
    message: str,
    cwd: str | None,
    poll_ms: int = POLL_MS,
    ttl_ms: int = KEEP_MS,
    task_id: str | None = None,
) -> dict[str, Any]:
    """A new working task, committed (row and event) before this returns. `task_id`:
    one `new_task_id` made for it beforehand (its message names it)."""
    if task_id is not None and (len(task_id) != 32 or task_id.strip("0123456789abcdef")):
        raise ValueError(f"not a task id: {task_id!r}")
    expire(u)
    at = now()
    row: dict[str, Any] = {
        "id": task_id or new_task_id(),
        "tool": tool,
        "arguments": arguments,
        "principal": principal,
        "writer": writer,
        "plan": plan,
        "status": "working",
        "message": message,
        "created_at": at,
        "updated_at": at,
        "ttl_ms": ttl_ms,
        "poll_ms": poll_ms,
        "cancel": False,
        "cwd": cwd,
    }
    with u.transaction(plan):
        tasks_repo(u).add(row)
        _event(u, row, writer, at, "working", message)
    return (
        row
        | {
            n: None
            for n in ("expires_at", "result", "error", "input_requests", "host", "pid", "ticks", "beat")
        }
        | {"workers": 0}
    )


def get(u: Unit, task_id: str, principal: str | None) -> dict[str, Any] | None:
    """The task, if it is `principal`'s (None: a person's view, any task); else None."""
    if not isinstance(task_id, str) or not task_id or len(task_id) > 64:
        return None
    expire(u)
    with u.store.read():
        row = tasks_repo(u).get(task_id)
    if row is None or (principal is not None and row["principal"] != principal):
        return None
    return row


def require(u: Unit, task_id: str, principal: str | None) -> dict[str, Any]:
    row = get(u, task_id, principal)
    if row is None:
        raise LedgerError(NOT_FOUND)
    return row


def transition(
    u: Unit,
    task_id: str,
    status: str,
    *,
    message: str | None = None,
    result: Any = None,
    error: Any = None,
    writer: str | None = None,
    worker: tuple[str, int] | None = None,
) -> dict[str, Any] | None:
    """Move an open task to `status` (with its event); a finished task never moves
    again. `worker`: only while that (host, pid) holds the lease. The row after
    it, or None when nothing moved."""
    if status not in STATUSES:
        raise ValueError(status)
    repo = tasks_repo(u)
    plan = _plan_of(u, task_id)
    if plan is None:
        return None
    with u.transaction(plan):
        row = repo.get(task_id)
        if row is None or row["status"] in TERMINAL:
            return None
        if worker is not None and (row["host"], row["pid"]) != worker:
            return None
        at = now()
        fields: dict[str, Any] = {"status": status, "message": message, "updated_at": at}
        if status in TERMINAL:
            fields |= {"expires_at": shift(at, row["ttl_ms"] / 1000), "result": result, "error": error}
        repo.update(task_id, **fields)
        _event(u, row, writer or row["writer"], at, status, message)
    return repo.get(task_id)


def note(u: Unit, task_id: str, message: str, worker: tuple[str, int]) -> None:
    """A working task's progress line, without a transition (no event: the status is the same)."""
    repo = tasks_repo(u)
    plan = _plan_of(u, task_id)
    if plan is None:
        return
    with u.locked(plan):
        row = repo.get(task_id)
        if row is not None and row["status"] not in TERMINAL and (row["host"], row["pid"]) == worker:
            repo.update(task_id, message=message, updated_at=now())


def take_lease(u: Unit, task_id: str, held: tuple[Any, Any], host: str, pid: int, ticks: str | None) -> bool:
    """Make (host, pid) the task's worker if the lease is still `held` (as read before)."""
    import time

    plan = _plan_of(u, task_id)
    if plan is None:
        return False
    with u.locked(plan):
        return tasks_repo(u).take_lease(task_id, held, host, pid, ticks, time.time())


def beat(u: Unit, task_id: str, plan: str, host: str, pid: int) -> dict[str, Any] | None:
    """The worker's heartbeat; the row after it, or None when the lease is no longer its own."""
    import time

    with u.locked(plan):
        return tasks_repo(u).beat(task_id, host, pid, time.time())


def request_cancel(u: Unit, task_id: str, principal: str | None, writer: str) -> dict[str, Any]:
    """Set the cancel flag (the worker ends its work through its own teardown); a task
    with no live worker, or one that waits for a person, is cancelled here. The row after it."""
    row = require(u, task_id, principal)
    if row["status"] in TERMINAL:
        return row
    repo = tasks_repo(u)
    with u.locked(row["plan"]):
        repo.update(task_id, cancel=True)
    row = repo.get(task_id) or row
    if waits_for_a_person(row):
        message = "cancelled while waiting for a person"
    elif lapsed(row) is not None:
        message = "cancelled before its worker ran"
    else:
        return row
    return transition(u, task_id, "cancelled", message=message, writer=writer) or row


def answer_inputs(u: Unit, task_id: str, principal: str | None, responses: dict[str, Any]) -> list[str]:
    """Record the client's answers to the task's outstanding input requests; keys not
    outstanding are ignored (SEP-2663). The keys taken. A client's answer is the
    client's: it never counts as a person's approval."""
    row = require(u, task_id, principal)
    asked = dict(row["input_requests"] or {})
    taken = [k for k, v in asked.items() if k in responses and isinstance(v, dict) and "response" not in v]
    if not taken or row["status"] in TERMINAL:
        return []
    for key in taken:
        asked[key] = {**asked[key], "response": responses[key]}
    with u.locked(row["plan"]):
        tasks_repo(u).update(task_id, input_requests=asked, updated_at=now())
    return taken


# A `plan_update`'s arguments as the ledger's update fields (mcp/tools.py maps them so):
# what a forced completion's task asks for, which the ledger holds its update to.
PLAN_UPDATE_FIELDS = (
    ("status", "status"),
    ("priority", "priority"),
    ("content", "content"),
    ("evidence", "evidence"),
    ("notes", "notes"),
    ("parent", "parent"),
    ("add_blocker", "depends_on"),
    ("remove_blocker", "undepend"),
    ("estimate", "estimate"),
    ("needs_approval", "needs_approval"),
    ("uses", "uses"),
    ("force_reason", "reason"),
)
# What a waiting task's arguments say beyond the forced completion itself: shown to the
# person with it (`todoledger approve`), as part of what they consent to.
NOT_CHANGES = frozenset({"id", "status", "force", "reason", "plan", "writer", "secret", "token"})


def update_fields(args: dict[str, Any]) -> dict[str, Any]:
    """The update fields a forced completion's `plan_update` arguments ask for."""
    return {name: args[arg] for name, arg in PLAN_UPDATE_FIELDS if args.get(arg) is not None}


def _forcing(row: dict[str, Any] | None, plan: str) -> bool:
    """Is this row a working `plan_update` task of `plan` forcing a completion?"""
    if row is None or (row["tool"], row["status"], row["plan"]) != ("plan_update", "working", plan):
        return False
    args = row["arguments"] or {}
    return isinstance(args, dict) and args.get("status") == "completed" and bool(args.get("force"))


def consent_entry(row: dict[str, Any]) -> dict[str, Any]:
    """What a person consents to when their approval lets a task through: the task,
    its writer and its arguments exactly (kept in the approval, under its signature)."""
    return {"task": row["id"], "writer": row["writer"], "arguments": row["arguments"]}


def gate_consent(u: Unit, task_id: str, plan: str, item_id: str, writer: str) -> dict[str, str] | None:
    """A person's consent that this writer's waiting MCP task complete `item_id` past
    a person's gate: the task is this writer's working `plan_update` of that item,
    forced to completed, and the item's standing approval (by a person, of the item
    as it is now; on a signed ledger, signed) names this task with the arguments it
    has now (`todoledger approve ID --task TASK`, shown the task first). An approval
    given for anything else (to start the item, through the client's prompt or the
    board, of the whole plan, or before the task) names no task, so lets none through.
    Used once: an override already recorded for this task is not made again.
    {approved_by, approved_at, task}; None: no consent (yet)."""
    from todoledger.core.approval import is_person, item_approvals

    with u.store.read():
        row = tasks_repo(u).get(task_id) if isinstance(task_id, str) and task_id else None
        if row is None or not _forcing(row, plan) or row["writer"] != writer:
            return None
        try:
            item = u.require(plan, str(row["arguments"].get("id")))
        except LedgerError:
            return None
        if item.id != item_id:
            return None
        events = u.repo.approval_events(plan)
        used = [
            e
            for e in u.repo.events(plan, item=item_id)
            if e.field == "forced" and isinstance(e.new, dict) and e.new.get("task") == task_id
        ]
    if used:
        return None
    # The item's own approval, not the whole plan's: a person approving the plan has
    # not looked at this forced completion.
    mine = [e for e in events if e.field == "approved" and e.item == item_id]
    standing = item_approvals([item.as_dict()], [e.as_dict() for e in events])[item_id]
    last = mine[-1] if mine else None
    if last is None or not standing.approved or standing.at != last.at or not is_person(last.writer):
        return None  # never approved, or changed after, or a plan approval came later
    named = last.new.get("lets_through") if isinstance(last.new, dict) else None
    if not isinstance(named, list) or consent_entry(row) not in named:
        return None  # an approval of something else: it showed the person no such task
    if not _signed_if_signed(u, plan, item_id, last):
        return None
    return {"approved_by": str(last.writer), "approved_at": str(last.at), "task": task_id}


def _signed_if_signed(u: Unit, plan: str, item_id: str, approval: Any) -> bool:
    """On a signed ledger, a consent is the person's signature: the approval was made
    since the ledger was signed, and its op holds a signature by a registered key over
    exactly this approval (an unsigned one from before, which a route alone made, or
    one written around todoledger, is no consent). On an unsigned ledger: True."""
    from todoledger.ledger.signed import canonical, content_hash, registry
    from todoledger.personkeys import verify

    with u.store.read():
        reg = registry(u)
        if not reg["keys"]:
            return True
        if reg["signed_since"] is None or approval.seq < reg["signed_since"]:
            return False
        sigs = [e.new for e in u.repo.events(plan, item=item_id, op=approval.op) if e.field == "signed"]
    for sig in sigs:
        stated = sig.get("statement") if isinstance(sig, dict) else None
        key = reg["keys"].get(str(sig.get("key"))) if isinstance(sig, dict) else None
        if (
            isinstance(stated, dict)
            and key is not None
            and (stated.get("action"), stated.get("target"), stated.get("plan")) == ("approve", item_id, plan)
            and stated.get("ledger") == reg["ledger"]
            and stated.get("content") == content_hash(approval.new)
            and verify(str(key["key"]), str(sig.get("sig")), canonical(stated))
        ):
            return True
    return False


def gate_waits(u: Unit, plan: str, item_id: str | None = None) -> list[dict[str, Any]]:
    """The working MCP tasks of `plan` that wait to force an item's completion past a
    person's gate (what a person's approval of that item naming the task lets through,
    `gate_consent`): {task, item, writer, reason, changes, gate, gate_by}, oldest first;
    `changes`: the other arguments it carries (what else it would change); `item_id`:
    that item's alone. A task that forces past no person's gate is not one."""
    from todoledger.ledger.readiness import persons_gate

    out: list[dict[str, Any]] = []
    for row in listing(u, ("working",)):
        if not _forcing(row, plan) or row["pid"] is not None:
            continue
        args = row["arguments"]
        try:
            with u.store.read():
                found = u.require(plan, str(args.get("id")))
        except LedgerError:
            continue
        if item_id is not None and found.id != item_id:
            continue
        gate = persons_gate(u, plan, found.id, row["writer"])
        if gate is None:
            continue
        changes = {k: v for k, v in sorted(args.items()) if k not in NOT_CHANGES and v is not None}
        out.append(
            {
                "task": row["id"],
                "item": found.id,
                "writer": row["writer"],
                "reason": args.get("reason"),
                "changes": changes,
                "gate": gate["check"],
                "gate_by": gate["by"],
            }
        )
    return out


def consented(u: Unit, plan: str, item_id: str, refs: list[str]) -> list[dict[str, Any]]:
    """The waiting tasks a person names to let through with their approval of `item_id`
    (`todoledger approve ID --task TASK`, the task's whole id as listed: a prefix could
    name a task made later to share it), as `consent_entry` keeps them; one line
    refuses a task that does not wait on this item."""
    waits = gate_waits(u, plan, item_id)
    out: list[dict[str, Any]] = []
    for ref in refs:
        ref = str(ref).strip().lower()
        found = [w for w in waits if w["task"] == ref]
        if not found:
            why = (
                "is not a whole task id (todoledger approve lists it)"
                if len(ref) != 32
                else "is no task waiting to complete it past a person's gate (todoledger approve lists them)"
            )
            raise LedgerError(f"task {ref!r} {why} on {item_id}; nothing was done")
        with u.store.read():
            row = tasks_repo(u).get(found[0]["task"])
        if row is None or not _forcing(row, plan):
            raise LedgerError(f"task {ref!r} no longer waits on {item_id}; nothing was done")
        if consent_entry(row) not in out:
            out.append(consent_entry(row))
    return out


def _plan_of(u: Unit, task_id: str) -> str | None:
    with u.store.read():
        row = tasks_repo(u).get(task_id)
    return None if row is None else str(row["plan"])


def outstanding(row: dict[str, Any]) -> dict[str, Any]:
    """The input requests not answered yet: {key: request}."""
    asked = row["input_requests"] or {}
    return {k: v["request"] for k, v in asked.items() if isinstance(v, dict) and "response" not in v}


def listing(u: Unit, statuses: tuple[str, ...] = OPEN) -> list[dict[str, Any]]:
    expire(u)
    with u.store.read():
        return tasks_repo(u).listing(statuses)


def expire(u: Unit) -> int:
    """Remove the finished tasks kept past their time; their events stay. How many."""
    repo = tasks_repo(u)
    at = now()
    with u.store.read():
        gone = repo.expired(at)
    if not gone:
        return 0
    with u.locked(None):
        for task_id, _ in repo.expired(at):
            repo.remove(task_id)
    return len(gone)


def waits_for_a_person(row: dict[str, Any]) -> bool:
    """The task waits for a person's approval: it has no worker, and needs none
    (each `tasks/get` looks again, mcp/taskwaits.py); while a server applies the
    update it holds the lease (its pid), as a worker would."""
    return row["tool"] in WAITS and row["pid"] is None


def lapsed(row: dict[str, Any]) -> str | None:
    """Why the task's worker is gone (a few words), or None while it runs (or it is
    finished, or waits for a person). On this host its pid and start time decide;
    elsewhere a heartbeat in the last `LAPSE` seconds."""
    import time

    from todoledger.checks import lifecycle

    if row["status"] in TERMINAL or waits_for_a_person(row):
        return None
    if row["pid"] is None:  # its worker takes the lease itself once it runs (taskworker.run)
        if (_ms(now()) - _ms(row["updated_at"])) / 1000 < START_GRACE:  # the ledger's clock, as the row's
            return None
        return f"no worker took it within {START_GRACE:.0f} s"
    pid = int(row["pid"])
    if row["host"] == lifecycle.host():
        if lifecycle.is_ours(pid, row["ticks"]):
            return None
        return f"its worker (pid {pid}) is gone"
    age = time.time() - float(row["beat"] or 0.0)
    if age > LAPSE:
        return f"no heartbeat from its worker on {row['host']} for {age:.0f} s"
    return None


def stopped_line(why: str) -> str:
    """What a person is told of a task whose worker is gone (`lapsed`: `why`): stopped,
    never running. Nothing resumes it but its client's next `tasks/get` (no daemon),
    which starts a new worker, or fails or cancels it (mcp/taskworker.py `resume`)."""
    return f"stopped: {why}; the agent's next tasks/get resumes it or ends it"


def wire_ttl(row: dict[str, Any]) -> int | None:
    """`ttlMs` as SEP-2663 counts it, from creation: None (unlimited) while the task
    is open; once it ended, its age then plus the time it is kept."""
    if row["status"] not in TERMINAL:
        return None
    return _ms(row["updated_at"]) - _ms(row["created_at"]) + int(row["ttl_ms"])


def _ms(at: str) -> int:
    millis = int(at[20:23]) if len(at) >= 23 and at[19] == "." else 0
    return epoch(at[:19]) * 1000 + millis
