"""Plans that are not todo lists: Claude Code's plan mode and Codex goals.

- `ExitPlanMode {plan}` (Claude Code; the call succeeds only when the user
  approves the plan): the plan's Markdown becomes items under one item for
  the plan. Checklist lines, or list lines where there is no checklist,
  become items; headings become parent items. The plan item's notes record
  the approval with the whole plan text it approved.
- `create_goal {objective, token_budget?}` / `update_goal {status:
  complete|blocked}` (Codex, `codex-rs/core/src/tools/handlers/goal_spec.rs`):
  a goal item whose notes carry its completion condition; `complete` marks
  it completed, `blocked` is noted on it and leaves it open.

Both read the same shapes in transcripts (ingest) and in live hooks, and
both are idempotent: the same call seen again changes nothing. They write
as the agent's writer with a suffix (`:plan-mode`, `:goal`): the agent's own
todo list is another writer, so a TodoWrite that does not repeat the
approved plan does not drop it.
"""

from __future__ import annotations

import json
from typing import Any

from todoledger.core.mdtasks import has_checklist, parse
from todoledger.core.model import MAX_NOTES_CHARS, LedgerError
from todoledger.ingest.calls import TodoCall
from todoledger.ingest.markdown import apply
from todoledger.ledger import Ledger

PLAN_MODE = "claude-plan"
CODEX_GOAL = "codex-goal"
DIALECTS = (PLAN_MODE, CODEX_GOAL)
PLAN_ITEM = "Plan approved in Claude Code plan mode"
GOAL_NOTE = "Codex goal of session {session}."


def plan_text(payload: Any) -> str | None:
    """The plan's Markdown from an ExitPlanMode tool_use block, tool_input or tool_response."""
    if not isinstance(payload, dict):
        return None
    for source in (payload.get("input"), payload):
        if isinstance(source, dict) and isinstance(source.get("plan"), str) and source["plan"].strip():
            return str(source["plan"])
    return None


def approved_plan(
    ledger: Ledger, text: str, *, plan: str, writer: str, at: str | None = None
) -> dict[str, Any]:
    """Record a plan approved in plan mode as a revision of `plan`."""
    writer = f"{writer}:plan-mode"
    items = parse(text, plain_lists=not has_checklist(text))
    title = PLAN_ITEM
    top = [i for i in items if i.parent is None]
    if len(top) == 1 and top[0] is items[0] and items[0].heading and text.lstrip().startswith("#"):
        title = items[0].content  # a title heading over the whole plan names it: it is the plan's item
        items = [_reparent(i) for i in items[1:]]
    when = f" at {at}" if at else ""
    notes = f"Approved by the user in Claude Code plan mode{when} ({writer}). The plan as approved:\n\n{text}"
    notes = notes[:MAX_NOTES_CHARS]
    with ledger.batch():
        root = next(
            (r for r in ledger.items(plan) if r["content"] == title and not r.get("parent")),
            None,
        )
        if root is None:
            root = ledger.add(title, plan=plan, writer=writer, notes=notes, at=at)
        elif root.get("notes") != notes:
            root = ledger.update(root["id"], plan=plan, writer=writer, notes=notes, kind="approve", at=at)
        result = apply(ledger, items, plan=plan, writer=writer, under=root["id"], at=at)
    return {**result, "root": root["id"]}


def codex_goal(
    ledger: Ledger, call: dict[str, Any], *, plan: str, writer: str, session: str, at: str | None = None
) -> dict[str, Any] | None:
    """Apply one create_goal/update_goal function call (a rollout's payload)."""
    writer = f"{writer}:goal"
    name = call.get("name")
    raw = call.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise LedgerError(f"{name}: arguments are not JSON") from None
    if not isinstance(args, dict):
        raise LedgerError(f"{name}: arguments are not an object")
    marker = GOAL_NOTE.format(session=session)
    with ledger.batch():
        current: dict[str, Any] | None = next(
            (r for r in reversed(ledger.items(plan)) if (r.get("notes") or "").startswith(marker)), None
        )
        if name == "create_goal":
            objective = args.get("objective")
            if not isinstance(objective, str) or not objective.strip():
                raise LedgerError("create_goal: objective must be a non-empty string")
            budget = args.get("token_budget")
            notes = (
                f"{marker} Done when: the objective is achieved and no required work remains "
                "(Codex's completion audit; it marks the goal with update_goal status=complete)."
                + (f" Token budget: {budget}." if isinstance(budget, int) else "")
            )
            if current is not None and current["content"] == objective.strip():
                return current
            return ledger.add(
                objective.strip(), plan=plan, writer=writer, status="in_progress", notes=notes, at=at
            )
        if name != "update_goal":
            return None
        status = args.get("status")
        if status not in ("complete", "blocked"):
            raise LedgerError("update_goal: status must be complete or blocked")
        if current is None:
            raise LedgerError("update_goal: no goal of this session is in the plan")
        if status == "complete":
            if current["status"] == "completed":
                return current
            evidence = "Codex update_goal status=complete (the agent's own completion audit)"
            return ledger.update(
                current["id"],
                plan=plan,
                writer=writer,
                status="completed",
                evidence=evidence,
                kind="done",
                at=at,
            )
        blocked = f"{current['notes']}\nBlocked: Codex update_goal status=blocked" + (
            f" at {at}." if at else "."
        )
        if (current.get("notes") or "").endswith(blocked.rsplit("\n", 1)[1]):
            return current
        return ledger.update(current["id"], plan=plan, writer=writer, notes=blocked[:MAX_NOTES_CHARS], at=at)


def apply_call(ledger: Ledger, call: TodoCall, plan: str, at: str) -> bool:
    """A transcript's plan-mode or goal call, into `plan`; False if it changed nothing."""
    before = _revision(ledger, plan)
    if call.dialect == PLAN_MODE:
        text = plan_text(call.payload) or plan_text(call.response)
        if text is None:
            raise LedgerError("ExitPlanMode: no plan text in the call")
        approved_plan(ledger, text, plan=plan, writer=call.writer, at=at)
    elif call.dialect == CODEX_GOAL:
        codex_goal(ledger, call.payload, plan=plan, writer=call.writer, session=call.session, at=at)
    return _revision(ledger, plan) != before


def _revision(ledger: Ledger, plan: str) -> int | None:
    return next((int(p["revision"]) for p in ledger.plans() if p["plan"] == plan), None)


def _reparent(item: Any) -> Any:
    """An item of a plan whose top heading became the plan's item: one level up."""
    item.parent = None if item.parent in (None, 0) else item.parent - 1
    item.children = [c - 1 for c in item.children]
    return item
