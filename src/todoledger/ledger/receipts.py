"""Receipts: running checks and recording what they found, the gate of `done`
(its checks run before an item may be completed), and the checks in an export.
Above `gates`, which says what the receipts prove; every function takes a `Unit`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from todoledger.core import verification as core
from todoledger.core.checkspec import parse
from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.ledger.gates import check_repo, new_check_id, runs_in, select, usable, written_in
from todoledger.ledger.values import epoch
from todoledger.store.checks import CheckRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.checks.run import Inputs, Outcome
    from todoledger.ledger.unit import Unit
    from todoledger.store.repo import Writes


class Stopped(LedgerError):
    """`verify` got SIGTERM or SIGINT: its running checks were ended, their receipts kept."""

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(
            f"verify was stopped ({signal_name}): its running checks were ended;"
            " their receipts say they were interrupted"
        )


def verify(
    u: Unit,
    plan: str,
    writer: str,
    refs: Sequence[str] = (),
    *,
    cwd: str | None = None,
    on_result: Callable[[CheckRow, Receipt], None] | None = None,
    roles: Sequence[str] = core.ROLES,
) -> dict[str, Any]:
    """Run the trusted checks of the plan (or of the named items) in parallel
    and store a receipt for each; untrusted checks are skipped and listed."""
    with u.store.read():
        chosen = select(u, plan, refs)
    rows = [r for r in chosen if r.role in roles]
    runnable = [r for r in rows if r.trusted]
    skipped = [r for r in rows if not r.trusted]
    from todoledger.checks.run import interruptible

    # A SIGTERM or Ctrl-C ends the checks' process groups; their receipts say so and are kept.
    with interruptible() as guard:
        receipts = run_rows(u, plan, writer, runnable, cwd or os.getcwd(), on_result, kind="verify")
    if guard.stopped is not None:
        raise Stopped(guard.stopped)
    return {
        "plan": plan,
        "receipts": [r.as_dict() for r in receipts],
        "skipped": [{**r.as_dict(), "why": f"not trusted: todoledger trust {r.id}"} for r in skipped],
    }


def run_rows(
    u: Unit,
    plan: str,
    writer: str,
    rows: Sequence[CheckRow],
    cwd: str,
    on_result: Callable[[CheckRow, Receipt], None] | None,
    *,
    kind: str | None,
) -> list[Receipt]:
    """Run the checks; with a `kind`, record their receipts in an op of that kind."""
    from todoledger.checks import run, tree

    if not rows:
        return []
    if not u.run_checks:
        raise LedgerError("checks do not run here: this server was started without --allow-checks")
    with u.store.read():
        jobs = [(row.id, row.check, _inputs(u, row, runs_in(row, cwd))) for row in rows]
    # What each receipt depends on: the tree (or the watched paths), and the files the check names.
    trees: dict[tuple[str, tuple[str, ...], tuple[str, ...]], dict[str, Any] | None] = {}
    keys: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for row in rows:
        home = runs_in(row, cwd)
        reads = row.check.kind if row.check.kind in ("file", "cmd") else "other"
        key = keys[row.id] = (home, row.check.watch, (reads, row.check.target if reads != "other" else ""))
        if key not in trees:
            trees[key] = (
                tree.receipt_state(home, reads, key[2][1], row.check.watch) if os.path.isdir(home) else None
            )
    by_id = {r.id: r for r in rows}
    receipts: dict[str, Receipt] = {}

    def finished(check_id: str, outcome: Outcome) -> None:
        row = by_id[check_id]
        receipts[check_id] = receipt = _receipt(row, outcome, writer, trees[keys[check_id]])
        if on_result is not None:
            on_result(row, receipt)

    run.run_many(jobs, finished)
    ordered = [receipts[r.id] for r in rows]
    if kind is not None:
        record_receipts(u, plan, writer, rows, ordered, kind)
    return ordered


def _inputs(u: Unit, row: CheckRow, cwd: str) -> Inputs:
    from todoledger.checks.run import Inputs

    check, repo = row.check, check_repo(u)
    since = None
    if check.newer:
        item = u.repo.item(row.item)
        started = repo.started_at(row.item) or (item.created_at if item else None)
        since = epoch(started) if started else None
    value = baseline = typed = None
    if check.kind == "metric":
        # Measured values only (a sweep's runs, a check's output), or typed ones a person accepted.
        runs = repo.metric_runs(row.item, check.target)
        value = _median([m[0] for m in runs if usable(m)])
        typed = _median([m[0] for m in runs if not usable(m)])
        if check.baseline is not None:
            base = u.repo.item(check.baseline)
            if base is None:
                ids = u.repo.ids_with_prefix(row.plan, check.baseline)
                base = u.repo.item(ids[0]) if len(ids) == 1 else None
            if base is not None:
                baseline = _median([m[0] for m in repo.metric_runs(base.id, check.target) if usable(m)])
    return Inputs(cwd=cwd, since=since, value=value, baseline=baseline, typed=typed, path=row.path)


def _median(values: list[float]) -> float | None:
    """The median, without `statistics` (its imports cost more than a gate's run)."""
    if not values:
        return None
    ordered, mid = sorted(values), len(values) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _receipt(row: CheckRow, outcome: Outcome, writer: str, state: dict[str, Any] | None) -> Receipt:
    return Receipt(
        check=row.id,
        item=row.item,
        spec=row.check.canonical(),
        result=outcome.result,
        code=outcome.code,
        duration_ms=outcome.duration_ms,
        output=outcome.output,
        at=now(),
        by=writer,
        tree=state,
    )


def record_receipts(
    u: Unit, plan: str, writer: str, rows: Sequence[CheckRow], receipts: Sequence[Receipt], kind: str
) -> None:
    """Store the receipts as rows and as events; an assumption that holds is completed."""
    at = now()
    repo = check_repo(u)
    with u.transaction(plan):
        w = u.op(plan, writer, at, kind, summary=_summary(receipts))
        write_receipts(repo, w, rows, receipts)
        for row, r in zip(rows, receipts, strict=True):
            item = u.repo.item(row.item)
            pending = item is not None and item.status in ("pending", "in_progress")
            if (
                row.role == "assumption"
                and pending
                and r.result == "holds"
                and _all_hold(repo, plan, row.item)
            ):
                assert item is not None
                w.set(item.id, "evidence", item.evidence, f"check holds: {row.check.text()}: {r.line()}")
                w.set(item.id, "status", item.status, "completed")
        u.repo.touch_plan(plan, at)


def write_receipts(repo: CheckRepo, w: Writes, rows: Sequence[CheckRow], receipts: Sequence[Receipt]) -> None:
    for row, r in zip(rows, receipts, strict=True):
        repo.add_receipt(w.plan, r)
        w.annotate(r.item, "receipt", None, receipt_event(row, r))


def _all_hold(repo: CheckRepo, plan: str, item: str) -> bool:
    latest = repo.latest_receipts(plan)
    return all(
        (key := (c.id, c.check.canonical())) in latest and latest[key].result == "holds"
        for c in repo.checks(plan, [item])
    )


def receipt_event(row: CheckRow, r: Receipt) -> dict[str, Any]:
    return {
        "check": row.id,
        "role": row.role,
        "spec": row.check.text(),
        "result": r.result,
        "code": r.code,
        "ms": r.duration_ms,
        "output": core.tail(r.output, 300),
        "tree": r.tree,
    }


def _summary(receipts: Sequence[Receipt]) -> str:
    counts: dict[str, int] = {}
    for r in receipts:
        counts[r.result] = counts.get(r.result, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in counts.items())


@dataclass
class GatePassed:
    """Gates that let an item be completed; `record` writes their receipts (and
    an override) into the completing op, so a passing `done` is one transaction."""

    item: str
    rows: list[CheckRow]
    receipts: list[Receipt]
    forced: dict[str, Any] | None = None

    def record(self, u: Unit, w: Writes) -> None:
        write_receipts(check_repo(u), w, self.rows, self.receipts)
        if self.forced is not None:
            w.annotate(self.item, "forced", None, self.forced)


def gate_before_done(
    u: Unit, plan: str, ref: str, writer: str, force_reason: str | None, cwd: str | None = None
) -> GatePassed | None:
    """Run the item's gates before it may be completed. While one fails (or is
    not trusted) its receipt is stored and the one-line refusal shows its
    output; with a reason the override is let through and recorded."""
    if force_reason is not None and not force_reason.strip():
        raise LedgerError("--force needs a --reason: why the gate may be overridden")
    with u.store.read():
        item = u.require(plan, ref)
        # An assumption's check is what its completion means: saying so does not make it hold.
        gates = [r for r in check_repo(u).checks(plan, [item.id]) if r.role in core.ROLES]
    if not gates:
        return None
    trusted = [g for g in gates if g.trusted]
    untrusted = [g for g in gates if not g.trusted]
    if not u.run_checks and force_reason is None:
        raise LedgerError(
            f"{item.id} not completed: its gate {gates[0].check.text()} runs only where checks are allowed"
            " (todoledger done on the machine, or serve --allow-checks)"
        )
    if not u.run_checks:
        trusted = []  # an override from a server that runs no checks: recorded, nothing run
        untrusted = gates
    receipts = run_rows(u, plan, writer, trusted, cwd or os.getcwd(), None, kind=None)
    failing = [(g, r) for g, r in zip(trusted, receipts, strict=True) if r.result != "holds"]
    if not failing and not untrusted:
        return GatePassed(item.id, trusted, receipts)
    if force_reason is None:
        record_receipts(u, plan, writer, trusted, receipts, "gate")
        if failing:
            gate, receipt = failing[0]
            state = "not completed" if item.status != "completed" else "stays reported, not verified"
            raise LedgerError(f"{item.id} {state}: gate {gate.check.text()} {receipt.line()}")
        raise LedgerError(
            f"{item.id} not completed: gate {untrusted[0].check.text()} is not trusted"
            f" (todoledger trust {untrusted[0].id}, or {u.override})"
        )
    skipped = "untrusted" if u.run_checks else "not run"
    forced = {
        "past": "gates",
        "reason": force_reason,
        "gates": [{"check": g.id, "spec": g.check.text(), "result": r.result} for g, r in failing]
        + [{"check": g.id, "spec": g.check.text(), "result": skipped} for g in untrusted],
    }
    return GatePassed(item.id, trusted, receipts, forced)


def export_checks(u: Unit, plan: str) -> dict[str, list[dict[str, Any]]]:
    """item id -> its checks, for the export lines (call inside a read)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in check_repo(u).checks(plan):
        out.setdefault(row.item, []).append(
            {"id": row.id, "role": row.role, "spec": row.check.text(), "options": row.check.options()}
        )
    return out


def import_checks(u: Unit, w: Writes, records: Sequence[dict[str, Any]]) -> int:
    """Bring in the checks of imported records, untrusted (call inside the import's
    transaction). A check whose text changed keeps its id and loses its trust."""
    repo = check_repo(u)
    plan, writer, at = w.plan, w.writer, w.at
    home = written_in()  # an imported check runs where it was imported (untrusted until a person trusts it)
    added = 0
    for record in records:
        entries = record.get("checks")
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise LedgerError(f"item {record['id']}: checks must be a list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("spec"), str):
                raise LedgerError(f'item {record["id"]}: a check needs a "spec"')
            role = entry.get("role", "gate")
            if role not in core.ALL_ROLES:
                raise LedgerError(f"item {record['id']}: role must be one of {', '.join(core.ALL_ROLES)}")
            options = entry.get("options") or {}
            if not isinstance(options, dict):
                raise LedgerError(f"item {record['id']}: check options must be an object")
            try:
                check = parse(entry["spec"], options)
            except LedgerError as exc:
                raise LedgerError(f"item {record['id']}: {exc}") from None
            check_id = entry.get("id")
            existing = (
                repo.get(check_id) if isinstance(check_id, str) and check_id.startswith("chk-") else None
            )
            if existing is not None and existing.plan == plan and existing.item == record["id"]:
                if existing.check != check:
                    repo.remove(existing.id)
                    row = CheckRow(
                        existing.id, plan, record["id"], role, check, False, writer, at, None, "import", *home
                    )
                    repo.add(row, trusted_by=None)
                    _note(w, row, old=existing)
                    added += 1
                continue
            if any(c.check == check and c.role == role for c in repo.checks(plan, [record["id"]])):
                continue
            new_id_ = (
                check_id
                if isinstance(check_id, str) and check_id.startswith("chk-") and existing is None
                else new_check_id()
            )
            row = CheckRow(new_id_, plan, record["id"], role, check, False, writer, at, None, "import", *home)
            repo.add(row, trusted_by=None)
            _note(w, row, old=None)
            added += 1
    return added


def _note(w: Writes, row: CheckRow, *, old: CheckRow | None) -> None:
    w.annotate(
        row.item,
        "check",
        {"id": old.id, "spec": old.check.canonical()} if old else None,
        {"id": row.id, "role": row.role, "spec": row.check.canonical(), "trusted": False},
    )
