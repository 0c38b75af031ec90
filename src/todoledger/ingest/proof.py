"""What backs each item of a report: its evidence, checks, latest receipts and
metrics, and the findings about a "done" without proof.

`gather` reads through the service; `proof_findings` is pure over the story
and what `gather` returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from todoledger.core.view import PlanView
from todoledger.ingest.findings import Add, Finding, order, short
from todoledger.ingest.story import Story
from todoledger.ledger import Ledger

TITLES = {
    "completed-without-evidence": "completed without evidence",
    "single-run": "completed after a single run",
    "gate-failed-completed": "gate failed but reported completed",
    "gate-never-ran": "gated, reported completed, gate never ran",
    "verification-stale": "verification stale: the work changed after its check ran",
}


@dataclass(slots=True)
class ItemProof:
    evidence: str | None = None
    verification: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)  # the latest of each check
    metrics: dict[str, list[float]] = field(default_factory=dict)
    # Runs the plan asked for: a sweep's --repeat, or the item's own text ("3 runs");
    # ASKED_UNCOUNTED when its text asks for repeats without a number. 0: nobody asked.
    repeats: int = 0
    asked_by: str = ""  # where the plan asks for them, for the finding
    metric_gate: bool = False  # a number gates it: one number tells nothing of its spread

    @property
    def has_proof(self) -> bool:
        return bool(self.evidence or self.metrics or any(r["result"] == "holds" for r in self.receipts))

    def runs(self) -> int:
        return max((len(v) for v in self.metrics.values()), default=0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence,
            "verification": self.verification,
            "checks": self.checks,
            "receipts": self.receipts,
            "metrics": self.metrics,
            "repeats_asked": self.repeats or None,
        }


ASKED_UNCOUNTED = -1
_COUNTED: Any = None
_UNCOUNTED: Any = None


def asked_in_text(text: str) -> int:
    """Repeats an item's own text asks for: `3 runs`, `5 times`, `repeat 3 times`
    give the number; `repeat`, `repeated`, `multiple runs` ASKED_UNCOUNTED; 0 when none."""
    global _COUNTED, _UNCOUNTED
    if _COUNTED is None:
        import re

        _COUNTED = re.compile(
            r"\b(\d+)\s*(?:x\s*)?(?:runs|repeats|repetitions|trials|times)\b", re.IGNORECASE
        )
        _UNCOUNTED = re.compile(
            r"\b(?:repeat|repeated|repeats|repetitions|(?:multiple|several) runs)\b", re.IGNORECASE
        )
    counted = [int(n) for n in _COUNTED.findall(text) if int(n) > 1]
    if counted:
        return max(counted)
    return ASKED_UNCOUNTED if _UNCOUNTED.search(text) else 0


def gather(lg: Ledger, view: PlanView) -> dict[str, ItemProof]:

    plan = view.plan
    # Only the items with something to show get their own record; the rest share one empty
    # record, made at the end: a 100,000-item plan's report held 100,000 empty records,
    # each with its own empty lists, and its memory grew with the plan (bench/bench_report.py).
    out: dict[str, ItemProof] = {}
    for it in view.items:
        if it.evidence is not None or it.verification is not None:
            out[it.id] = ItemProof(evidence=it.evidence, verification=it.verification)
        asked = asked_in_text(" ".join(t for t in (it.content, it.notes) if t))
        if asked:
            proof = out.setdefault(it.id, ItemProof())
            proof.repeats, proof.asked_by = asked, "its text"
    for row in lg.checks(plan=plan):
        proof = out.setdefault(row.item, ItemProof())
        proof.checks.append(
            {"id": row.id, "role": row.role, "spec": row.check.text(), "trusted": row.trusted}
        )
        if row.role == "gate" and row.check.kind == "metric":
            proof.metric_gate = True  # one number tells nothing of its spread
    latest: dict[str, dict[str, Any]] = {}
    for r in lg.receipts(plan=plan):
        latest[r["check"]] = r
    for r in latest.values():
        out.setdefault(r["item"], ItemProof()).receipts.append(
            {
                "check": r["check"],
                "spec": r["spec"],
                "result": r["result"],
                "output": r["output"],
                "at": r["at"],
            }
        )
    for m in lg.metrics(plan=plan):
        out.setdefault(m["item"], ItemProof()).metrics.setdefault(m["name"], []).append(float(m["value"]))
    for item, repeat in lg.sweep_repeats(plan).items():
        proof = out.setdefault(item, ItemProof())
        if repeat > 1 and repeat >= proof.repeats:
            proof.repeats, proof.asked_by = repeat, f"its sweep's --repeat {repeat}"
    for it in view.items:
        out.setdefault(it.id, NOTHING)
    return out


# The record of every item with nothing to show: shared, so never changed once made.
NOTHING = ItemProof()


def proof_findings(story: Story, view: PlanView, proof: dict[str, ItemProof]) -> list[Finding]:
    out: list[Finding] = []

    def add(code: str, message: str, op: int | None, items: list[str], at: str | None = None) -> None:
        call = story.call(op) if op is not None else None
        out.append(
            Finding(code, message, op, at or (call.at if call else ""), call.where if call else "", items)
        )

    completed = [it for it in view.items if it.status == "completed"]
    any_proof = any(p.has_proof or p.checks for p in proof.values())
    bare = [it for it in completed if not proof.get(it.id, ItemProof()).has_proof]
    if bare and not any_proof:
        # A plan that never recorded proof: one finding, not one per item.
        first = _completion(story, bare[0].id)
        add(
            "completed-without-evidence",
            f"no item carries evidence, a check or a number: {len(bare)} completed on the agent's word",
            first,
            [it.id for it in bare],
        )
        bare = []
    for it in bare:
        add(
            "completed-without-evidence",
            f'"{short(it.content)}" has no evidence',
            _completion(story, it.id),
            [it.id],
        )
    for it in completed:
        p = proof.get(it.id)
        if p is not None:
            _item(add, story, it.id, it.content, p)
    out.sort(key=order(story))
    return out


def _item(add: Add, story: Story, item: str, content: str, p: ItemProof) -> None:
    op, label = _completion(story, item), f'"{short(content)}"'
    if (p.repeats or p.metric_gate) and p.runs() <= 1:
        # Only what the record shows: the runs there were, and what the plan asked only where it asked.
        runs = "1 recorded run" if p.runs() == 1 else "no recorded run"
        asked = ""
        if p.repeats > 1:
            asked = f"; {p.repeats} were asked for ({p.asked_by})"
        elif p.repeats == ASKED_UNCOUNTED:
            asked = f"; repeats were asked for ({p.asked_by})"
        add("single-run", f"{label} completed after {runs}{asked}", op, [item])
    failing = [r for r in p.receipts if r["result"] != "holds"]
    if p.verification == "failed" and failing:
        last = failing[0]["output"].strip().splitlines()[-1:] or [failing[0]["result"]]
        add(
            "gate-failed-completed",
            f"{label}: {failing[0]['spec']} {failing[0]['result']}: {last[0]}",
            op,
            [item],
        )
    elif p.verification == "unverified":
        add("gate-never-ran", f"{label}: its checks never ran (todoledger verify {item})", op, [item])
    elif p.verification == "stale":
        add(
            "verification-stale",
            f"{label}: {stale_input(p.receipts)} changed after its check ran",
            op,
            [item],
        )


def stale_input(receipts: list[dict[str, Any]]) -> str:
    """What changed under a stale verification: its receipt's input by name, or the tree."""
    from todoledger.checks.tree import changed

    for r in receipts:
        if isinstance(r.get("tree"), dict):
            what = changed(r["tree"])
            if what is not None:
                return what
    return "the tree"


def _completion(story: Story, item: str) -> int | None:
    it = story.items.get(item)
    done = it.last("completed") if it else None
    return done.op if done else None


def metric_line(values: list[float]) -> str:
    """`60` for one run; `median 60.1 of 3 runs (58.0-61.9)` for more."""
    if len(values) == 1:
        return f"{values[0]:g} (1 run)"
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return f"median {median:g} of {len(values)} runs ({ordered[0]:g}-{ordered[-1]:g})"


def receipt_line(r: dict[str, Any]) -> str:
    last = r["output"].strip().splitlines()[-1:] if r["output"] else []
    return f"{r['spec']} {r['result']}" + (f": {short(last[0], 80)}" if last else "")
