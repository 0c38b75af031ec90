"""Claude Code Tasks: `TaskCreate` and `TaskUpdate` inputs, one task per call.

Each call is a patch (`whole=False`): it touches only the task it names.
Argument names vary between Claude versions (`taskId`, `id`, `task_id`),
so all are read. A new task's id is only known from the tool's response.
"""

from __future__ import annotations

from todoledger.core.lint import lint_items
from todoledger.core.model import Incoming, ParsedWrite
from todoledger.dialects._base import Reader, id_text, kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "claude-tasks"
TOOLS = ("TaskCreate", "TaskUpdate")
ID_KEYS = ("taskId", "id", "task_id")
# Keys of list dialects: a lone list item (which may carry an `id`) is not a task patch.
_FOREIGN_KEYS = ("todos", "plan", "content", "step")


def fits(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "not an object"
    for k in _FOREIGN_KEYS:
        if k in payload:
            return f'has "{k}"'
    if "subject" in payload or any(k in payload for k in ID_KEYS):
        return None
    return 'no "subject" or "taskId"'


def _response_id(response: Any, *path: str) -> str | None:
    for key in path:
        if not isinstance(response, dict):
            return None
        response = response.get(key)
    return id_text(response)


def read(payload: Any, *, response: Any = None, tool: str | None = None) -> ParsedWrite:
    r = Reader()
    items: list[Incoming] = []
    if not isinstance(payload, dict):
        r.error("$", "wrong-shape", f"expected a TaskCreate or TaskUpdate object, got {kind(payload)}")
    else:
        update = tool == "TaskUpdate" or (tool != "TaskCreate" and any(k in payload for k in ID_KEYS))
        inc = _read_update(payload, response, r) if update else _read_create(payload, response, r)
        if inc is not None:
            items.append(inc)
    findings = r.findings + lint_items(items, NAME, whole=False)
    return ParsedWrite(dialect=NAME, items=items, whole=False, findings=findings)


def _read_create(payload: dict[str, Any], response: Any, r: Reader) -> Incoming | None:
    subject = r.text(payload, "subject", "", required=True)
    if subject is None:
        return None
    return Incoming(
        content=subject,
        status="pending",  # Claude creates every task pending
        active_form=r.optional_text(payload, "activeForm", ""),
        notes=r.optional_text(payload, "description", ""),
        ext_id=_response_id(response, "task", "id"),
    )


def _read_update(payload: dict[str, Any], response: Any, r: Reader) -> Incoming | None:
    ext_id = next((r.ext_id(payload, k, "") for k in ID_KEYS if k in payload), None)
    if ext_id is None:
        # The response echoes the id; use it when the input's is missing or unusable.
        ext_id = _response_id(response, "taskId")
    if ext_id is None:
        r.error("taskId", "missing-field", 'TaskUpdate needs a "taskId"')
        return None
    inc = Incoming(
        content=r.text(payload, "subject", ""),
        status=r.word(payload, "status", ""),
        active_form=r.optional_text(payload, "activeForm", ""),
        notes=r.optional_text(payload, "description", ""),
        ext_id=ext_id,
        blocks=r.id_list(payload, "addBlocks", ""),
        blocked_by=r.id_list(payload, "addBlockedBy", ""),
    )
    if inc.status == "deleted":
        inc.status, inc.reason = "cancelled", "deleted"
    return inc


def render(items: list[dict[str, Any]]) -> dict[str, Any]:
    # Claude Tasks have no "cancelled" (nor "dropped"): a deleted task is gone from TaskList.
    tasks = [
        {"id": it["id"], "subject": it["content"], "status": it["status"]}
        for it in items
        if it["status"] not in ("cancelled", "dropped")
    ]
    return {"tasks": tasks}
