"""What the panel should show for a plan: one row per open item (up to 200), the
20 most recently completed, and one row "… N more: todoledger show" for the rest.

Pure: the plan as `Ledger.show` gives it in, rows out, rendered as Claude Code
writes its own task files. A row says `completed` only when the ledger counts
the item completed: one whose gate fails, never ran or proves nothing yet shows
`in_progress`, its state in the subject ("(gate failing)", "(gate not run)",
"(not verified: typed)"...). Cancelled and dropped items have no row.
"""

from __future__ import annotations

from todoledger.core.jsontext import indented
from todoledger.core.model import OPEN_STATUSES
from todoledger.core.record import dataclass, field
from todoledger.core.sanitize import for_terminal

# Not `json`, `dataclasses` or `typing`: the Claude Code hook
# loads this module on each call that syncs the panel (bench/bench_hooks.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_OPEN = 200
MAX_DONE = 20
MORE = "+more"  # the key of the "… N more" row (no item has it: ids are letters and digits)
COUNTED = (None, "reported", "verified")  # verification states the ledger counts as done


@dataclass
class Want:
    """One row, before it has a row id."""

    key: str  # the item's id, or MORE
    subject: str
    description: str
    status: str
    active_form: str | None = None
    blockers: list[str] = field(default_factory=list)  # keys of open rows this one waits for

    @property
    def open(self) -> bool:
        return self.status != "completed"


def build(shown: dict[str, Any], leases: list[dict[str, Any]] | None = None) -> list[Want]:
    """The rows for `shown` (`Ledger.show`), in plan order, completed ones last."""
    plan = str(shown["plan"])
    holders = {str(lease["item"]): str(lease["holder"]) for lease in leases or []}
    items = list(shown["items"])
    open_items = [it for it in items if it["status"] in OPEN_STATUSES or _unproven(it)]
    done = [it for it in items if it["status"] == "completed" and not _unproven(it)]
    done.sort(key=lambda it: str(it.get("updated_at") or ""), reverse=True)
    shown_open, shown_done = open_items[:MAX_OPEN], done[:MAX_DONE]
    rest = len(open_items) - len(shown_open) + len(done) - len(shown_done)
    keys = {str(it["id"]) for it in shown_open}
    wants = [_want(it, plan, holders, keys) for it in shown_open + shown_done]
    if rest > 0:
        wants.append(Want(MORE, f"… {rest} more: todoledger show", f"plan {plan}", "pending"))
    return wants


def _unproven(item: dict[str, Any]) -> bool:
    return item["status"] == "completed" and item.get("verification") not in COUNTED


def _why_open(state: str | None) -> str:
    """The words a completed-but-unproven row carries: what its verification is, never
    "failing" for a gate that did not fail (a typed number, a stand-in, a stale receipt)."""
    if state == "failed":
        return "(gate failing)"
    if state == "unverified":
        return "(gate not run)"
    return f"(not verified: {state})"


def _want(item: dict[str, Any], plan: str, holders: dict[str, str], open_keys: set[str]) -> Want:
    item_id = str(item["id"])
    subject = for_terminal(item["content"])
    status = str(item["status"])
    if _unproven(item):
        status, subject = "in_progress", f"{subject} {_why_open(item.get('verification'))}"
    parts = [for_terminal(item["notes"], newlines=True)] if item.get("notes") else []
    if item_id in holders:
        parts.append(f"leased by {for_terminal(holders[item_id])}")
    parts.append(f"todoledger {item_id} · plan {for_terminal(plan)}")
    active = item.get("active_form")
    return Want(
        item_id,
        subject,
        "\n".join(parts),
        status,
        for_terminal(active) if active else None,
        [str(b) for b in item.get("depends_on") or [] if str(b) in open_keys and str(b) != item_id],
    )


def render(
    want: Want, row_id: str, rows: dict[str, str], blocks: list[str], plan: str, revision: int
) -> bytes:
    """The task file, as Claude Code writes one (JSON, two-space indent); `rows`:
    key -> row id of every row written with this one."""
    task: dict[str, Any] = {"id": row_id, "subject": want.subject, "description": want.description}
    if want.active_form:
        task["activeForm"] = want.active_form
    task["status"] = want.status
    task["blocks"] = blocks
    task["blockedBy"] = [rows[k] for k in want.blockers if k in rows]
    if want.key != MORE:
        task["metadata"] = {"todoledger": {"plan": plan, "item": want.key, "revision": revision}}
    return indented(task).encode("utf-8")  # json.dumps(task, indent=2, ensure_ascii=False), without json


def blocks_of(wants: list[Want], rows: dict[str, str]) -> dict[str, list[str]]:
    """Per key, the row ids of the open rows that wait for it."""
    out: dict[str, list[str]] = {}
    for want in wants:
        for blocker in want.blockers:
            if blocker in rows and want.key in rows:
                out.setdefault(blocker, []).append(rows[want.key])
    return out
