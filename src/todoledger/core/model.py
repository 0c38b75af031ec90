"""The ledger's vocabulary: items, incoming list entries, events, findings.

Pure data, no I/O. Every other layer speaks in these types.
"""

from __future__ import annotations

from todoledger.core.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Level = Literal["error", "warning"]

# The statuses a writer sets (an agent's list, `update`, the board).
STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed", "cancelled")
# An item left out of a whole list: the ledger's own status, which nobody sets.
# Closed like a cancel, but no decision about the work: listed again, it is revived.
DROPPED = "dropped"
# Every status an item may have, in the order counts are shown.
ITEM_STATUSES: tuple[str, ...] = (*STATUSES, DROPPED)
PRIORITIES: tuple[str, ...] = ("high", "medium", "low")
OPEN_STATUSES: frozenset[str] = frozenset({"pending", "in_progress"})
# Closed without being done: an explicit cancel, or a drop.
UNDONE_STATUSES: frozenset[str] = frozenset({"cancelled", DROPPED})
# The verification of a completed item without checks: its writer says so (`core.verification`).
REPORTED = "reported"
# A completed item whose gate failed (or never ran): what its writer said, never counted as completed.
CLAIMED_FAILING = "claimed completed, gate failing"
CLAIMED_UNRUN = "claimed completed, gate not run"
PRIORITY_RANK: dict[str, int] = {"high": 0, "medium": 1, "low": 2}
DEFAULT_PRIORITY = "medium"
DEFAULT_PLAN = "main"

# Fields of an item that events may set; replaying events over these rebuilds the state.
STATE_FIELDS: tuple[str, ...] = (
    "content",
    "status",
    "priority",
    "active_form",
    "parent",
    "position",
    "depends_on",
    "evidence",
    "reason",
    "notes",
    # The board: how long it should take, what it holds exclusively,
    # whether a person must approve it before an agent may start it.
    "estimate",
    "uses",
    "needs_approval",
)
# Pseudo-fields of events: `created`/`removed` bring an item into or out of
# existence; the rest annotate the story without changing state.
CREATED = "created"
REMOVED = "removed"
# `approved`: a person approved an item as it then was (new: the approved
# fields); `plan_approved` (no item): the plan as it then was (new: its snapshot).
APPROVED = "approved"
PLAN_APPROVED = "plan_approved"
ANNOTATIONS: frozenset[str] = frozenset(
    {"conflict", "lint", "dropped", "reordered", APPROVED, PLAN_APPROVED}
    # checks: a check added/removed, a receipt of a run, a number recorded,
    # an approval of a check's text, a gate or prerequisite overridden by `--force`
    | {"check", "receipt", "metric", "trust", "forced"}
    # an agent cancelled (with its reason) or dropped an item a person gated or approved
    | {"held_cancel"}
    # leases: an item given to a writer for a while, and taken back
    | {"claimed", "released"}
    # a person's signature over the op's person-only action (ledger/signed.py)
    | {"signed"}
    # an MCP task's transition (no item: the plan's story), ledger/tasks.py
    | {"task"}
)
# Leases: how long a claim holds an item unless the plan or the claim says otherwise.
DEFAULT_LEASE_SECONDS = 30 * 60
MAX_LEASE_SECONDS = 7 * 24 * 3600

# Input limits: a clear refusal beats a hang or a bloated ledger.
MAX_PAYLOAD_BYTES = 2 * 1024 * 1024
MAX_ITEMS_PER_WRITE = 2_000
MAX_CONTENT_CHARS = 4_000
MAX_NOTES_CHARS = 64_000


class LedgerError(Exception):
    """A refusal with one clear sentence for the user; never a traceback."""


class LimitError(LedgerError):
    pass


class CycleError(LedgerError):
    pass


class BusyError(LedgerError):
    """Another process held the ledger longer than this caller may wait."""


class UnavailableError(LedgerError):
    """The ledger's server could not be reached or the connection to it was
    lost (an outage, a restart, a timeout): the write may succeed later, so a
    hook keeps its event in the spool. Never a refusal by rule."""


@dataclass(frozen=True)
class Finding:
    """One lint result: where in the payload, what is wrong, how bad."""

    level: Level
    where: str
    code: str
    message: str
    item: str | None = None  # the ledger item it concerns, once the payload is matched

    def line(self) -> str:
        return f"{self.level}: {self.where}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        out = {"level": self.level, "where": self.where, "code": self.code, "message": self.message}
        if self.item is not None:
            out["item"] = self.item
        return out


class LintError(LedgerError):
    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        errors = [f for f in findings if f.level == "error"]
        first = errors[0] if errors else findings[0]
        more = f" (and {len(errors) - 1} more: `todoledger lint` lists them)" if len(errors) > 1 else ""
        super().__init__(f"rejected: {first.where}: {first.message}{more}")


@dataclass
class Incoming:
    """One entry of an agent's list, normalised from its dialect.

    `ext_id` is the agent's own id (opencode/old Claude `id`, Claude Tasks
    `taskId`); it is scoped to the writer. `None` fields mean "not said".
    """

    content: str | None
    status: str | None = None
    priority: str | None = None
    active_form: str | None = None
    ext_id: str | None = None
    notes: str | None = None
    reason: str | None = None
    blocked_by: list[str] = field(default_factory=list)  # ext ids or ledger ids
    blocks: list[str] = field(default_factory=list)
    where: str = ""  # position in the payload, for messages


@dataclass
class ParsedWrite:
    """A dialect's reading of one payload.

    `whole` lists replace the writer's view (items left out are dropped);
    patches (Claude Tasks) touch only the items they name.
    """

    dialect: str
    items: list[Incoming]
    whole: bool = True
    explanation: str | None = None
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class Event:
    seq: int
    op: int
    plan: str
    item: str | None
    field: str
    old: Any
    new: Any
    writer: str
    at: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "op": self.op,
            "at": self.at,
            "item": self.item,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "writer": self.writer,
        }


@dataclass
class Item:
    id: str
    plan: str
    content: str
    status: str = "pending"
    priority: str = DEFAULT_PRIORITY
    active_form: str | None = None
    parent: str | None = None
    position: float = 0.0
    depends_on: list[str] = field(default_factory=list)
    evidence: str | None = None
    reason: str | None = None
    notes: str | None = None
    estimate: str | None = None
    uses: list[str] = field(default_factory=list)
    needs_approval: bool = False
    created_by: str = ""
    updated_by: str = ""
    created_at: str = ""
    updated_at: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "status": self.status,
            "priority": self.priority,
            "active_form": self.active_form,
            "parent": self.parent,
            "position": self.position,
            "depends_on": list(self.depends_on),
            "evidence": self.evidence,
            "reason": self.reason,
            "notes": self.notes,
            "estimate": self.estimate,
            "uses": list(self.uses),
            "needs_approval": self.needs_approval,
            "created_by": self.created_by,
            "updated_by": self.updated_by,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
