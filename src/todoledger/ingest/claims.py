"""The record of claims: for each completed item how its "done" was proven,
and per writer how often its "done" was proven, by whom, or not at all.

Pure over `Ledger.history(plan)` events and the plan's view, so it reads the
same from a live ledger and from ingested transcripts (where no check ever
ran, every claim is `reported`: the agent's word).

A claim is one status change to `completed`, by its writer. Its outcome:

- `reopened`: the item left `completed` afterwards (whoever moved it);
- `forced`: the completion, or a later change, overrode something (the view's
  forced labels; a status forced past a failing gate, open items, ...);
- `gate removed`: a check of the item was removed (by whom) once it was claimed,
  or it has no check left of those it had;
- otherwise the item's verification state, through `OUTCOME` below: `verified`
  (by whom: the authors, approvers or trusters of the checks that hold),
  `self-checked`, `reported`, `failed`, `stale` or `unchecked` (a gate that
  never ran).

The view gives `verified` only where a check that holds was written,
approved or trusted by a person, or written by a principal a token
authenticates other than the claimant's; `self-checked` where the checks that
hold are agents' with no person or token behind them (`core.approval.proves`).
On ingested transcripts and older ledgers `verified` is refined here by the
same rule from the events (who wrote, trusted or approved each check); where
the view already says `self-checked` the refinement changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from todoledger.core.approval import is_person, proves
from todoledger.core.view import PlanView

# The verification states (the proof helper's names and today's), each to the
# outcome of the claim standing on an item: the one place to adjust.
OUTCOME: dict[str | None, str] = {
    "verified": "verified",
    "self-checked": "self-checked",
    "self_checked": "self-checked",
    "reported": "reported",
    None: "reported",
    "failed": "failed",
    "stale": "stale",
    "unverified": "unchecked",
    "never ran": "unchecked",
    # Checked, but not proven (core/verification.py): only verified counts as proven.
    "cross-checked": "cross-checked",
    "stand-in": "stand-in",
    "typed": "typed",
    "accepted by": "accepted by",
}
UNPROVEN_STATES = frozenset({"failed", "stale", "unchecked"})
# The per-writer table's columns, in order; every claim lands in exactly one.
COLUMNS = (
    "claimed",
    "proven independently",
    "checked, not proven",
    "reported",
    "failed or stale later",
    "reopened",
    "forced",
    "gate removed",
)
_COLUMN_OF = {
    "verified": "proven independently",
    "self-checked": "checked, not proven",
    "cross-checked": "checked, not proven",
    "stand-in": "checked, not proven",
    "typed": "checked, not proven",
    "accepted by": "checked, not proven",
    "reported": "reported",
    "failed": "failed or stale later",
    "stale": "failed or stale later",
    "unchecked": "failed or stale later",
    "reopened": "reopened",
    "forced": "forced",
    "gate removed": "gate removed",
}


@dataclass
class ItemClaim:
    """How one completed item's standing claim was proven."""

    item: str
    content: str
    claimed_by: str
    at: str
    outcome: str  # verified, self-checked, reported, failed, stale, unchecked, forced, gate removed
    by: list[str] = field(default_factory=list)  # who proved it, or who removed the gate
    state: str | None = None  # the view's verification state

    def how(self) -> str:
        """The outcome in words: `verified by cli:ann`, `gate removed by cli:bob`."""
        if self.by and self.outcome in ("verified", "gate removed"):
            return f"{self.outcome} by {', '.join(self.by)}"
        return self.outcome

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "content": self.content,
            "claimed_by": self.claimed_by,
            "at": self.at,
            "outcome": self.outcome,
            "by": list(self.by),
            "state": self.state,
            "how": self.how(),
        }


@dataclass
class Claims:
    items: list[ItemClaim]
    writers: dict[str, dict[str, int]]  # writer -> column -> count

    def rows(self) -> list[tuple[str, ...]]:
        """The per-writer table as text cells: writer, then COLUMNS."""
        return [(w, *(str(c[k]) for k in COLUMNS)) for w, c in self.writers.items()]

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": [c.as_dict() for c in self.items],
            "writers": [{"writer": w, **c} for w, c in self.writers.items()],
        }


@dataclass
class _Check:
    writer: str
    removed_by: str | None = None
    removed_at: int = 0  # the event's seq
    approvers: list[str] = field(default_factory=list)  # people who trusted or approved it
    result: str | None = None  # its latest receipt


