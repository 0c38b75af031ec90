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

from collections.abc import Sequence

from todoledger.core.model import CLAIMED_FAILING, CLAIMED_UNRUN, DROPPED, ITEM_STATUSES, PRIORITY_RANK
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any

    from todoledger.core.schedule import Schedule

MAX_DEPTH = 32  # phases nest a few levels; a deeper chain is damage, not a plan
# The vocabulary of core/verification.py (PRECEDENCE), weakest first; "accepted by"
# stands for "accepted by <person>". (Spelled out here: `show --json` must not import it.)
VERIFICATIONS = (
    "failed",
    "stale",
    "unverified",
    "reported",
    "stand-in",
    "typed",
    "self-checked",
    "cross-checked",
    "accepted by",
    "verified",
)
# A completion whose gate failed or never ran is counted apart from "completed" (`claimed`).
CLAIMED = {"failed": CLAIMED_FAILING, "unverified": CLAIMED_UNRUN}
# How a state reads where people see it: self-checked says what it lacks.
SHOWN = {
    "self-checked": "self-checked (an agent's check: no person behind it)",
    "cross-checked": "cross-checked (another agent's check: no person behind it)",
    "stand-in": "stand-in (checked against a stand-in: no proof)",
    "typed": "typed (numbers a writer typed, not measured)",
}


def known_state(value: str | None) -> bool:
    """A word of the vocabulary that an item carries (`accepted by <person>` included);
    `reported` is said where a completion is shown, not as a tag of its own."""
    return (
        value is not None
        and value != "reported"
        and (value in VERIFICATIONS or value.startswith("accepted by "))
    )


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
    verification: str | None = None  # unverified / verified / self-checked / stale / failed
    waits_on_cancelled: tuple[str, ...] = ()  # cancelled (or dropped) items it still waits for
    estimate: str | None = None
    uses: tuple[str, ...] = ()
    needs_approval: bool = False
    forced: tuple[str, ...] = ()  # what its status was forced past, as `forced_label` says it
    # Closed while a writer's latest list works on it: "listed as in progress by X, but cancelled by Y".
    contested: tuple[str, ...] = ()
    waits_on_dropped: tuple[str, ...] = ()  # those of waits_on_cancelled that were dropped, not cancelled

    @property
    def is_open(self) -> bool:
        return self.status in ("pending", "in_progress")

    @property
    def claimed(self) -> str | None:
        """For a completion whose gate failed or never ran, how it is counted
        instead of completed (`claimed completed, gate failing`); else None."""
        return CLAIMED.get(self.verification or "") if self.status == "completed" else None

    def flag(self) -> str:
        """What keeps it from being done next, or that it is next: "" when neither."""
        if self.waits_on_cancelled and self.is_open:
            return f"waits for a {self.waits_kind()} item"
        if self.ready:
            return "ready"
        if self.blocked and self.is_open:  # in progress too: started past its prerequisites
            return "blocked"
        return ""

    def waits_kind(self) -> str:
        """What the closed items it waits for are: cancelled, dropped, or some of each."""
        dropped = len(self.waits_on_dropped)
        if not dropped:
            return "cancelled"
        return "dropped" if dropped == len(self.waits_on_cancelled) else "cancelled or dropped"

    def tags(self) -> list[str]:
        """Short labels for the fields that are set beyond the basics, in a fixed order."""
        out: list[str] = list(self.contested)
        if self.waits_on_cancelled and self.is_open:
            out.append(f"waits for a {self.waits_kind()} item ({', '.join(self.waits_on_cancelled)})")
        if self.verification:
            out.append(self.claimed or SHOWN.get(self.verification, self.verification))
        out.extend(self.forced)
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
    items: Items  # plan order
    # status -> number of items, in the vocabulary's order, only those present; a completion
    # whose gate failed (never ran) counts as "claimed completed, gate failing" (", gate not run")
    counts: dict[str, int]
    in_progress: Items  # plan order
    ready: Items  # what to do next: by priority, then plan order
    blocked: Items  # pending items waiting for others (or for a cancelled item)
    recent: Items  # completed items (not those only claimed), last completed first
    claimed: Items = ()  # type: ignore[assignment]  # completed by their writer, gate failing or not run
    dropped: Items = ()  # type: ignore[assignment]  # left out of a list, last dropped first
    contested: Items = ()  # type: ignore[assignment]  # closed while a writer's latest list works on them

    def schedule(self) -> Schedule:
        """The critical path of the open work and the sets of ready items that
        can run together (`core.schedule`)."""
        from todoledger.core.schedule import schedule

        return schedule([it.schedule_row() for it in self.items])

    def summary(self) -> str:
        """Like `2 pending, 1 in_progress, 3 completed`; empty for an empty plan.
        Claimed completions follow after a semicolon: `3 completed; 1 claimed completed, gate failing`."""
        plain = ", ".join(f"{n} {status}" for status, n in self.counts.items() if status not in _CLAIMED_KEYS)
        claims = "; ".join(f"{n} {status}" for status, n in self.counts.items() if status in _CLAIMED_KEYS)
        return "; ".join(part for part in (plain, claims) if part)

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


