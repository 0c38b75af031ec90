"""The Stop gate: an agent may not end its turn on a "done" its gates deny.

Installed only on request (`todoledger install AGENT --gate-stop`, which
runs the hook as `todoledger hook AGENT --gate-stop`). When items that this
session (or its subagents) completed have gates that fail, never ran or went
stale, the answer blocks the stop and names them with their output. It never
loops: a stop that is already a hook's retry (`stop_hook_active`) is let
through, and at most MAX_BLOCKS stops in a row are blocked; the count lives in
the ledger (a cursor per session) and starts over once the gates are clean.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


MAX_BLOCKS = 3
MAX_NAMED = 10
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # read at most the last 64 MB: the hook has seconds, not minutes
MCP_TOOL = "todoledger__"  # Claude Code names MCP tools mcp__<server>__<tool>
# The event that ends a turn, the writer prefix of a session, and how to say "block".
EVENTS = {"claude-code": "Stop", "codex": "Stop", "gemini": "AfterAgent"}
DECISION = {"claude-code": "block", "codex": "block", "gemini": "deny"}


def applies(agent: str, event: dict[str, Any]) -> bool:
    return EVENTS.get(agent) is not None and event.get("hook_event_name") == EVENTS[agent]


def session_writer(agent: str, event: dict[str, Any]) -> str | None:
    session = event.get("session_id")
    return f"{agent}:{session}" if isinstance(session, str) and session else None


def answer(agent: str, event: dict[str, Any], cwd: str | None) -> str | None:
    """The JSON that blocks the stop, or None to let the agent stop."""
    from todoledger import verification
    from todoledger.hooks import ledger as hook_ledger

    writer = session_writer(agent, event)
    if writer is None or event.get("stop_hook_active") is True:
        return None
    key = f"stop-gate:{writer}"
    # Completions through todoledger's MCP tools carry the MCP server's writer, which
    # names no agent session: the session's own transcript says which items it completed.
    raw = event.get("transcript_path")
    through_mcp = mcp_completions(raw) if isinstance(raw, str) and raw else set()
    with hook_ledger(cwd, create=False) as lg:
        unproven = verification.unproven_by(lg, writer, also=through_mcp)
        blocks = lg.cursors([key]).get(key, (0, None))[0]
        if not unproven:
            if blocks:
                lg.save_cursors({key: (0, None)})
            return None
        if blocks >= MAX_BLOCKS:
            return None
        lg.save_cursors({key: (blocks + 1, None)})
    return json.dumps({"decision": DECISION[agent], "reason": reason(unproven)})


def reason(unproven: list[dict[str, Any]]) -> str:
    from todoledger.core.sanitize import for_terminal as one_line

    lines = ["todoledger: these items are marked completed, but their completion gates do not hold:"]
    for entry in unproven[:MAX_NAMED]:
        lines.append(f"- {entry['item']} {one_line(entry['content'])} ({entry['state']})")
        for gate in entry["gates"]:
            lines.append(f"    gate {one_line(gate['spec'])}: {one_line(gate['result'])}")
    if len(unproven) > MAX_NAMED:
        lines.append(f"- and {len(unproven) - MAX_NAMED} more")
    lines.append(
        "Make the gates pass and run `todoledger verify ID` (or the plan_verify tool), "
        "or set the items back to in_progress; do not report them done until then."
    )
    return "\n".join(lines)


def mcp_completions(path: str) -> set[str]:
    """Item ids that this session completed through todoledger's MCP tools, as
    its transcript (Claude Code JSONL) records their replies: todowrite's `ids`
    beside their statuses, plan_update's `item`. Unreadable lines are skipped."""
    import os

    calls: dict[str, str] = {}  # tool_use id -> tool
    found: set[str] = set()
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_TRANSCRIPT_BYTES:
                fh.seek(size - MAX_TRANSCRIPT_BYTES)
                fh.readline()  # from the next whole line
            for line in fh:
                if MCP_TOOL.encode() in line or (calls and b"tool_use_id" in line):
                    _take(line, calls, found)
    except OSError:
        return found
    return found


def _take(line: bytes, calls: dict[str, str], found: set[str]) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        return
    message = record.get("message") if isinstance(record, dict) else None
    blocks = message.get("content") if isinstance(message, dict) else None
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and MCP_TOOL in str(block.get("name", "")):
            calls[str(block.get("id"))] = str(block["name"]).rsplit("__", 1)[-1]
        elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
            if block.get("is_error") is True:
                continue
            tool = calls[str(block.get("tool_use_id"))]
            found.update(_completed(tool, _reply(block.get("content"))))


def _reply(content: Any) -> Any:
    text = (
        content
        if isinstance(content, str)
        else "".join(b.get("text", "") for b in content if isinstance(b, dict))
        if isinstance(content, list)
        else ""
    )
    try:
        return json.loads(text)
    except ValueError:
        return None


def _completed(tool: str, reply: Any) -> list[str]:
    if not isinstance(reply, dict):
        return []
    if tool == "plan_update":
        item = reply.get("item")
        if isinstance(item, dict) and item.get("status") == "completed" and isinstance(item.get("id"), str):
            return [item["id"]]
        return []
    if tool == "todowrite":
        ids, todos = reply.get("ids"), reply.get("todos")
        if isinstance(ids, list) and isinstance(todos, list) and len(ids) == len(todos):
            return [
                i
                for i, t in zip(ids, todos, strict=True)
                if isinstance(i, str) and isinstance(t, dict) and t.get("status") == "completed"
            ]
    return []
