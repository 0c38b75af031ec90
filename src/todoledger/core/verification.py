"""Verification derived from receipts: what the ledger may claim about an item.

Pure: the caller supplies the checks, their latest receipts and a way to
tell whether a receipt's working-tree state still holds. Nothing here is
stored, so it can never disagree with the receipts.

- `verified`: every check of the item has a latest receipt that holds and is fresh;
- `stale`: they all hold, but the tree a receipt ran against has changed since;
- `failed`: a check's latest receipt fails or could not run;
- `unverified`: a check never ran (or only untrusted checks exist);
- `reported`: completed with no check at all: the agent's word, nothing more.
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
UNVERIFIED = "unverified"
STALE = "stale"
FAILED = "failed"
RESULTS: tuple[str, ...] = ("holds", "fails", "error")
ROLES: tuple[str, ...] = ("gate", "assumption")  # what people add; `verify` runs these
ALL_ROLES: tuple[str, ...] = (*ROLES, "run")  # "run": a sweep combination's command, run by `sweep run`
MAX_OUTPUT_CHARS = 2_000


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item": self.item,
            "role": self.role,
            "spec": self.check.text(),
            "options": self.check.options(),
            "trusted": self.trusted,
            "created_by": self.created_by,
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

    def as_dict(self) -> dict[str, Any]:
        return {
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
    fresh: Callable[[Receipt], bool],
    status: str,
) -> str | None:
    """The verification of one item from its checks' latest receipts."""
    rows = list(checks)
    if not rows:
        return REPORTED if status == "completed" else None
    receipts = [latest.get(c.id) for c in rows]
    if any(r is not None and r.result != "holds" for r in receipts):
        return FAILED
    if any(r is None for r in receipts):
        return UNVERIFIED
    if not all(fresh(r) for r in receipts if r is not None):
        return STALE
    return VERIFIED


def derive(
    items: Iterable[tuple[str, str]],
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[Receipt], bool],
) -> dict[str, str | None]:
    """Map item id -> verification, for (id, status) pairs."""
    by_item: dict[str, list[CheckRow]] = {}
    for c in checks:
        by_item.setdefault(c.item, []).append(c)
    return {item: item_state(by_item.get(item, ()), latest, fresh, status) for item, status in items}


def gated(verification: Mapping[str, str | None]) -> frozenset[str]:
    """Items that count as unfinished for those waiting on them: checked but not verified.

    `graph.derive(items, gated=...)` and `Ledger.next` use it, so an item that
    waits for a gated item is ready only once that item is verified.
    """
    return frozenset(i for i, v in verification.items() if v not in (None, REPORTED, VERIFIED))
