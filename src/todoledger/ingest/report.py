"""`todoledger report PLAN`: the plan's story, what went wrong, and where.

`analyze` is pure over the ledger's events and ops and the plan's view
(`core.view`, which every reader of a plan shares: the final state, the
items in plan order); `render_md`, `render_json` and (in `html.py`)
`render_html` only present it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from todoledger.core import refusals
from todoledger.core.cycles import acyclic
from todoledger.core.markdown import md_text
from todoledger.core.model import LedgerError
from todoledger.core.view import PlanView
from todoledger.ingest.claims import COLUMNS as CLAIM_COLUMNS
from todoledger.ingest.claims import Claims
from todoledger.ingest.claims import analyze as analyze_claims
from todoledger.ingest.findings import TITLES as STORY_TITLES
from todoledger.ingest.findings import Finding, duration, find, order, short
from todoledger.ingest.proof import TITLES as PROOF_TITLES
from todoledger.ingest.proof import ItemProof, gather, metric_line, proof_findings, receipt_line
from todoledger.ingest.story import CREATED_FIELDS, ItemStory, Story, build
from todoledger.ledger import Ledger

# What the plan's state says of an item now, beside its story and its proof.
VIEW_TITLES = {
    "waits-for-cancelled": "waiting for a cancelled or dropped item",
    "forced": "status forced past what it waited for",
}
TITLES = {**STORY_TITLES, **PROOF_TITLES, **VIEW_TITLES}


@dataclass
class Report:
    story: Story
    findings: list[Finding]
    view: PlanView
    proof: dict[str, ItemProof] = field(default_factory=dict)  # item -> its evidence, receipts, metrics
    claims: Claims = field(default_factory=lambda: Claims([], {}))  # how each "done" was proven, per writer

    @property
    def plan(self) -> str:
        return self.story.plan

    def final(self) -> dict[str, int]:
        return dict(self.view.counts)

    def items(self) -> list[ItemStory]:
        """Every item's story: the plan's items in plan order, then those removed since."""
        s = self.story
        shown = [s.items[it.id] for it in self.view.items if it.id in s.items]
        seen = {it.id for it in shown}
        return shown + [it for it in s.items.values() if it.id not in seen]


@acyclic
def load(ledger: Ledger, plan: str) -> Report:
    events = ledger.history(plan, created=CREATED_FIELDS)
    ops = ledger.ops(plan)
    if not ops:
        known = ", ".join(p["plan"] for p in ledger.plans()[:10])
        raise LedgerError(f"plan {plan!r} has no history" + (f"; plans: {known}" if known else ""))
    view = ledger.view(plan)
    return analyze(view, events, ops, gather(ledger, view))


def analyze(
    view: PlanView,
    events: list[dict[str, Any]],
    ops: list[dict[str, Any]],
    proof: dict[str, ItemProof] | None = None,
) -> Report:
    story = build(view.plan, events, ops)
    proof = proof or {}
    findings = find(story) + proof_findings(story, view, proof) + view_findings(view)
    findings.sort(key=order(story))
    return Report(story, findings, view, proof, analyze_claims(view, events))


def view_findings(view: PlanView) -> list[Finding]:
    """Open items that wait for a cancelled one (never ready until someone
    removes or re-points the dependency), and items whose status was forced."""
    out: list[Finding] = []
    for it in view.items:
        if it.waits_on_cancelled and it.is_open:
            out.append(
                Finding(
                    "waits-for-cancelled",
                    f'"{short(it.content)}" waits for a {it.waits_kind()} item'
                    f" ({', '.join(it.waits_on_cancelled)}): remove or re-point the dependency",
                    None,
                    it.updated_at,
                    "",
                    [it.id],
                )
            )
        for label in it.forced:
            status = it.status.replace("_", " ")
            out.append(
                Finding(
                    "forced", f'"{short(it.content)}" is {status}, {label}', None, it.updated_at, "", [it.id]
                )
            )
    return out


def proof_rows(r: Report) -> list[tuple[ItemStory, ItemProof]]:
    """Items with something to show for themselves (or a check that should)."""
    return [
        (it, p)
        for it in r.items()
        if (p := r.proof.get(it.id)) is not None and (p.evidence or p.checks or p.metrics or p.receipts)
    ]


def proof_cells(p: ItemProof) -> tuple[str, str, str]:
    """(evidence, metrics, receipts) as plain text, for the md and html tables."""
    metrics = "; ".join(f"{name}: {metric_line(values)}" for name, values in p.metrics.items())
    receipts = "; ".join(receipt_line(x) for x in p.receipts)
    never = [c["spec"] for c in p.checks if c["id"] not in {x["check"] for x in p.receipts}]
    if never:
        receipts = "; ".join([*([receipts] if receipts else []), *(f"{spec} never ran" for spec in never)])
    return p.evidence or "", metrics, receipts


def _writers(story: Story) -> list[str]:
    """Who made the todo calls (a reviewer's single changes are not todo calls)."""
    return sorted({c.writer for c in story.calls if c.is_list})


def _where(where: str) -> str:
    if not where:
        return ""
    return f"line {where[1:]}" if where.startswith("L") and where[1:].isdigit() else where


def headline(r: Report, esc: Callable[[str], str] = str) -> list[str]:
    """What happened, in a few sentences; `esc` quotes the transcript's own text
    (writer names hold its session id) for the output format."""
    s = r.story
    calls = s.list_calls()
    final = r.view.summary() or "no items"
    writers = ", ".join(esc(w) for w in _writers(s)) or "nobody"
    if s.untimed:
        span = f", {esc(calls[0].place)} to {esc(calls[-1].place)}" if len(calls) > 1 else ""
        span = f", at {esc(calls[0].place)}" if len(calls) == 1 else span
        when = f"{span}; times not recorded (the source numbers its messages), so no durations"
    else:
        when = f" from {esc(s.start)} to {esc(s.end)} ({duration(_span(s))})"
    lines = [
        f"{_n(len(calls), 'todo call')} by {writers}{when}; {_n(len(s.items), 'item')},"
        f" {_n(len(s.phases), 'phase')}.",
        f"Final state: {final}.",
    ]
    counts = Counter(f.code for f in r.findings)
    if counts:
        worst = ", ".join(f"{n} {TITLES.get(code, code)}" for code, n in counts.most_common())
        lines.append(f"Findings: {worst}.")
    else:
        lines.append("Findings: none; the list was kept cleanly.")
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _span(s: Story) -> float:
    from todoledger.ingest.story import seconds_between

    return seconds_between(s.start, s.end) if s.start else 0.0


def item_row(it: ItemStory, story: Story | None = None) -> dict[str, Any]:
    """An item's timeline. In a story whose calls have no time of their own (`story.untimed`)
    each moment is the place of its call (`msg 4350 (seed 000)`, or `op 12`), and there are no
    durations: the times stored are only when the calls were recorded."""
    started = it.first("in_progress")
    done = it.last("completed")
    cancelled = it.last("cancelled")
    dropped = it.last("dropped")
    if story is not None and story.untimed:
        return {
            "id": it.id,
            "content": it.content,
            "status": it.status,
            "writer": it.writer,
            "added": story.place(it.added_op),
            "started": story.place(started.op) if started else None,
            "completed": story.place(done.op) if done else None,
            "cancelled": story.place(cancelled.op) if cancelled else None,
            "dropped_at": story.place(dropped.op) if dropped else None,
            "dropped": it.dropped_op is not None,
            "reason": it.reason,
            "times": "not recorded",
            "spans": [{"status": sp.status, "op": sp.op, "where": story.place(sp.op)} for sp in it.spans],
        }
    return {
        "id": it.id,
        "content": it.content,
        "status": it.status,
        "writer": it.writer,
        "added": it.added_at,
        "started": started.at if started else None,
        "completed": done.at if done else None,
        "cancelled": cancelled.at if cancelled else None,
        "dropped_at": dropped.at if dropped else None,
        "dropped": it.dropped_op is not None,
        "reason": it.reason,
        "seconds": {k: round(v, 3) for k, v in it.time_in().items()},
        "spans": [{"status": sp.status, "start": sp.start, "end": sp.end, "op": sp.op} for sp in it.spans],
    }


def item_dict(r: Report, it: ItemStory) -> dict[str, Any]:
    proof = r.proof.get(it.id)
    return item_row(it, r.story) | ({"proof": proof.as_dict()} if proof is not None else {})


def to_dict(r: Report) -> dict[str, Any]:
    s = r.story
    timed = not s.untimed  # else the times stored are only when the calls were recorded: left out
    return {
        "plan": s.plan,
        **({"start": s.start, "end": s.end} if timed else {"times": "not recorded"}),
        "summary": headline(r),
        "final": r.final(),
        "calls": [
            {
                "op": c.op,
                **({"at": c.at} if timed else {"msg": c.msg}),
                "writer": c.writer,
                "kind": c.kind,
                "where": c.where,
                "summary": c.summary,
                "warnings": c.warnings,
            }
            for c in s.calls
        ],
        "phases": [
            {
                "phase": p.index,
                **({"start": p.start, "end": p.end} if timed else {"from": s.place(p.first_op)}),
                "items": p.items,
                "title": _phase_title(s, p.items),
                "completed": sum(1 for i in p.items if s.items[i].status == "completed"),
            }
            for p in s.phases
        ],
        "items": [item_dict(r, it) for it in r.items()],
        "findings": [f.as_dict() for f in r.findings],
        "claims": r.claims.as_dict(),
    }


def _phase_title(s: Story, ids: list[str]) -> str:
    return short(s.items[ids[0]].content, 60) if ids else ""


@acyclic
def render_json(r: Report) -> str:
    return json.dumps(to_dict(r), ensure_ascii=False, indent=2)


# Agent text is untrusted: in Markdown it must stay plain text. HTML is
# entity-escaped (no tags, no entities of its own), the characters that start
# inline markup get a backslash (code, emphasis, strikethrough, links and
# images, which all need `[`, table cells), line breaks become spaces (no new
# block) and control and bidi characters go. Characters that only mean
# something at the start of a line (`#`, `-`, `1.`) are escaped there.
_md = md_text


def claims_md(c: Claims) -> list[str]:
    """The proof section's record of claims: how each completed item was proven,
    and per writer how its claims of "done" fared."""
    if not c.writers:
        return []
    out = ["", "## Proof of completions", ""]
    out += ["| item | claimed by | at | proven |", "|---|---|---|---|"]
    for ic in c.items:
        out.append(
            f"| {_md(ic.item)} {_md(short(ic.content, 60))} | {_md(ic.claimed_by)} | {_md(ic.at)} | {_md(ic.how())} |"
        )
    out += ["", "## Claims by writer", ""]
    out += ["| writer | " + " | ".join(CLAIM_COLUMNS) + " |", "|---" * (len(CLAIM_COLUMNS) + 1) + "|"]
    for row in c.rows():
        out.append("| " + " | ".join(_md(cell) for cell in row) + " |")
    return out


REFUSED_SHOWN = 50


def refused_md(s: Story) -> list[str]:
    """Every write the plan's writers were refused, with who and why (issue 31): what the
    person would otherwise never see, since a refusal changes nothing in the plan."""
    refused = [c for c in s.calls if c.kind == "refused"]
    if not refused:
        return []
    total = refusals.how_many([c.counted for c in refused])
    out = ["", "## Refused", "", f"{total}; nothing of them was applied.", ""]
    for c in refused[:REFUSED_SHOWN]:
        when = s.place(c.op) if s.untimed else c.at
        said = refusals.line(c.summary, c.at, c.counted, c.counted_from)
        out.append(f"- {_md(when)} — {_md(c.writer)}: {_md(said)}")
    if len(refused) > REFUSED_SHOWN:
        out.append(f"- … and {len(refused) - REFUSED_SHOWN} more")
    return out


@acyclic
def render_md(r: Report) -> str:
    # Every text that came from a transcript goes through _md: item texts, writer
    # names (they hold the session id), times and places (from the transcript too).
    s = r.story
    out = [f"# Plan {_md(s.plan)}", ""]
    out += headline(r, _md)
    out += ["", "## Phases", ""]
    if s.untimed:
        out += ["| # | from | items | done | first item |", "|---|---|---|---|---|"]
    else:
        out += ["| # | from | to | took | items | done | first item |", "|---|---|---|---|---|---|---|"]
    for p in s.phases:
        done = sum(1 for i in p.items if s.items[i].status == "completed")
        title = _md(_phase_title(s, p.items))
        if s.untimed:
            out.append(f"| {p.index} | {_md(s.place(p.first_op))} | {len(p.items)} | {done} | {title} |")
            continue
        out.append(
            f"| {p.index} | {_md(p.start)} | {_md(p.end)} | {duration(p.seconds)} | {len(p.items)} | {done}"
            f" | {title} |"
        )
    out += ["", "## What went wrong", ""]
    if not r.findings:
        out.append("Nothing: no item skipped progress, went backwards, was dropped or stuck.")
    # Grouped in one pass: a pass over every finding for each of some twenty kinds walked a
    # 100,000-item plan's tens of thousands of findings twenty times (bench/bench_report.py).
    by_code: dict[str, list[Finding]] = {}
    for f in r.findings:
        by_code.setdefault(f.code, []).append(f)
    for code, title in TITLES.items():
        group = by_code.get(code)
        if not group:
            continue
        out.append(f"- **{title}** ({len(group)})")
        for f in group[:20]:
            if s.untimed:  # placed by sequence: the source's message, else the op
                out.append(f"  - {_md(_where(f.where) or s.place(f.op))}: {_md(f.message)}")
                continue
            where = f" — {_md(_where(f.where))}" if f.where else ""
            out.append(f"  - {_md(f.at)}{where}: {_md(f.message)}")
        if len(group) > 20:
            out.append(f"  - … and {len(group) - 20} more")
    out += refused_md(s)
    rows = proof_rows(r)
    if rows:
        out += ["", "## Proof", ""]
        out += [
            "| item | status | verification | evidence | metrics | receipts |",
            "|---|---|---|---|---|---|",
        ]
        for it, pf in rows:
            evidence, metrics, receipts = proof_cells(pf)
            out.append(
                f"| {_md(it.id)} {_md(short(it.content, 50))} | {_md(it.status)} | {_md(pf.verification or '')}"
                f" | {_md(short(evidence, 120))} | {_md(metrics)} | {_md(short(receipts, 200))} |"
            )
    out += claims_md(r.claims)
    out += ["", "## Timeline", ""]
    if s.untimed:
        out += ["In the order of the calls; their times were not recorded, so no durations.", ""]
        out += [
            "| item | added | started | completed / cancelled / dropped | status |",
            "|---|---|---|---|---|",
        ]
    else:
        out += [
            "| item | added | started | completed / cancelled / dropped | pending | in progress | status |",
            "|---|---|---|---|---|---|---|",
        ]
    for it in r.items():
        row = item_row(it, s)
        end = row["completed"] or row["cancelled"] or row["dropped_at"] or ""
        if s.untimed:
            status = it.status + (
                " (left out)" if it.dropped_op is not None and it.status != "dropped" else ""
            )
            out.append(
                f"| {_md(it.id)} {_md(short(it.content, 60))} | {_md(row['added'])}"
                f" | {_md(row['started'] or '')} | {_md(end)} | {_md(status)} |"
            )
            continue
        secs = row["seconds"]
        status = it.status + (" (dropped)" if it.dropped_op is not None and it.status != "dropped" else "")
        out.append(
            f"| {_md(it.id)} {_md(short(it.content, 60))} | {_md(row['added'])} | {_md(row['started'] or '')}"
            f" | {_md(end)} | {duration(secs.get('pending', 0))} | {duration(secs.get('in_progress', 0))}"
            f" | {_md(status)} |"
        )
    out += ["", "## Calls", ""]
    if s.untimed:
        out += ["| op | where | writer | change | warnings |", "|---|---|---|---|---|"]
    else:
        out += ["| op | at | where | writer | change | warnings |", "|---|---|---|---|---|---|"]
    for c in s.calls:
        warn = "; ".join(_md(w.get("message", "")) for w in c.warnings)
        when = "" if s.untimed else f" {_md(c.at)} |"
        out.append(
            f"| {c.op} |{when} {_md(_where(c.where))} | {_md(c.writer)}"
            f" | {_md(c.summary or 'no change')} | {warn} |"
        )
    out.append("")  # the last line's end, without copying the whole text once more
    return "\n".join(out)
