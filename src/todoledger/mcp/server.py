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
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from todoledger import __version__
from todoledger.core.model import LedgerError
from todoledger.mcp.duplicates import lost_keys
from todoledger.mcp.output import OUTPUT_SCHEMAS
from todoledger.mcp.tools import INSTRUCTIONS, TOOL_ANNOTATIONS, TOOLS, PlanTools
from todoledger.mcp.writer import PROCESS_SESSION, client_writer, lead_writer
from todoledger.tokens import IDENTITY_HEADER, ROLE_HEADER, STARTER_ROLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.shared import SharedLedger

logger = logging.getLogger("todoledger.mcp")

# A stdio server process serves one client: that is its session (mcp/writer.py: the lean path's too).
SESSION_HEADER = "mcp-session-id"
# IDENTITY_HEADER, ROLE_HEADER: set by `serve` (mcp/http.py Guard) from the
# bearer token, never by a client: the token's identity and its role.

ToolMethod = Callable[[dict[str, Any], str], dict[str, Any]]


def session_writer(ctx: Context[Any, Any]) -> str:
    """`mcp:<client name>:<short session id>`: the client's own name from the
    handshake, the transport's session (HTTP) or this process (stdio)."""
    rc = ctx.request_context
    params = rc.session.client_params
    # stdio has no headers: the process is the session. HTTP: the legacy
    # transport's session id. The 2026 protocol is sessionless: two agents with
    # the same client name must not share one view (one's list would drop the
    # other's items), so each request is its own writer unless the agent passes
    # back the `writer` that todowrite returned.
    headers = ctx.headers
    if headers is None:
        session = PROCESS_SESSION
    else:
        session = (headers.get(SESSION_HEADER) or "")[:8] or "req-" + secrets.token_hex(4)
    return client_writer(params.client_info.name if params is not None else None, session)


def with_identity(ctx: Context[Any, Any], args: Any, writer: str) -> tuple[Any, str]:
    """Behind `serve --tokens`, the token's person or agent leads every writer
    name (`mcp/writer.py`, the rule the lean stdio path shares)."""
    headers = ctx.headers
    return lead_writer(headers.get(IDENTITY_HEADER) if headers is not None else None, args, writer)


def request_writer(rc: Any, args: Any) -> tuple[Any, str]:
    """The writer of a request seen below the tools (an extension's hook gets the
    request's context, not a tool's): as a tool call names it, identity in front."""
    ctx: Context[Any, Any] = Context(request_context=rc)
    return with_identity(ctx, args, session_writer(ctx))


def _raw_arguments(ctx: Context[Any, Any]) -> Any:
    params = ctx.request_context.params
    return params.get("arguments") if params is not None else None


