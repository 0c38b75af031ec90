"""Goal-lock: a harness's own "done" waits for proof, as the Stop gate does.

Installed with the Stop gate (`todoledger install AGENT --gate-stop`):

- Claude Code `TaskCompleted` (a task is being marked completed, by TaskUpdate
  or a teammate's end of turn; input `task_id`, `task_subject`,
  `task_description`): when the task's item in the ledger has gates that are
  not proven, the hook refuses the way Claude Code reads a refusal there:
  exit code 2, the reason on stderr, which goes back to the model and leaves
  the task open (code.claude.com/docs/en/hooks, "TaskCompleted").
- Claude Code `/goal`: a session-scoped goal judged by a small model reading
  the transcript, after the Stop hooks. While the transcript's last `/goal`
  command set a condition (not `clear` or its aliases), the Stop gate also
  names every gated item of the plan that is not proven.
- Codex goals: Codex runs PreToolUse hooks only for tools whose handler gives a
  hook payload (shell, apply_patch, MCP tools); its goal tools give none
  (`codex-rs/core/src/tools/registry.rs` `dispatch_any`, `handlers/goal.rs`),
  so no hook can deny `update_goal`. The Stop hook sees the completion in the
  rollout: once the session's goal is completed, the Stop gate names every
  gated item of the plan that is not proven. `doctor` says that the call
  itself is not gated.
- Plan mode: an item approved in plan mode (writer `...:plan-mode`) whose
  content, children, dependencies or gates changed since is no longer what the
  person approved: it needs a person's approval again (`todoledger approve ID`).
  `plan_mode_changes` says which; the denials above name them.

Every denial names the items and what would prove them. It never loops:
MAX_BLOCKS refusals in a row per session (and task), counted in the ledger's
cursors, then the call goes through; the count starts over once it is clean.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from todoledger.ledger import Ledger

MAX_BLOCKS = 3
MAX_NAMED = 10
# The verification state that proves a gated item; every other state of an item
# with gates (failed, stale, unverified, stand-in, typed, self-checked, cross-checked,
# accepted by a person) does not: the one place to adjust.
PROVEN = frozenset({"verified"})
WHAT_PROVES = {
    "failed": "make its gate pass, then run `todoledger verify {id}` (or the plan_verify tool)",
    "stale": "the work changed since its gate ran: run `todoledger verify {id}` again",
    "unverified": "its gate never ran: run `todoledger verify {id}` (or the plan_verify tool)",
    "never ran": "its gate never ran: run `todoledger verify {id}` (or the plan_verify tool)",
    "self-checked": "its passing checks are an agent's, with no person or token behind them:"
    " a person must approve that check (`todoledger trust`)",
    "self_checked": "its passing checks are an agent's, with no person or token behind them:"
    " a person must approve that check (`todoledger trust`)",
    "cross-checked": "its passing check is another agent's, with no person behind it:"
    " a person must approve that check (`todoledger trust`)",
    "stand-in": "its check ran against a stand-in, which proves nothing: a check on the real thing must pass",
    "typed": "its numbers were typed, not measured: measure them (a sweep run) or ask a person to accept"
    " them (`todoledger accept-metric`)",
    "plan-mode": "approved in plan mode, changed since ({what}): a person must approve it again "
    "(`todoledger approve {id}` in a terminal, or the board)",
}
GOAL_CLEAR = frozenset({"clear", "stop", "off", "reset", "none", "cancel"})
_GOAL_TAG = b"<command-name>/goal</command-name>"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


class Refusal(str):
    """A hook answer that refuses by exit code 2 with the text on stderr."""


def gate(agent: str, event: dict[str, Any], cwd: str | None) -> Refusal | None:
    """The goal-lock's refusal of this event, if any (TaskCompleted only; the Stop
    gate's part is `stop_extra`)."""
    if agent != "claude-code" or event.get("hook_event_name") != "TaskCompleted":
        return None
    return task_completed(event, cwd)


