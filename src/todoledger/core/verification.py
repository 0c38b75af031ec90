"""Verification derived from receipts: what the ledger may claim about an item.

Pure: the caller supplies the checks, their latest receipts and a way to
tell whether a receipt's working-tree state still holds. Nothing here is
stored, so it can never disagree with the receipts.

Who proved it matters as much as what ran. A check's author has a principal
(`core.approval.principal`: a person, or an agent kind across its routes);
the claimant is whoever completed the item. A passing check proves the claim
only when the claimant does not control it: a person wrote, approved or
trusted it, or a principal that a token authenticates (`agent:ci` behind
`serve --tokens`) and that is not the claimant's wrote it. An agent's local
identity (its MCP client name, its shell's marker, a hook) is whatever its
process says, so a check written under one is no one else's.

- `verified`: every check holds and is fresh, and one of them is independent
  of the claimant (see `independent`);
- `self-checked`: they all hold and are fresh, but each was written by an
  agent with no person or token behind it (the claimant's own, or a local
  agent's that the claimant could have written): what waits on it starts once
  a person approves the check (`trust`);
- `stale`: they all hold, but the tree a receipt ran against has changed since,
  or a receipt is older than its check's maximum age (liveness: 10 minutes);
- `failed`: a check's latest receipt fails or could not run;
- `unverified`: a check never ran (or only untrusted checks exist);
- `reported`: completed with no check that can fail: the agent's word, nothing more.

A completed item whose gate fails (or never ran) is "claimed completed, gate
failing": never in the completed count (`claimed_label`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping

from todoledger.core.model import REPORTED as REPORTED  # here, as its vocabulary; in model for `show`
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.checkspec import Check

VERIFIED = "verified"
SELF_CHECKED = "self-checked"
UNVERIFIED = "unverified"
STALE = "stale"
FAILED = "failed"
RESULTS: tuple[str, ...] = ("holds", "fails", "error")
ROLES: tuple[str, ...] = ("gate", "assumption")  # what people add; `verify` runs these
ALL_ROLES: tuple[str, ...] = (*ROLES, "run")  # "run": a sweep combination's command, run by `sweep run`
MAX_OUTPUT_CHARS = 2_000
# How a check arrived: typed by a person (terminal or token), on the board, by an
# agent (`agent:<kind>`, the route of its principal), or in an import.
ROUTES: tuple[str, ...] = ("person", "board", "import")  # and "agent:<kind>"
# A completed item whose gates did not pass: what the agent said, kept apart from "completed".
from todoledger.core.model import CLAIMED_FAILING as CLAIMED_FAILING  # noqa: E402
from todoledger.core.model import CLAIMED_UNRUN as CLAIMED_UNRUN  # noqa: E402

TYPED = "typed"  # a metric's provenance: the writer typed it (done --metric, MCP metrics)
MEASURED = "measured"  # todoledger measured it (a sweep run, a check's output)


def route_of(writer: str, *, imported: bool = False) -> str:
    """How a check written by `writer` arrived: person, board, import, or agent:<kind>."""
    from todoledger.core.approval import principal

    if imported:
        return "import"
    who = principal(writer)
    if who.startswith("person:"):
        return "board" if writer.startswith("web:") or "@web:" in writer else "person"
    return who


def claimed_label(status: str, verification: str | None) -> str | None:
    """For a completed item whose gate failed or never ran: how to count it instead of completed."""
    if status != "completed":
        return None
    if verification == FAILED:
        return CLAIMED_FAILING
    if verification == UNVERIFIED:
        return CLAIMED_UNRUN
    return None


@dataclass(frozen=True)
class CheckRow:
    id: str
    plan: str
    item: str
    role: str
    check: Check
    trusted: bool
    created_by: str
    at: str
    trusted_by: str | None = None  # who approved its current text (a person's `trust`, or its local writer)
    route: str | None = None  # person | board | import | agent:<kind> (None: before routes were kept)
    # Where it runs and with which PATH: its writer's when it was written, whoever runs it
    # (None: a check from before they were kept, which runs where its caller runs).
    cwd: str | None = None
    path: str | None = None

    @property
    def writer(self) -> str:
        return self.created_by

    @property
    def principal(self) -> str:
        from todoledger.core.approval import principal

        return principal(self.created_by)

    @property
    def person_backed(self) -> bool:
        """A person wrote it, or approved its exact current text."""
        from todoledger.core.approval import principal

        if self.route == "import":
            return (
                self.trusted
                and self.trusted_by is not None
                and principal(self.trusted_by).startswith("person:")
            )
        if self.principal.startswith("person:"):
            return True
        return (
            self.trusted and self.trusted_by is not None and principal(self.trusted_by).startswith("person:")
        )

    def independent(self, claimant: str | None) -> bool:
        """Does its passing prove `claimant`'s claim? A person's check (written,
        approved or trusted), or one an authenticated principal other than the
        claimant's wrote (a token's identity, `core.approval.proves`). A local
        agent's check never does, whichever agent claims: its identity is what
        a process said. With no claimant (the item is not completed), only a person's."""
        if self.person_backed:
            return True
        if claimant is None or self.route == "import":
            return False
        from todoledger.core.approval import proves

        return proves(self.created_by, claimant)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item": self.item,
            "role": self.role,
            "spec": self.check.text(),
            "options": self.check.options(),
            "trusted": self.trusted,
            "created_by": self.created_by,
            "principal": self.principal,
            "route": self.route or route_of(self.created_by),
            "runs_in": self.cwd,
            # A person who approved another writer's check (its author's own trust is no approval).
            "approved_by": self.trusted_by
            if self.person_backed and self.trusted_by and self.trusted_by != self.created_by
            else None,
            "at": self.at,
        }


