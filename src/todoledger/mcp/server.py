"""The MCP server: the ledger's tools and resources over the official SDK.

Only `todoledger mcp` and `todoledger serve` import this module: the SDK
costs a noticeable start-up that hooks and the plain CLI must not pay.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from todoledger import __version__
from todoledger.core.model import LedgerError
from todoledger.mcp.output import OUTPUT_SCHEMAS
from todoledger.mcp.tools import INSTRUCTIONS, TOOL_ANNOTATIONS, TOOLS, PlanTools

logger = logging.getLogger("todoledger.mcp")

# A stdio server process serves one client: that is its session.
PROCESS_SESSION = secrets.token_hex(4)
SESSION_HEADER = "mcp-session-id"
# Set by `serve --tokens` (mcp/http.py Guard) from the bearer token, never by a client.
IDENTITY_HEADER = "x-todoledger-identity"

ToolMethod = Callable[[dict[str, Any], str], dict[str, Any]]


def session_writer(ctx: Context[Any, Any]) -> str:
    """`mcp:<client name>:<short session id>`: the client's own name from the
    handshake, the transport's session (HTTP) or this process (stdio)."""
    rc = ctx.request_context
    params = rc.session.client_params
    name = params.client_info.name if params is not None else "client"
    name = "".join(c if c.isalnum() or c in "-_.@/" else "-" for c in name)[:64] or "client"
    headers = ctx.headers
    # stdio has no headers: the process is the session. HTTP: the legacy
    # transport's session id. The 2026 protocol is sessionless: two agents with
    # the same client name must not share one view (one's list would drop the
    # other's items), so each request is its own writer unless the agent passes
    # back the `writer` that todowrite returned.
    if headers is None:
        session = PROCESS_SESSION
    else:
        session = (headers.get(SESSION_HEADER) or "")[:8] or "req-" + secrets.token_hex(4)
    return f"mcp:{name}:{session}"


def with_identity(ctx: Context[Any, Any], args: Any, writer: str) -> tuple[Any, str]:
    """Behind `serve --tokens`, the token's person or agent leads every writer
    name, the one an agent passes included: writers are not self-declared."""
    headers = ctx.headers
    identity = headers.get(IDENTITY_HEADER) if headers is not None else None
    if not identity:
        return args, writer
    mark = f"{identity}@"
    given = args.get("writer") if isinstance(args, dict) else None
    if isinstance(given, str) and given.strip() and not given.startswith(mark):
        args = args | {"writer": mark + given}
    return args, mark + writer


def _raw_arguments(ctx: Context[Any, Any]) -> Any:
    params = ctx.request_context.params
    return params.get("arguments") if params is not None else None


def _result(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _tool(name: str, method: ToolMethod) -> Tool:
    async def call(ctx: Context[Any, Any]) -> CallToolResult:
        args = _raw_arguments(ctx)
        try:
            args, writer = with_identity(ctx, args, session_writer(ctx))
            data = await anyio.to_thread.run_sync(method, args, writer)
        except LedgerError as exc:
            return _error(str(exc))
        except Exception as exc:  # a bug must still answer with one sentence, never a traceback
            logger.exception("tool %s failed", name)
            return _error(f"internal error in {name} ({type(exc).__name__}); the ledger is unchanged")
        return _result(data)

    call.__name__ = name
    spec = TOOLS[name]
    hints = TOOL_ANNOTATIONS.get(name)
    tool = Tool.from_function(
        call,
        name=name,
        description=spec["description"],
        annotations=ToolAnnotations(read_only_hint=hints.get("readOnlyHint")) if hints else None,
        structured_output=False,
    )
    # The published schema is hand-written (compact, exact); the arguments
    # are checked by PlanTools with one-sentence errors.
    tool.parameters = spec["inputSchema"]
    tool.fn_metadata.output_schema = OUTPUT_SCHEMAS[name]
    return tool


def build_server(*, plan: str | None = None, cwd: Path | None = None) -> tuple[MCPServer[Any], PlanTools]:
    tools = PlanTools(default_plan=plan, cwd=cwd)
    server: MCPServer[Any] = MCPServer(
        "todoledger",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=[_tool(name, getattr(tools, name)) for name in TOOLS],
        log_level="WARNING",
    )

    async def in_thread(fn: Callable[[], str]) -> str:
        try:
            return await anyio.to_thread.run_sync(fn)
        except LedgerError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @server.resource(
        "todoledger://plan/{name}",
        name="plan",
        description="A plan as a Markdown checklist",
        mime_type="text/markdown",
    )
    async def plan_resource(name: str) -> str:
        return await in_thread(lambda: tools.plan_markdown(name))

    @server.resource(
        "todoledger://prime",
        name="prime",
        description="Recovery text: where the plan stands; read at session start or after compaction",
        mime_type="text/plain",
    )
    async def prime_resource() -> str:
        return await in_thread(tools.prime)

    return server, tools


def run_stdio(*, plan: str | None = None) -> None:
    server, tools = build_server(plan=plan)
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        # The client went away (closed our stdout): that ends the session, it is no error.
        _, rest = group.split((BrokenPipeError, anyio.BrokenResourceError, anyio.ClosedResourceError))
        if rest is not None:
            raise rest from None
    finally:
        tools.close()
