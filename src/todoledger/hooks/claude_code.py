"""Claude Code: mirror TodoWrite / TaskCreate / TaskUpdate, record a plan
approved in plan mode (ExitPlanMode), prime on SessionStart."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
        # After a compaction the agent knows only what this text shows it.
        recovering = event.get("source") == "compact"
        with hook_ledger(cwd, create=False) as ledger:
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
    mirror(cwd, payload, writer=writer, dialect=dialect, response=response)
    return None