@dataclass(frozen=True)
class Receipt:
    check: str  # the check's id
    item: str
    spec: str  # the canonical text that ran
    result: str  # holds | fails | error
    code: int | None  # exit code or HTTP status
    duration_ms: int
    output: str  # the tail, bounded
    at: str
    by: str
    tree: (
        dict[str, Any] | None
    )  # {"root", "head", "dirty"} or {"watch": {path: hash}}; None: nothing to go stale
    env: dict[str, Any] | None = None  # a sweep run's environment: command, parameters, host, git, GPUs

    def as_dict(self) -> dict[str, Any]:
        extra = {"env": self.env} if self.env is not None else {}
        return extra | {
            "check": self.check,
            "item": self.item,
            "spec": self.spec.split("\n", 1)[0],
            "options": json.loads(self.spec.split("\n", 1)[1]) if "\n" in self.spec else {},
            "result": self.result,
            "code": self.code,
            "duration_ms": self.duration_ms,
            "output": self.output,
            "at": self.at,
            "by": self.by,
            "tree": self.tree,
        }

    def line(self) -> str:
        """One line: the result and the last line of output."""
        last = next((ln.strip() for ln in reversed(self.output.splitlines()) if ln.strip()), "")
        code = f" ({self.code})" if self.code is not None else ""
        return f"{self.result}{code}" + (f": {last[:200]}" if last else "")


def tail(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """The end of an output, without terminal control characters."""
    clean = "".join(ch for ch in text if ch in "\n\t" or (ch >= " " and ch != "\x7f"))
    return clean if len(clean) <= limit else "..." + clean[-(limit - 3) :]


def item_state(
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    status: str,
    claimant: str | None = None,
    proves: Callable[[CheckRow, str | None], bool] | None = None,
) -> str | None:
    """The verification of one item from its checks' latest receipts. `claimant`
    is the writer who completed it; `proves(row, claimant)` whether a passing
    check is independent of the claimant (default `CheckRow.independent`)."""
    from todoledger.core.checkspec import cannot_fail

    rows = list(checks)
    specs = [c.check for c in rows]
    rows = [c for c in rows if cannot_fail(c.check, [s for s in specs if s is not c.check]) is None]
    if not rows:
        return REPORTED if status == "completed" else None
    receipts = [latest.get(c.id) for c in rows]
    if any(r is not None and r.result != "holds" for r in receipts):
        return FAILED
    if any(r is None for r in receipts):
        return UNVERIFIED
    if not all(fresh(c, r) for c, r in zip(rows, receipts, strict=True) if r is not None):
        return STALE
    test = proves or (lambda row, who: row.independent(who))
    return VERIFIED if any(test(c, claimant) for c in rows) else SELF_CHECKED


def derive(
    items: Iterable[tuple[str, str]],
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    claimants: Mapping[str, str] | None = None,
    proves: Callable[[CheckRow, str | None], bool] | None = None,
) -> dict[str, str | None]:
    """Map item id -> verification, for (id, status) pairs; `claimants`: item ->
    the writer who completed it."""
    by_item: dict[str, list[CheckRow]] = {}
    for c in checks:
        by_item.setdefault(c.item, []).append(c)
    who = claimants or {}
    return {
        item: item_state(
            by_item.get(item, ()),
            latest,
            fresh,
            status,
            who.get(item) if status == "completed" else None,
            proves,
        )
        for item, status in items
    }


def gated(verification: Mapping[str, str | None]) -> frozenset[str]:
    """Items that count as unfinished for those waiting on them: checked but not verified.

    `graph.derive(items, gated=...)` and `Ledger.next` use it, so an item that
    waits for a gated item is ready only once that item is verified; a
    self-checked item holds them back until a person approves its check.
    """
    return frozenset(i for i, v in verification.items() if v not in (None, REPORTED, VERIFIED))
