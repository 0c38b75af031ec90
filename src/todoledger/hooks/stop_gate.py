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

    from todoledger.ledger import Ledger


MAX_BLOCKS = 3
MAX_NAMED = 10
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
    from todoledger.hooks import ledger as hook_ledger
    from todoledger.hooks import mcp_replies

    writer = session_writer(agent, event)
    if writer is None or event.get("stop_hook_active") is True:
        return None
    key = f"stop-gate:{writer}"
    # Completions through todoledger's MCP tools carry the MCP server's writer, which
    # names no agent session: the session's own transcript says which items it completed.
    raw = event.get("transcript_path")
    through_mcp = mcp_replies.completions(agent, raw) if isinstance(raw, str) and raw else set()
    with hook_ledger(cwd, create=False) as lg:
        unproven = lg.unproven_by(writer, also=through_mcp)
        # Completions through the agent's own shell (the CLI route) carry its shell's writer,
        # `agent-shell:<agent>:<session>` (todoledger.identity), with the same session id.
        named = {u["item"] for u in unproven}
        unproven += [u for u in lg.unproven_by(f"agent-shell:{writer}") if u["item"] not in named]
        goal = _goal_lock(agent, event, lg, {u["item"] for u in unproven})
        blocks = lg.cursors([key]).get(key, (0, None))[0]
        if not unproven and not goal:
            if blocks:
                lg.save_cursors({key: (0, None)})
            return None
        if blocks >= MAX_BLOCKS:
            return None
        lg.save_cursors({key: (blocks + 1, None)})
    text = "\n".join([*([reason(unproven)] if unproven else []), *([goal_reason(goal)] if goal else [])])
    return json.dumps({"decision": DECISION[agent], "reason": text})


def _goal_lock(agent: str, event: dict[str, Any], lg: Ledger, named: set[str]) -> list[dict[str, Any]]:
    """While the session's harness goal is active or declared complete, the plan's
    gated items that are not proven (hooks/goal_lock.py)."""
    from todoledger.hooks import goal_lock

    return [u for u in goal_lock.stop_extra(agent, event, lg) if u["item"] not in named]


def goal_reason(goal: list[dict[str, Any]]) -> str:
    from todoledger.hooks import goal_lock

    return goal_lock.reason(
        goal, "todoledger: the session's goal is not done while these items are not proven:"
    )


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
