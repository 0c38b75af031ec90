"""Claude Code: mirror TodoWrite / TaskCreate / TaskUpdate, record a plan
approved in plan mode (ExitPlanMode), prime on SessionStart."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger import Ledger, WriteResult
    from todoledger.panel import Target

TOOL_DIALECTS = {"TodoWrite": "claude-code", "TaskCreate": "claude-tasks", "TaskUpdate": "claude-tasks"}


def writer_of(event: dict[str, Any]) -> str:
    writer = f"claude-code:{event.get('session_id') or 'unknown'}"
    agent = event.get("agent_id")
    return f"{writer}:{agent}" if agent else writer


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.hooks import ledger as hook_ledger
    from todoledger.hooks import mirror

    name = event.get("hook_event_name")
    if name == "SessionStart":
        where = _panel(cwd)
        if where is not None:  # first of all: Claude Code shows external rows only if the folder exists
            from todoledger.panel.sync import ensure_folder

            ensure_folder(where)
        # After a compaction the agent knows only what this text shows it.
        recovering = event.get("source") == "compact"
        with hook_ledger(cwd, create=where is not None) as ledger:
            if where is not None:
                _sync(ledger, where, cwd)
            return ledger.prime(writer=writer_of(event), recovering=recovering)
    if name != "PostToolUse":
        return None
    tool = event.get("tool_name")
    if tool == "ExitPlanMode":
        # PostToolUse fires only when the call went through: the user approved this plan.
        from todoledger.defaults import default_plan
        from todoledger.ingest.bridges import approved_plan, plan_text

        text = plan_text(event.get("tool_input")) or plan_text(event.get("tool_response"))
        if text is None:
            raise ValueError("ExitPlanMode: no plan text in tool_input or tool_response")
        with hook_ledger(cwd) as ledger:
            approved_plan(ledger, text, plan=default_plan(), writer=writer_of(event))
        return None
    dialect = TOOL_DIALECTS.get(str(tool))
    if dialect is None:
        return None
    payload = event.get("tool_input")
    response = event.get("tool_response")
    if tool == "TaskUpdate" and isinstance(response, dict) and response.get("success") is False:
        # Refused (a TaskCompleted hook, the goal-lock among them): Claude Code changed nothing.
        return None
    if tool == "TodoWrite" and not isinstance(payload, dict) and isinstance(response, dict):
        payload = {"todos": response.get("newTodos")}
    if not isinstance(payload, dict):
        raise ValueError(f"{tool}: tool_input is not an object")
    # Task ids belong to the session's task list, which its subagents share:
    # their Task calls write as the session so that the ids resolve.
    writer = writer_of(event) if dialect == "claude-code" else writer_of({**event, "agent_id": None})
    # The panel is asked here (Task calls name its rows) and at SessionStart only: a Stop or
    # another tool's call loads nothing of it, and a TodoWrite's sync follows its write (`mirror`).
    where = _panel(cwd) if dialect == "claude-tasks" else None
    if where is None:
        mirror(cwd, payload, writer=writer, dialect=dialect, response=response)
        return None
    from todoledger.panel.sync import seen, translate

    # The panel's rows carry their item: an update of one names the item, not the row.
    row = _row_id(tool, payload, response)
    payload = translate(where, payload) if tool == "TaskUpdate" else payload

    def adopt(ledger: Ledger, result: WriteResult) -> None:
        seen(ledger, where, row, result.ids[0] if result.ids else None)
        _sync(ledger, where, cwd)

    mirror(cwd, payload, writer=writer, dialect=dialect, response=response, after=adopt)
    return None


def _panel(cwd: str | None) -> Target | None:
    """This project's panel (`install claude-code --panel`): its list id is in the
    hook's environment (settings.local.json `env`), so no other hook imports anything."""
    import os

    if not os.environ.get("CLAUDE_CODE_TASK_LIST_ID", "").startswith("todoledger-"):
        return None
    from todoledger.panel import target

    return target(cwd)


def _sync(ledger: Ledger, where: Target, cwd: str | None) -> None:
    from todoledger.hooks import log
    from todoledger.panel.sync import sync

    try:
        sync(ledger, where)
    except Exception as exc:  # a view: its failure never fails the agent's call
        log(f"panel {where.list_id}: {type(exc).__name__}: {exc}", cwd)


def _row_id(tool: object, payload: dict[str, Any], response: Any) -> object:
    """The row the model's Task call wrote: the new task's id is only in the response."""
    if tool == "TaskCreate":
        task = response.get("task") if isinstance(response, dict) else None
        return task.get("id") if isinstance(task, dict) else None
    return next((payload[k] for k in ("taskId", "id", "task_id") if k in payload), None)
