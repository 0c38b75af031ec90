"""MCP tasks that wait for a person: a `plan_update` to start an item that needs a
person's approval, or to complete it past a person's gate, made by a client that
declared the tasks extension (mcp/tasks.py, `PlanTools.person_wait`).

Such a task (`ledger.tasks.waits_for_a_person`) has no worker and no daemon: it
stays `working` with "waiting for a person: todoledger approve ID", so it never
counts as lapsed, and each `tasks/get` looks again (`settle`). Once a
person approved the item (`todoledger approve`, the board), the get that sees it
applies the update as the task's recorded writer, and the task completes with the
CallToolResult the call would have had (a refusal included, `isError: true`). Of two
servers that see it at once, the one that takes the task's lease applies it.

An answer through the agent's own client never approves: a declared `plan_update`
is never asked by elicitation (the task is opened first), and a `tasks/update` on a
wait is ignored (it has no input request; SEP-2663 ignores keys not outstanding).
Only a person's approval, recorded by the ledger's own rules (on a signed ledger,
the person's signature), ends the wait. A cancel ends it at once
(`ledger.tasks.request_cancel`), and approves nothing.

A completion forced past a person's gate waits for that item's approval by a
person that names the task (`todoledger approve ID --task TASK`, after `todoledger
approve` showed it, or the consent button beside it on the board's Approvals page;
`Ledger.gate_consent`): no other approval (to start it, through the client's prompt
or the board's approve button, of the whole plan, an earlier one) lets it through. The update is then applied with `task=`, and the ledger itself checks that
consent again, holds the update to the task's own arguments, and uses it once.

TTL: as every task's (ledger/tasks.py): `ttlMs` is null while it waits, however
many days, and 24 h after it ended once finished.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.mcp.tools import PlanTools


def settle(tools: PlanTools, row: dict[str, Any]) -> dict[str, Any]:
    """The waiting task after a look: cancelled if asked, still waiting, or the
    update applied once a person approved. (Call outside `tools.locked`.)"""
    from todoledger.checks import lifecycle
    from todoledger.core.model import LedgerError
    from todoledger.mcp.taskworker import _call_result, _tool_error

    task_id = row["id"]
    if row["status"] != "working":
        return row
    if row["cancel"]:

        def cancel() -> dict[str, Any]:
            lg = tools.ledger(write=True)
            done = lg.task_transition(task_id, "cancelled", message="cancelled while waiting for a person")
            return done or lg.task(task_id, None) or row

        return tools.locked(cancel)
    if tools.person_wait(row["arguments"], row["writer"], task_id) is not None:
        return row
    me = (lifecycle.host(), os.getpid())

    def take() -> bool:
        lg = tools.ledger(write=True)
        return lg.take_task_lease(task_id, (None, None), me[0], me[1], lifecycle.start_ticks(me[1]))

    if not tools.locked(take):  # another server applies it
        return tools.locked(lambda: tools.ledger(write=False).task(task_id, None)) or row
    approver = tools.locked(lambda: _approver(tools, row))
    try:
        data = tools.plan_update(row["arguments"], row["writer"], task=task_id)
        result, message = _call_result(data), f"approved by {approver}; plan_update applied"
    except LedgerError as exc:
        tools.note_refusal("plan_update", row["arguments"], row["writer"], str(exc))
        result, message = _tool_error(str(exc)), f"plan_update refused: {exc}"[:300]

    def finish() -> dict[str, Any]:
        lg = tools.ledger(write=True)
        done = lg.task_transition(task_id, "completed", message=message, result=result, worker=me)
        return done or lg.task(task_id, None) or row

    return tools.locked(finish)


def _approver(tools: PlanTools, row: dict[str, Any]) -> str:
    """Who approved the item, as the ledger recorded it (a person's writer)."""
    from todoledger.core.model import LedgerError

    lg = tools.ledger(write=False)
    try:
        item = lg.get(str(row["arguments"]["id"]), row["plan"])
    except LedgerError:
        return "a person"
    standing = lg.approvals(row["plan"])["items"].get(item["id"]) or {}
    return str(standing.get("by") or "a person")