def task_completed(event: dict[str, Any], cwd: str | None) -> Refusal | None:
    from todoledger.defaults import default_plan
    from todoledger.hooks import ledger as hook_ledger

    session = event.get("session_id")
    subject = event.get("task_subject")
    if not isinstance(session, str) or not session or not isinstance(subject, str) or not subject.strip():
        return None
    task = str(event.get("task_id") or subject)
    key = f"goal-lock:claude-code:{session}:{task}"
    plan = default_plan()
    with hook_ledger(cwd, create=False) as lg:
        if not lg.exists:
            return None
        wanted, task_id = normalised(subject), str(event.get("task_id") or "")
        rows = [
            r
            for r in _rows(lg, plan)
            if (r.get("id") == task_id or normalised(str(r.get("content") or "")) == wanted)
            and r.get("status") not in ("cancelled", "dropped")
        ]
        if not rows:
            return None
        row = max(rows, key=lambda r: str(r.get("updated_at") or ""))
        unproven = unproven_items(lg, plan, [row])
        blocks = lg.cursors([key]).get(key, (0, None))[0]
        if not unproven:
            if blocks:
                lg.save_cursors({key: (0, None)})
            return None
        if blocks >= MAX_BLOCKS:
            return None
        lg.save_cursors({key: (blocks + 1, None)})
    head = f"todoledger: task {subject.strip()!r} may not be marked completed: its gates do not hold."
    return Refusal(reason(unproven, head))


def stop_extra(agent: str, event: dict[str, Any], lg: Ledger) -> list[dict[str, Any]]:
    """What the Stop gate names besides the session's own completions: the
    plan's gated items not proven, while the session's harness goal is active
    (Claude Code `/goal`) or was declared complete (a Codex goal)."""
    from todoledger.defaults import default_plan

    if agent == "claude-code":
        raw = event.get("transcript_path")
        if not (isinstance(raw, str) and raw and claude_goal_active(raw)):
            return []
    elif agent != "codex":
        return []
    plan = default_plan()
    if not lg.exists or not any(p["plan"] == plan for p in lg.plans()):
        return []
    session = event.get("session_id")
    if agent == "codex" and not (
        isinstance(session, str) and session and codex_goal_completed(lg, plan, session)
    ):
        return []
    rows = [r for r in _rows(lg, plan) if r.get("status") not in ("cancelled", "dropped")]
    return unproven_items(lg, plan, rows)