@dataclass(frozen=True)
class Folded:
    """What a person's view of a plan draws (`fold`): open work first, the rest
    folded into counts. `shown` in plan order: the open items, every completion
    only claimed (its gate failing or never run: folding never hides one), every
    forced item, every closed item a writer's latest list still works on
    (`contested`: folding never hides a disagreement), and the phases they belong
    to, however those stand, so that an item is never shown out of its phase.
    `rest`: the items folded away, in plan order, drawn after `shown` only when a
    person asks for all (`show --all`); `folded` counts them by status
    (cancelled and dropped apart)."""

    shown: tuple[ItemView, ...]
    rest: tuple[ItemView, ...]
    folded: dict[str, int]


def fold(view: PlanView, *, show_all: bool = False) -> Folded:
    """The items a person's view draws; each `ItemView` is made only for a row
    that is drawn, so a plan of mostly finished work costs what its open rows do."""
    items = view.items
    rows = items._rows
    keep: set[str] = set()
    parents: dict[str, str | None] = {r["id"]: r.get("parent") for r in rows}
    for r in rows:
        status = r["status"]
        if (
            status in _OPEN
            or r.get("forced")
            or r.get("contested")
            or (status == "completed" and r.get("verification") in CLAIMED)
        ):
            item_id = r["id"]
            keep.add(item_id)
            parent, n = parents.get(item_id), 0
            while parent is not None and parent in parents and parent not in keep and n < MAX_DEPTH:
                keep.add(parent)  # its phases, as context
                parent, n = parents[parent], n + 1
    make = items._make
    shown = tuple(make(r) for r in rows if r["id"] in keep)
    rest_rows = [r for r in rows if r["id"] not in keep]
    folded: dict[str, int] = {}
    for r in rest_rows:
        folded[r["status"]] = folded.get(r["status"], 0) + 1
    rest = tuple(map(make, rest_rows)) if show_all else ()
    return Folded(shown, rest, {s: folded[s] for s in ITEM_STATUSES if s in folded})


_OPEN = frozenset({"pending", "in_progress"})