def analyze(view: PlanView, events: Sequence[Mapping[str, Any]]) -> Claims:
    checks: dict[str, _Check] = {}
    of_item: dict[str, list[str]] = {}
    claims: dict[str, list[dict[str, Any]]] = {}  # item -> its claims, oldest first
    forced_ops: dict[str, set[int]] = {}
    for ev in sorted(events, key=lambda e: int(e.get("seq") or 0)):
        item, name, new, old = ev.get("item"), ev.get("field"), ev.get("new"), ev.get("old")
        if not item:
            continue
        writer, seq = str(ev.get("writer") or ""), int(ev.get("seq") or 0)
        if name == "check" and isinstance(new, Mapping) and new.get("id"):
            if new.get("role", "gate") in ("gate", "assumption"):
                checks[str(new["id"])] = _Check(writer)
                of_item.setdefault(str(item), []).append(str(new["id"]))
        elif name == "check" and new is None and isinstance(old, Mapping) and str(old.get("id")) in checks:
            c = checks[str(old["id"])]
            c.removed_by, c.removed_at = writer, seq
        elif name == "receipt" and isinstance(new, Mapping) and str(new.get("check")) in checks:
            checks[str(new["check"])].result = str(new.get("result"))
        elif isinstance(new, Mapping) and str(new.get("id")) in checks and _approves(name):
            if is_person(writer):
                checks[str(new["id"])].approvers.append(writer)
        elif name == "forced":
            forced_ops.setdefault(str(item), set()).add(int(ev.get("op") or 0))
        elif name == "status" or (name == "created" and isinstance(new, Mapping)):
            mine = claims.setdefault(str(item), [])
            if name == "created":  # an item written as completed is claimed as it is created
                new, old = (new or {}).get("status"), None
            if new == "completed":
                # Without a time of its own (store m009) a claim is placed by its source instead.
                when = ev.get("where") if ev.get("untimed") else ev.get("at")
                mine.append({"writer": writer, "at": str(when or ""), "op": ev.get("op"), "seq": seq})
            elif old == "completed" and mine and "reopened" not in mine[-1]:
                mine[-1]["reopened"] = True
    by_id = {it.id: it for it in view.items}
    standing: list[ItemClaim] = []
    writers: dict[str, dict[str, int]] = {}
    for item, mine in claims.items():
        for claim in mine:
            outcome = "reopened"
            if "reopened" not in claim:
                it = by_id.get(item)
                if it is None or it.status != "completed":
                    continue  # removed since: nothing stands to prove
                ic = _standing(
                    it, claim, [checks[c] for c in of_item.get(item, ())], forced_ops.get(item, set())
                )
                standing.append(ic)
                outcome = ic.outcome
            row = writers.setdefault(claim["writer"], dict.fromkeys(COLUMNS, 0))
            row["claimed"] += 1
            row[_COLUMN_OF[outcome]] += 1
    order = {it.id: n for n, it in enumerate(view.items)}
    standing.sort(key=lambda c: order.get(c.item, len(order)))
    return Claims(standing, dict(sorted(writers.items())))


def _approves(name: Any) -> bool:
    """An event that vouches for a check: `trust` today; an approval of it later."""
    text = str(name or "")
    return "trust" in text or "approv" in text


def _standing(it: Any, claim: Mapping[str, Any], checks: Iterable[_Check], forced: set[int]) -> ItemClaim:
    rows = list(checks)
    base = {"item": it.id, "content": it.content, "claimed_by": claim["writer"], "at": claim["at"]}
    state = getattr(it, "verification", None)
    left = any(c.removed_by is None for c in rows)
    removed = [c for c in rows if c.removed_by is not None and (c.removed_at > claim["seq"] or not left)]
    if removed:
        return ItemClaim(
            **base, outcome="gate removed", by=_unique(c.removed_by or "" for c in removed), state=state
        )
    if it.forced or claim.get("op") in forced:
        return ItemClaim(**base, outcome="forced", state=state)
    word = "accepted by" if isinstance(state, str) and state.startswith("accepted by ") else state
    outcome = OUTCOME.get(word, "failed")
    live = [c for c in rows if c.removed_by is None and c.result == "holds"]
    by: list[str] = []
    if outcome == "verified":
        claimant = str(claim["writer"])
        # A person's check proves, whoever claims; an agent's, only when a token shows
        # who wrote it and that is another principal than the claimant's (`proves`).
        independent = [c for c in live if proves(c.writer, claimant) or c.approvers]
        if live and not independent:  # (checks with no event here, a sweep's own, stay as the view says)
            outcome = "self-checked"  # checked by an agent, no person or token behind the check
        by = _unique(
            w for c in independent for w in ([c.writer] if proves(c.writer, claimant) else c.approvers)
        )
    return ItemClaim(**base, outcome=outcome, by=by, state=state)


def _unique(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out