def _result(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


# Approval asked from inside a tool call ------------------------------------
# When an agent's plan_update (start, complete) or plan_next claim would be
# refused because the item waits for a person's approval, and the client
# declared form elicitation, the server asks the client's user. A yes is an
# approval by that person, recorded as `mcp-user:<client>:<session>`: who
# answered is the client's user (the client shows the question to a person,
# not to the model), and the name keeps the channel visible in the history.
# No, cancel, an error or a client without elicitation: the usual refusal.
#
# Over HTTP the answer is the token's: behind `serve --tokens` (or a single
# --token off loopback) a person's token answers as
# `mcp-user:<person>@<client>:<session>`, and under an agent's token nothing is
# asked: the call is refused with a line saying a person must approve. A server
# on loopback with no token's identity (no token, or a single --token there)
# keeps the stdio rule: it trusts this machine's user, as its board does.
ASKING_TOOLS = ("plan_update", "plan_next")
INPUT_REQUIRED_VERSION = "2026-07-28"  # from here the question rides an InputRequiredResult
APPROVAL_KEY = "todoledger_approval"


class Approval(BaseModel):
    approve: bool = Field(description="Approve this item as it stands", title="Approve")


def person_writer(ctx: Context[Any, Any]) -> str | None:
    """Who answers an approval prompt: the client's user for this session,
    `mcp-user:<client>:<session>`; behind a token's identity the token's person,
    `mcp-user:<person>@<client>:<session>`; None under an agent's token."""
    headers = ctx.headers
    identity = headers.get(IDENTITY_HEADER) if headers is not None else None
    session = session_writer(ctx).removeprefix("mcp:")
    if headers is None and stdio_client_is_an_agents() is not None:
        return None  # this server's client was started from inside an agent's shell: the agent answers
    if not identity:
        return "mcp-user:" + session
    if headers is None or headers.get(ROLE_HEADER) != "person":
        return None  # an agent's token, or a server no person started (role `starter`)
    return f"mcp-user:{identity}@{session}"


_STDIO_ABOVE: list[tuple[str, str] | None] = []  # once per process: the tree above it does not change


def stdio_client_is_an_agents() -> tuple[str, str] | None:
    """Over stdio the client is the process that started this server. A harness
    starts its MCP servers itself, and its user answers their prompts; a server
    started from inside an agent's shell tool (`todoledger mcp` run by the agent,
    with a client script of its own) is answered by that agent: (kind, session)
    of that agent (`identity.shell_above`), or None."""
    if not _STDIO_ABOVE:
        from todoledger.identity import shell_above

        _STDIO_ABOVE.append(shell_above())
    return _STDIO_ABOVE[0]


def _can_elicit(ctx: Context[Any, Any]) -> bool:
    caps = ctx.client_capabilities
    found = caps.elicitation if caps is not None else None
    # A bare `elicitation: {}` (before modes existed) means form support; url-only does not.
    return found is not None and (found.form is not None or found.url is None)


def _question_text(q: dict[str, str], writer: str) -> str:
    from todoledger.core.sanitize import for_terminal

    return (
        f"The agent {for_terminal(writer)} asks to {q['verb']} {q['id']} in plan {for_terminal(q['plan'])}:"
        f" {for_terminal(q['content'])[:300]!r}. It needs a person's approval. Approve it as it stands?"
    )


def _accepted(answer: Any) -> bool:
    """An elicitation answer (a model or its JSON form) that says yes."""
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(by_alias=True)
    if not isinstance(answer, dict) or answer.get("action") != "accept":
        return False
    content = answer.get("content")
    return isinstance(content, dict) and content.get("approve") is True


async def ask_approval(
    ctx: Context[Any, Any], tools: PlanTools, name: str, args: Any, writer: str
) -> InputRequiredResult | CallToolResult | None:
    """Ask the client's user to approve the item this call would be refused
    for; record a yes. An InputRequiredResult is the question (2026-07-28),
    to be answered in the client's retry; a CallToolResult, the refusal under
    an agent's token (nothing asked); None: run the call."""
    if name not in ASKING_TOOLS or not _can_elicit(ctx):
        return None
    question = await anyio.to_thread.run_sync(tools.approval_question, name, args, writer)
    if question is None:
        return None
    person = person_writer(ctx)
    if person is None:  # an agent's token, or an agent's own client: its answer would be the agent's
        headers = ctx.headers
        above = stdio_client_is_an_agents() if headers is None else None
        if above is not None:
            why = f"this server was started from inside {above[0]}'s shell, so its client is that agent"
        elif headers is not None and headers.get(ROLE_HEADER) == STARTER_ROLE:
            why = f"this server was started by {headers.get(IDENTITY_HEADER)}, not a person"
        else:
            why = f"no answer under {writer.partition('@')[0]}'s token counts as one (an agent's token)"
        return _error(
            f"cannot {question['verb']} {question['id']}: it needs a person's approval, and {why};"
            " a person approves it under a person's token, on the board or from a terminal"
        )
    message = _question_text(question, writer)
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION):
        state = json.dumps(question, sort_keys=True)
        answer = (ctx.input_responses or {}).get(APPROVAL_KEY)
        if answer is None or ctx.request_state != state:  # first round, or an answer to another question
            request = ElicitRequest(
                params=ElicitRequestFormParams(
                    message=message, requested_schema=render_elicitation_schema(Approval)
                )
            )
            return InputRequiredResult(input_requests={APPROVAL_KEY: request}, request_state=state)
        accepted = _accepted(answer)
    else:
        try:
            result = await ctx.elicit(message, Approval)
        except Exception:  # the client could not ask (no back-channel, a bad answer): not approved
            logger.warning("approval prompt for %s failed", question["id"], exc_info=True)
            return None
        accepted = result.action == "accept" and result.data.approve
    if accepted:
        await anyio.to_thread.run_sync(tools.approve_from_client, question, person)
    return None