class Items(Sequence[ItemView]):
    """Some of a plan's items in a fixed order, each made into its `ItemView`
    when it is first read: `prime` (every session start) shows a dozen items of
    a plan that may hold thousands, and building a view of each cost more than
    the rest of it. Read as a tuple (iterate, index, slice, len); one item is
    the same `ItemView` wherever it is read from."""

    __slots__ = ("_make", "_rows")

    def __init__(self, rows: list[Mapping[str, Any]], make: Callable[[Mapping[str, Any]], ItemView]) -> None:
        self._rows, self._make = rows, make

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:  # an item, or a tuple of them for a slice
        if isinstance(index, slice):
            return tuple(map(self._make, self._rows[index]))
        return self._make(self._rows[index])

    def __iter__(self) -> Iterator[ItemView]:
        return map(self._make, self._rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Items | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Items({list(self)!r})"


def build(doc: Mapping[str, Any]) -> PlanView:
    """The view of a plan from `Ledger.show`'s document ({"plan", "revision", "items"})."""
    rows: list[Mapping[str, Any]] = list(doc["items"])
    parents: dict[str, str | None] = {}
    made: dict[int, ItemView] = {}
    dropped_ids: set[str] = set()

    def make(r: Mapping[str, Any]) -> ItemView:
        key = id(r)
        view = made.get(key)
        if view is None:
            n, parent = 0, parents.get(r["id"])
            while parent in parents and n < MAX_DEPTH:
                n, parent = n + 1, parents[parent]
            view = made[key] = _item(r, n, dropped_ids)
        return view

    # One pass sorts every row into the lists below: a pass per list walked the rows (each a
    # dict of some twenty fields) eight times, and a plan of 100,000 items does not fit in the
    # CPU's caches, so each pass cost more per row as the plan grew (bench/bench_report.py).
    present: dict[str, int] = {}
    in_progress: list[Mapping[str, Any]] = []
    ready: list[Mapping[str, Any]] = []
    blocked: list[Mapping[str, Any]] = []
    recent: list[Mapping[str, Any]] = []
    claimed: list[Mapping[str, Any]] = []
    dropped: list[Mapping[str, Any]] = []
    contested: list[Mapping[str, Any]] = []
    for r in rows:
        get, key = r.get, r["status"]
        parents[r["id"]] = get("parent")
        waits = get("waits_on_cancelled")
        if key == "completed":
            if get("verification") in CLAIMED:
                key = CLAIMED[r["verification"]]
                claimed.append(r)
            else:
                recent.append(r)
        elif key == "in_progress":
            in_progress.append(r)
        elif key == "pending":
            if get("blocked") or waits:
                blocked.append(r)
        elif key == DROPPED:
            dropped.append(r)
            dropped_ids.add(r["id"])
        present[key] = present.get(key, 0) + 1
        # As `_item` reads them: ready, never while it waits for a cancelled item.
        if get("ready") and not waits:
            ready.append(r)
        if get("contested"):
            contested.append(r)
    # A fixed order: a summary that reshuffles when an agent reorders its list is noise.
    counts = {s: present.pop(s) for s in (*ITEM_STATUSES, *_CLAIMED_KEYS) if s in present} | present
    ready.sort(key=lambda r: (PRIORITY_RANK.get(r["priority"], 1), r.get("position", 0.0)))
    recent.sort(key=lambda r: r.get("updated_at") or "", reverse=True)
    return PlanView(
        plan=doc["plan"],
        revision=doc["revision"],
        items=Items(rows, make),
        counts=counts,
        in_progress=Items(in_progress, make),
        ready=Items(ready, make),
        blocked=Items(blocked, make),
        recent=Items(recent, make),
        claimed=Items(claimed, make),
        dropped=Items(_by_drop(dropped), make),
        contested=Items(contested, make),
    )


_CLAIMED_KEYS = (CLAIMED_FAILING, CLAIMED_UNRUN)


def recounted(view: PlanView, totals: Mapping[str, int]) -> PlanView:
    """`view`, built from some of the plan's rows, with the whole plan's counts:
    `totals` by stored status, less the completions only claimed (every completed
    item with a check is among the rows, so those are counted there)."""
    present = {s: n for s, n in totals.items() if n}
    for key in _CLAIMED_KEYS:
        if view.counts.get(key):
            present[key] = view.counts[key]
            present["completed"] = present.get("completed", 0) - view.counts[key]
    if not present.get("completed"):
        present.pop("completed", None)
    counts = {s: present.pop(s) for s in (*ITEM_STATUSES, *_CLAIMED_KEYS) if s in present} | present
    return PlanView(
        plan=view.plan,
        revision=view.revision,
        items=view.items,
        counts=counts,
        in_progress=view.in_progress,
        ready=view.ready,
        blocked=view.blocked,
        recent=view.recent,
        claimed=view.claimed,
        dropped=view.dropped,
        contested=view.contested,
    )


def _by_drop(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Dropped items, the latest drop first (its revision, as its reason says it),
    in plan order within one drop."""
    from todoledger.core.merge import drop_revision

    return sorted(rows, key=lambda r: (-drop_revision(r.get("reason")), r.get("position", 0.0)))


def _item(r: Mapping[str, Any], depth: int, dropped: set[str] | frozenset[str] = frozenset()) -> ItemView:
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
        verification if known_state(verification) else None,
        waits_on_cancelled,
        get("estimate"),
        _ids(get("uses")),
        bool(get("needs_approval")),
        tuple(forced_label(f) for f in get("forced") or ()),
        tuple(contest_label(c, r["status"]) for c in get("contested") or ()),
        tuple(b for b in waits_on_cancelled if b in dropped),
    )


def contest_label(contest: Mapping[str, str], status: str) -> str:
    """`listed as in progress by X, but cancelled by Y`."""
    listed = str(contest.get("listed", "")).replace("_", " ")
    by = f" by {contest['closed_by']}" if contest.get("closed_by") else ""
    return f"listed as {listed} by {contest.get('writer', '')}, but {status}{by}"


FORCED_PAST = {
    "prerequisites": "forced past open prerequisites",
    "open sub-items": "forced past open sub-items",
    "gates": "forced past a failing gate",
    "check removal": "forced: the check it had not passed was removed",
    "lease": "forced past another writer's lease",
}


def forced_label(record: Any) -> str:
    """A forced change as a tag: what it overrode. Its reason and the rest stay
    in the item's JSON and its history."""
    past = record.get("past") if isinstance(record, dict) else None
    return FORCED_PAST.get(str(past), "forced")


def _ids(value: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(value) if value else ()
