"""One view of a plan, for every reader: `prime` (and so the SessionStart
hooks), MCP `todoread` and the Markdown resource, the rich and plain
renderers, and the reports.

Pure: it takes the plan as `Ledger.show` returns it (items with the derived
`blocked`/`ready`) and works out, once, what every reader used to work out
on its own: counts by status, what is in progress, what is ready next (by
priority, then plan order), what is blocked, what was completed last, and
each item's depth in the phase tree. Text stays as the agents wrote it;
renderers sanitise it for their medium (`core/sanitize.py`).

Fields that other work will fill (`verification` from checks,
`waits_on_cancelled` from the dependency rules, `estimate`, `uses`,
`needs_approval` from the board) are read when a row carries them, so every
renderer shows them as soon as they exist.

Lean on purpose: `prime` runs on the hook path (no `dataclasses`/`typing`).
"""

from __future__ import annotations

from todoledger.core.model import PRIORITY_RANK, STATUSES
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from todoledger.core.schedule import Schedule

MAX_DEPTH = 32  # phases nest a few levels; a deeper chain is damage, not a plan
VERIFICATIONS = ("unverified", "verified", "stale", "failed")


@dataclass(frozen=True)
class ItemView:
    """One item as every reader shows it."""

    id: str
    content: str
    status: str
    priority: str
    position: float
    parent: str | None
    depth: int  # 0 for a top-level item, 1 for an item of a phase, ...
    depends_on: tuple[str, ...]  # the items it waits for
    blocked: bool
    ready: bool
    active_form: str | None
    evidence: str | None
    reason: str | None
    notes: str | None
    writer: str  # who changed it last
    created_by: str
    created_at: str
    updated_at: str
    # Filled by other work when it lands; empty until then.
    verification: str | None = None  # unverified / verified / stale / failed
    waits_on_cancelled: tuple[str, ...] = ()  # cancelled items it still waits for
    estimate: str | None = None
    uses: tuple[str, ...] = ()
    needs_approval: bool = False

    @property
    def is_open(self) -> bool:
        return self.status in ("pending", "in_progress")

    def flag(self) -> str:
        """What keeps it from being done next, or that it is next: "" when neither."""
        if self.waits_on_cancelled and self.is_open:
            return "waits for a cancelled item"
        if self.ready:
            return "ready"
        if self.blocked and self.status == "pending":
            return "blocked"
        return ""

    def tags(self) -> list[str]:
        """Short labels for the fields that are set beyond the basics, in a fixed order."""
        out: list[str] = []
        if self.waits_on_cancelled and self.is_open:
            out.append(f"waits for a cancelled item ({', '.join(self.waits_on_cancelled)})")
        if self.verification:
            out.append(self.verification)
        if self.needs_approval:
            out.append("needs approval")
        if self.estimate:
            out.append(f"estimate {self.estimate}")
        if self.uses:
            out.append(f"uses {', '.join(self.uses)}")
        return out

    def schedule_row(self) -> dict[str, Any]:
        """What `core.schedule` reads of an item."""
        return {
            "id": self.id,
            "status": self.status,
            "priority": self.priority,
            "position": self.position,
            "parent": self.parent,
            "depends_on": self.depends_on,
            "estimate": self.estimate,
            "uses": self.uses,
            "ready": self.ready,
        }

    def as_dict(self, *names: str) -> dict[str, Any]:
        """`id` and `content`, plus the named fields that are set (compact replies)."""
        out: dict[str, Any] = {"id": self.id, "content": self.content}
        for name in names:
            value = getattr(self, name)
            if value not in (None, (), "", False):
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class PlanView:
    """A whole plan, summarised once."""

    plan: str
    revision: int
    items: tuple[ItemView, ...]  # plan order
    counts: dict[str, int]  # status -> number of items, in the vocabulary's order, only those present
    in_progress: tuple[ItemView, ...]  # plan order
    ready: tuple[ItemView, ...]  # what to do next: by priority, then plan order
    blocked: tuple[ItemView, ...]  # pending items waiting for others (or for a cancelled item)
    recent: tuple[ItemView, ...]  # completed items, last completed first

    def schedule(self) -> Schedule:
        """The critical path of the open work and the sets of ready items that
        can run together (`core.schedule`)."""
        from todoledger.core.schedule import schedule

        return schedule([it.schedule_row() for it in self.items])

    def summary(self) -> str:
        """Like `2 pending, 1 in_progress, 3 completed`; empty for an empty plan."""
        return ", ".join(f"{n} {status}" for status, n in self.counts.items())

    def tree(self) -> list[ItemView]:
        """The items depth first: each phase followed by its own items."""
        known = {it.id for it in self.items}
        children: dict[str | None, list[ItemView]] = {}
        for it in self.items:
            children.setdefault(it.parent if it.parent in known else None, []).append(it)
        out: list[ItemView] = []

        def walk(parent: str | None, depth: int) -> None:
            for it in children.get(parent, ()):
                out.append(it)
                if depth < MAX_DEPTH:
                    walk(it.id, depth + 1)

        walk(None, 0)
        return out


def build(doc: Mapping[str, Any]) -> PlanView:
    """The view of a plan from `Ledger.show`'s document ({"plan", "revision", "items"})."""
    rows: list[Mapping[str, Any]] = list(doc["items"])
    parents = {r["id"]: r.get("parent") for r in rows}

    def depth(item_id: str) -> int:
        n, parent = 0, parents.get(item_id)
        while parent in parents and n < MAX_DEPTH:
            n, parent = n + 1, parents[parent]
        return n

    items = tuple(_item(r, depth(r["id"])) for r in rows)
    present: dict[str, int] = {}
    for it in items:
        present[it.status] = present.get(it.status, 0) + 1
    # A fixed order: a summary that reshuffles when an agent reorders its list is noise.
    counts = {s: present.pop(s) for s in STATUSES if s in present} | present
    ready = sorted(
        (it for it in items if it.ready), key=lambda it: (PRIORITY_RANK.get(it.priority, 1), it.position)
    )
    return PlanView(
        plan=doc["plan"],
        revision=doc["revision"],
        items=items,
        counts=counts,
        in_progress=tuple(it for it in items if it.status == "in_progress"),
        ready=tuple(ready),
        blocked=tuple(it for it in items if it.status == "pending" and (it.blocked or it.waits_on_cancelled)),
        recent=tuple(
            sorted(
                (it for it in items if it.status == "completed"), key=lambda it: it.updated_at, reverse=True
            )
        ),
    )


def _item(r: Mapping[str, Any], depth: int) -> ItemView:
    get = r.get
    verification = get("verification")
    waits_on_cancelled = _ids(get("waits_on_cancelled"))
    # Positional, in ItemView's field order: `prime` builds one per item on every session start.
    return ItemView(
        r["id"],
        r["content"],
        r["status"],
        r["priority"],
        get("position", 0.0),
        get("parent"),
        depth,
        _ids(get("depends_on")),
        bool(get("blocked")),
        # ready: never while it waits for a cancelled item, whatever derived it.
        bool(get("ready")) and not waits_on_cancelled,
        get("active_form"),
        get("evidence"),
        get("reason"),
        get("notes"),
        get("updated_by") or "",  # writer
        get("created_by") or "",
        get("created_at") or "",
        get("updated_at") or "",
        verification if verification in VERIFICATIONS else None,
        waits_on_cancelled,
        get("estimate"),
        _ids(get("uses")),
        bool(get("needs_approval")),
    )


def _ids(value: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(value) if value else ()