# Over stdio (one client, calls taken in turn on one SQLite connection) these tools
# run on the event loop itself: they only read and write the ledger, never run a
# check, and the hop to a worker thread and back is a tenth of a warm call
# (bench/bench_mcp.py). The others may run a gate's command: they keep their thread.
INLINE_TOOLS = ("todowrite", "todoread")


def _tool(name: str, method: ToolMethod, tools: PlanTools, inline: bool = False) -> Tool:
    async def call(ctx: Context[Any, Any]) -> CallToolResult | InputRequiredResult:
        args = _raw_arguments(ctx)
        lost = lost_keys(ctx.request_context.params)
        writer = session_writer(ctx)
        if lost:  # the SDK's parse kept the last of two equal keys: refused, as the CLI refuses it
            refusal = tools.duplicate_refusal(name, args, lost)
            await anyio.to_thread.run_sync(tools.note_refusal, name, args, writer, refusal)
            return _error(refusal)
        try:
            args, writer = with_identity(ctx, args, writer)
            asked = await ask_approval(ctx, tools, name, args, writer)
            if asked is not None:
                return asked
            if inline:
                data = method(args, writer)
            else:
                data = await anyio.to_thread.run_sync(method, args, writer)
        except LedgerError as exc:  # refused: told to the person too (report, board), nothing else changes
            await anyio.to_thread.run_sync(tools.note_refusal, name, args, writer, str(exc))
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
        annotations=ToolAnnotations.model_validate(hints) if hints else None,  # every hint, as named
        structured_output=False,
    )
    # The published schema is hand-written (compact, exact); the arguments
    # are checked by PlanTools with one-sentence errors.
    tool.parameters = spec["inputSchema"]
    tool.fn_metadata.output_schema = OUTPUT_SCHEMAS[name]
    return tool


def build_server(
    *,
    plan: str | None = None,
    cwd: Path | None = None,
    shared: SharedLedger | None = None,
    inline: tuple[str, ...] = (),
) -> tuple[MCPServer[Any], PlanTools]:
    """The server and its tools; `inline`: the tools run on the event loop (stdio)."""
    from todoledger.mcp.tasks import TasksExtension

    tools = PlanTools(default_plan=plan, cwd=cwd, shared=shared)
    server: MCPServer[Any] = MCPServer(
        "todoledger",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=[_tool(name, getattr(tools, name), tools, name in inline) for name in TOOLS],
        extensions=[TasksExtension(tools, request_writer)],
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


async def _serve_stdio(server: MCPServer[Any], prefix: bytes) -> None:
    from todoledger.mcp.stdio import serve_stdio

    # MCPServer.run_stdio_async, with the loop's own pipes for the SDK's threads.
    lowlevel = server._lowlevel_server
    async with serve_stdio(prefix) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(*, plan: str | None = None, prefix: bytes = b"") -> None:
    """Serve the session on stdio; `prefix`: lines read before stdin (a session the
    lean path began and hands on: `mcp/lean.py`)."""
    server, tools = build_server(plan=plan, inline=INLINE_TOOLS)
    try:
        anyio.run(_serve_stdio, server, prefix)
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        # The client went away (closed our stdout: a broken pipe, or asyncio's "connection
        # lost" on the pipe): that ends the session, it is no error.
        _, rest = group.split((ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError))
        if rest is not None:
            raise rest from None
    finally:
        from todoledger.mcp.taskworker import settle

        settle()  # a task's worker still being started goes before this process does
        tools.close()
