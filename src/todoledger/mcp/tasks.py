"""MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663, the 2026-07-28 extension)
through the SDK's extension hook: long tool calls answered with a task handle,
their work run by a detached worker, their state a row of the ledger.

Interfaces (for what builds on this: plan_sweep, approval waits, the board):

- `TasksExtension(tools, identify)`: the SDK `Extension` that `mcp/server.py`
  passes to `MCPServer(extensions=[...])`. The SDK advertises it under
  `capabilities.extensions` of `server/discover` (the 2026-07-28 revision, the
  one this extension belongs to; the SDK's `initialize` answers of the earlier
  versions carry no extensions) and routes:
  - `tools/call` (`intercept_tool_call`): only where this request's
    `_meta` clientCapabilities declare the extension (on the 2026-07-28 wire),
    and `PlanTools.open_task(name, args, writer, spawn)` (mcp/tools.py) finds
    the call long, the task's row is committed (`Ledger.create_task`), a worker
    is started (`mcp/taskworker.py` `spawn`: after the commit) and the reply is
    a CreateTaskResult (`resultType: "task"`); otherwise the call runs as ever;
  - `tasks/get`: the task's state (`wire`), from the row, in any server
    process; a `working` task whose worker lapsed is resumed or failed first
    (`taskworker.resume`);
  - `tasks/update`: the client's answers to the task's outstanding input
    requests, recorded as the client's (`Ledger.answer_task`): never a person's
    approval;
  - `tasks/cancel`: the cancel flag, and SIGTERM to a live worker on this
    host (verify's own teardown ends its checks); a worker elsewhere sees the
    flag at its next heartbeat.
  Another principal's task, or none, is "task not found" (-32602); a request
  that did not declare the extension gets -32021.
- `identify(ctx, args) -> (args, writer)`: how the server names the writer of a
  request (mcp/server.py: the client's name and session, a token's identity in
  front); the task's principal is `core.approval.principal(writer)`.
- `TASK_TOOLS`: the tools that may become tasks; a new one adds its name here,
  its decision to `PlanTools.open_task`, and its resumability to
  `taskworker.RESUMABLE` / `taskworker.resume_line`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    ClientCapabilities,
    MissingRequiredClientCapabilityErrorData,
    RequestParams,
)
from mcp_types.jsonrpc import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from todoledger.core.model import LedgerError
from todoledger.mcp.duplicates import lost_keys
from todoledger.mcp.tools import TASK_TOOLS, TASKS_EXTENSION, PlanTools

EXTENSION = TASKS_EXTENSION
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
NOT_FOUND = "Failed to retrieve task: task not found"

Identify = Callable[[ServerRequestContext[Any, Any], Any], tuple[Any, str]]


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId", max_length=64)


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses", default_factory=dict)


def declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """This request's client capabilities declare the extension (2026-07-28 wire)."""
    if ctx.protocol_version not in MODERN:
        return False
    caps = ctx.session.client_capabilities
    found = caps.extensions if caps is not None else None
    return bool(found) and EXTENSION in found  # type: ignore[operator]


def _require_declared(ctx: ServerRequestContext[Any, Any]) -> None:
    if declared(ctx):
        return
    data = MissingRequiredClientCapabilityErrorData(
        required_capabilities=ClientCapabilities(extensions={EXTENSION: {}})
    )
    raise MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"Missing required client capability: the {EXTENSION} extension",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


def wire(row: dict[str, Any], *, created: bool = False) -> dict[str, Any]:
    """The task as SEP-2663 shows it: a CreateTaskResult (`created`) or a DetailedTask."""
    from todoledger.ledger.tasks import outstanding, wire_ttl

    out: dict[str, Any] = {
        "taskId": row["id"],
        "status": row["status"],
        "createdAt": row["created_at"],
        "lastUpdatedAt": row["updated_at"],
        "ttlMs": wire_ttl(row),
        "pollIntervalMs": int(row["poll_ms"]),
    }
    if row["message"]:
        out["statusMessage"] = row["message"]
    if created:
        return {"resultType": "task", **out}
    if row["status"] == "input_required":
        out["inputRequests"] = outstanding(row)
    elif row["status"] == "completed":
        out["result"] = row["result"] or {"content": [], "isError": False}
    elif row["status"] == "failed":
        out["error"] = row["error"] or {"code": -32603, "message": row["message"] or "failed"}
    return {"resultType": "complete", **out}