def claude_goal_active(transcript: str) -> bool:
    """Does the session's last `/goal` command set a condition (not clear it)?
    Claude Code keeps the command in the transcript as
    `<command-name>/goal</command-name>` ... `<command-args>ARGS</command-args>`."""
    try:
        if os.path.getsize(transcript) > MAX_TRANSCRIPT_BYTES:
            return False
        with open(transcript, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    at = data.rfind(_GOAL_TAG)
    while at >= 0:
        line_end = data.find(b"\n", at)
        line = data[data.rfind(b"\n", 0, at) + 1 : line_end if line_end >= 0 else len(data)]
        args = _command_args(line)
        if args is not None and args.strip():  # `/goal` alone only shows its status
            return args.strip().split()[0].lower() not in GOAL_CLEAR
        at = data.rfind(_GOAL_TAG, 0, at)
    return False


def _command_args(line: bytes) -> str | None:
    """The `<command-args>` of a transcript line (JSON-escaped or not)."""
    try:
        text = json.dumps(json.loads(line))  # one escaping, whatever the line used
    except ValueError:
        text = line.decode("utf-8", "replace")
    start = text.find("<command-args>")
    end = text.find("</command-args>", start)
    if start < 0 or end < 0:
        return None
    raw = text[start + len("<command-args>") : end]
    try:
        return str(json.loads(f'"{raw}"'))
    except ValueError:
        return raw


def codex_goal_completed(lg: Ledger, plan: str, session: str) -> bool:
    from todoledger.ingest.bridges import GOAL_NOTE

    marker = GOAL_NOTE.format(session=session)
    return any(
        (r.get("notes") or "").startswith(marker) and r.get("status") == "completed" for r in _rows(lg, plan)
    )


def unproven_items(lg: Ledger, plan: str, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Of `rows`, the gated items whose gates do not prove them, and the items
    approved in plan mode that changed since, in the Stop gate's shape:
    {item, content, state, gates: [{spec, result}], proves}."""
    ids = [str(r["id"]) for r in rows]
    if not ids:
        return []
    gates: dict[str, list[Any]] = {}
    wanted = set(ids)
    for c in lg.checks(plan=plan):  # naming items without checks would be refused
        if c.item in wanted and c.role in ("gate", "assumption"):
            gates.setdefault(c.item, []).append(c)
    latest: dict[str, dict[str, Any]] = {}
    if gates:
        for receipt in lg.receipts(plan=plan):
            if receipt["item"] in gates:
                latest[receipt["check"]] = receipt
    changed = plan_mode_changes(lg, plan)
    out: list[dict[str, Any]] = []
    for r in rows:
        item = str(r["id"])
        state = r.get("verification")
        if item in gates and state not in PROVEN:
            runs = [{"spec": g.check.text(), "result": _result(latest.get(g.id))} for g in gates[item]]
            proves = WHAT_PROVES.get(str(state), WHAT_PROVES["unverified"]).format(id=item)
            out.append(
                {
                    "item": item,
                    "content": r.get("content", ""),
                    "state": state,
                    "gates": runs,
                    "proves": proves,
                }
            )
        if item in changed:
            proves = WHAT_PROVES["plan-mode"].format(id=item, what=", ".join(changed[item]))
            out.append(
                {
                    "item": item,
                    "content": r.get("content", ""),
                    "state": "plan-mode approval void",
                    "gates": [],
                    "proves": proves,
                }
            )
    return out


def _result(receipt: Mapping[str, Any] | None) -> str:
    if receipt is None:
        return "never ran"
    last = next(
        (ln.strip() for ln in reversed(str(receipt.get("output") or "").splitlines()) if ln.strip()), ""
    )
    return str(receipt.get("result")) + (f": {last[:200]}" if last else "")


def plan_mode_changes(lg: Ledger, plan: str) -> dict[str, list[str]]:
    """Items approved in plan mode (last written by a `...:plan-mode` writer
    when the plan was approved) whose scope changed since: item -> what
    changed (content, children, dependencies, gates). A person's approval
    (`approve`) after the change clears it."""
    return changed_since_plan_mode(lg.history(plan))


def changed_since_plan_mode(events: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Pure over history events: see `plan_mode_changes`."""
    from todoledger.core.approval import is_person

    approved: set[str] = set()  # items a plan-mode approval covers
    changes: dict[str, list[str]] = {}
    for ev in sorted(events, key=lambda e: int(e.get("seq") or 0)):
        item, name, writer = ev.get("item"), ev.get("field"), str(ev.get("writer") or "")
        new, old = ev.get("new"), ev.get("old")
        if name == "plan_approved" and is_person(writer):
            changes.clear()  # a person approved the whole plan as it stands
            continue
        if not item:
            continue
        item = str(item)
        if writer.endswith(":plan-mode"):
            approved.add(item)
            changes.pop(item, None)  # approved again in plan mode, as it is now
            continue
        if name == "approved" and is_person(writer):
            changes.pop(item, None)
            continue
        touched: list[tuple[str, str]] = []
        if name == "content":
            touched.append((item, "content"))
        elif name == "depends_on":
            touched.append((item, "dependencies"))
        elif name == "check":
            touched.append((item, "gates"))
        elif name == "created" and isinstance(new, dict) and new.get("parent"):
            touched.append((str(new["parent"]), "children"))
        elif name == "parent":
            touched += [(str(p), "children") for p in (old, new) if p]
        for target, what in touched:
            if target in approved and what not in changes.setdefault(target, []):
                changes[target].append(what)
    return {i: w for i, w in changes.items() if w}


def reason(unproven: list[dict[str, Any]], head: str) -> str:
    from todoledger.core.sanitize import for_terminal as one_line

    lines = [head]
    for entry in unproven[:MAX_NAMED]:
        lines.append(f"- {entry['item']} {one_line(str(entry['content']))} ({entry['state']})")
        for g in entry["gates"]:
            lines.append(f"    gate {one_line(g['spec'])}: {one_line(g['result'])}")
        lines.append(f"    to prove it: {entry['proves']}")
    if len(unproven) > MAX_NAMED:
        lines.append(f"- and {len(unproven) - MAX_NAMED} more")
    lines.append("Do not report it done until then.")
    return "\n".join(lines)


def normalised(subject: str) -> str:
    """A task's subject as the goal lock compares it: Unicode-normalised, case
    folded, runs of spaces as one, without the punctuation around it. A subject
    reworded only in those ways is the same task (a renamed subject would
    otherwise slip past its gate)."""
    import re
    import unicodedata

    text = unicodedata.normalize("NFKC", subject).casefold()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .,;:!?-–—'\"`*_()[]")


def _rows(lg: Ledger, plan: str) -> list[dict[str, Any]]:
    """The plan's items as `show` gives them, with their verification."""
    return list(lg.show(plan).get("items", []))