class TasksExtension(Extension):
    identifier = EXTENSION

    def __init__(self, tools: PlanTools, identify: Identify) -> None:
        self.plan_tools = tools
        self.identify = identify

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self._get, protocol_versions=MODERN),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, protocol_versions=MODERN),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, protocol_versions=MODERN),
        ]

    # tools/call ----------------------------------------------------------------------------
    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name not in TASK_TOOLS or not declared(ctx) or lost_keys(ctx.params):
            return await call_next(ctx)  # the call as ever (a repeated key: the tool refuses it)
        raw = ctx.params.get("arguments") if ctx.params is not None else None
        try:
            args, writer = self.identify(ctx, raw)
        except LedgerError:
            return await call_next(ctx)  # refused there, in one line, and told to the person
        from todoledger.mcp.taskworker import spawn_soon

        row = await anyio.to_thread.run_sync(self.plan_tools.open_task, params.name, args, writer, spawn_soon)
        if row is None:
            return await call_next(ctx)
        return wire(row, created=True)

    # tasks/* -------------------------------------------------------------------------------
    def _principal(self, ctx: ServerRequestContext[Any, Any]) -> str:
        from todoledger.core.approval import principal

        _require_declared(ctx)
        return principal(self.identify(ctx, None)[1])

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        from todoledger.ledger.tasks import waits_for_a_person
        from todoledger.mcp import taskwaits

        who = self._principal(ctx)
        row = await anyio.to_thread.run_sync(self._look, params.task_id, who)
        if row is None:
            raise MCPError(code=INVALID_PARAMS, message=NOT_FOUND)
        if waits_for_a_person(row):  # no daemon: this get looks again
            row = await anyio.to_thread.run_sync(taskwaits.settle, self.plan_tools, row)
        return wire(row)

    def _look(self, task_id: str, who: str) -> dict[str, Any] | None:
        from todoledger.ledger.tasks import lapsed
        from todoledger.mcp import taskworker

        def look() -> dict[str, Any] | None:
            lg = self.plan_tools.ledger(write=True)
            row = lg.task(task_id, who)
            why = lapsed(row) if row is not None else None  # None too for a wait for a person
            if row is not None and why is not None:  # no daemon: the next get resumes or fails it
                row = taskworker.resume(lg, row, why)
            return row

        return self.plan_tools.locked(look)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> HandlerResult:
        who = self._principal(ctx)

        def update() -> list[str]:
            return self.plan_tools.ledger(write=True).answer_task(params.task_id, who, params.input_responses)

        try:
            await anyio.to_thread.run_sync(lambda: self.plan_tools.locked(update))
        except LedgerError:
            raise MCPError(code=INVALID_PARAMS, message=NOT_FOUND) from None
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        who = self._principal(ctx)
        writer = self.identify(ctx, None)[1]

        def cancel() -> dict[str, Any]:
            return self.plan_tools.ledger(write=True).cancel_task(params.task_id, who, writer)

        try:
            row = await anyio.to_thread.run_sync(lambda: self.plan_tools.locked(cancel))
        except LedgerError:
            raise MCPError(code=INVALID_PARAMS, message=NOT_FOUND) from None
        _stop_worker(row)
        return {"resultType": "complete"}


def _stop_worker(row: dict[str, Any]) -> None:
    """SIGTERM to the task's live worker on this host: its checks end through verify's
    own teardown, and it records the task cancelled. Elsewhere: its next heartbeat."""
    from todoledger.checks import lifecycle

    if row["status"] not in ("working", "input_required") or row["pid"] is None:
        return
    if row["host"] == lifecycle.host() and lifecycle.is_ours(int(row["pid"]), row["ticks"]):
        with contextlib.suppress(OSError):
            os.kill(int(row["pid"]), signal.SIGTERM)
