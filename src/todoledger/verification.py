"""Checks on items: gates, assumptions, receipts, metrics and trust (service layer, no SQL).

    from todoledger import Ledger
    from todoledger import verification as v
    with Ledger() as lg:
        item = lg.add("Verify /data has space for 25K samples")
        v.add_check(lg, item["id"], "disk:/data>=5.4T")          # a completion gate
        v.assume(lg, "SGLang server is up", check="http://127.0.0.1:30000/health", for_=[item["id"]])
        v.verify(lg)                                              # runs them, stores receipts

Checks written locally (CLI, stdio MCP, hooks) are trusted; checks that arrive
any other way (`import`, the HTTP server) are not, and nothing runs them until
a person approves their exact text with `trust`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

from todoledger.core import verification as core
from todoledger.core.checkspec import Check, parse
from todoledger.core.ids import new_id
from todoledger.core.model import Finding, LedgerError
from todoledger.core.record import dataclass
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.defaults import default_plan, default_writer
from todoledger.store.checks import CheckRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.checks.run import Inputs, Outcome
    from todoledger.service import Ledger
    from todoledger.store.repo import Writes

MAX_METRICS_PER_CALL = 100


def _repo(lg: Ledger) -> CheckRepo:
    return CheckRepo(lg.store)


def _check_id() -> str:
    return "chk-" + new_id()


# adding checks -------------------------------------------------------------
def add_check(
    lg: Ledger,
    ref: str,
    spec: str,
    options: dict[str, Any] | None = None,
    *,
    role: str = "gate",
    plan: str | None = None,
    writer: str | None = None,
    trusted: bool = True,
) -> dict[str, Any]:
    """Give an item a check (a completion gate by default). `trusted=False` for
    checks that did not come from this machine's user (import, HTTP)."""
    if role not in core.ROLES:
        raise LedgerError(f"role must be one of {', '.join(core.ROLES)}, not {role!r}")
    check = parse(spec, options)
    plan = plan or default_plan()
    writer = writer or default_writer()
    at = now()
    with lg._transaction():
        item = lg._require(plan, ref)
        return _insert(lg, plan, item.id, role, check, writer, at, trusted=trusted).as_dict()


def _insert(
    lg: Ledger, plan: str, item: str, role: str, check: Check, writer: str, at: str, *, trusted: bool
) -> CheckRow:
    repo = _repo(lg)
    for existing in repo.checks(plan, [item]):
        if existing.check == check and existing.role == role:
            raise LedgerError(f"{item} already has this {role}: {existing.id} {check.text()}")
    row = CheckRow(_check_id(), plan, item, role, check, trusted, writer, at)
    repo.add(row, trusted_by=writer if trusted else None)
    w = lg._op(plan, writer, at, role, summary=f"{role} {row.id} on {item}")
    w.annotate(
        item, "check", None, {"id": row.id, "role": role, "spec": check.canonical(), "trusted": trusted}
    )
    lg.repo.touch_plan(plan, at)
    return row


def assume(
    lg: Ledger,
    text: str,
    *,
    check: str | None = None,
    options: dict[str, Any] | None = None,
    for_: Iterable[str] = (),
    plan: str | None = None,
    writer: str | None = None,
    trusted: bool = True,
) -> dict[str, Any]:
    """Record an assumption as an item that holds when its check passes; the
    items it is for wait for it."""
    parsed = parse(check, options) if check is not None else None
    plan = plan or default_plan()
    writer = writer or default_writer()
    with lg._transaction():
        dependents = [lg._require(plan, ref).id for ref in for_]
        item = lg.add(text, plan=plan, writer=writer, notes="assumption")
        row = None
        if parsed is not None:
            row = _insert(lg, plan, item["id"], "assumption", parsed, writer, now(), trusted=trusted)
        for dependent in dependents:
            lg.dep_add(dependent, item["id"], plan=plan, writer=writer)
    return {**lg.get(item["id"], plan), "check": row.as_dict() if row else None, "for": dependents}


def remove_check(
    lg: Ledger, check_id: str, *, plan: str | None = None, writer: str | None = None, force: bool = False
) -> dict[str, Any]:
    """Remove a check. Not the check a completion has not passed: without it the
    completion would read as reported, not failed, and what waits for it would
    go ahead; `force` does it all the same, and is recorded."""
    plan = plan or default_plan()
    writer = writer or default_writer()
    at = now()
    with lg._transaction():
        row = _require_check(lg, plan, check_id)
        item = lg._require(plan, row.item)
        state = states(lg, plan, [(item.id, item.status)])[item.id] if item.status == "completed" else None
        unpassed = state is not None and state != core.VERIFIED
        if unpassed and not force:
            raise LedgerError(
                f"{row.id} is a check of {item.id}, which was completed without passing it ({state}):"
                f" removing it would hide that; reopen {item.id} first (force overrides, and is recorded)"
            )
        _repo(lg).remove(row.id)
        w = lg._op(plan, writer, at, "uncheck", summary=f"removed {row.role} {row.id} from {row.item}")
        if unpassed:
            w.annotate(row.item, "forced", None, {"past": "check removal", "check": row.id, "was": state})
        w.annotate(row.item, "check", {"id": row.id, "spec": row.check.canonical()}, None)
        lg.repo.touch_plan(plan, at)
    return row.as_dict()


def _require_check(lg: Ledger, plan: str, check_id: str) -> CheckRow:
    row = _repo(lg).get(check_id)
    if row is None or row.plan != plan:
        raise LedgerError(f"no check {check_id!r} in plan {plan!r}")
    return row


def checks(lg: Ledger, refs: Sequence[str] = (), *, plan: str | None = None) -> list[CheckRow]:
    """The checks of the plan, or of the named items / check ids."""
    plan = plan or default_plan()
    with lg.store.read():
        return _select(lg, plan, refs)


def _select(lg: Ledger, plan: str, refs: Sequence[str]) -> list[CheckRow]:
    repo = _repo(lg)
    if not refs:
        return repo.checks(plan)
    chosen: dict[str, CheckRow] = {}
    for ref in refs:
        if ref.startswith("chk-"):
            row = _require_check(lg, plan, ref)
            chosen[row.id] = row
            continue
        item = lg._require(plan, ref)
        rows = repo.checks(plan, [item.id])
        if not rows:
            raise LedgerError(f"{item.id} has no checks (add one: todoledger gate add {item.id} SPEC)")
        chosen.update((r.id, r) for r in rows)
    return list(chosen.values())


# trust ---------------------------------------------------------------------
def trust(
    lg: Ledger,
    refs: Sequence[str] = (),
    *,
    plan: str | None = None,
    writer: str | None = None,
    approve: Callable[[CheckRow], bool] = lambda row: True,
) -> list[dict[str, Any]]:
    """Approve the exact text of untrusted checks; `approve` is asked for each
    (the CLI shows the spec and asks). Returns the approved checks."""
    plan = plan or default_plan()
    writer = writer or default_writer()
    pending = [r for r in checks(lg, refs, plan=plan) if not r.trusted]
    approved = [r for r in pending if approve(r)]
    if not approved:
        return []
    at = now()
    with lg._transaction():
        repo = _repo(lg)
        w = lg._op(plan, writer, at, "trust", summary=f"trusted {len(approved)} checks")
        done: list[dict[str, Any]] = []
        for row in approved:
            current = repo.get(row.id)
            if current is None or current.check != row.check:
                raise LedgerError(f"{row.id} changed while it was shown; run trust again")
            repo.trust(row, writer, at)
            w.annotate(row.item, "trust", None, {"id": row.id, "spec": row.check.canonical()})
            done.append({**row.as_dict(), "trusted": True})
        lg.repo.touch_plan(plan, at)
    return done


# running -------------------------------------------------------------------
def verify(
    lg: Ledger,
    refs: Sequence[str] = (),
    *,
    plan: str | None = None,
    writer: str | None = None,
    cwd: str | None = None,
    on_result: Callable[[CheckRow, Receipt], None] | None = None,
    roles: Sequence[str] = core.ROLES,
) -> dict[str, Any]:
    """Run the trusted checks of the plan (or of the named items) in parallel
    and store a receipt for each; untrusted checks are skipped and listed."""
    plan = plan or default_plan()
    writer = writer or default_writer()
    rows = [r for r in checks(lg, refs, plan=plan) if r.role in roles]
    runnable = [r for r in rows if r.trusted]
    skipped = [r for r in rows if not r.trusted]
    receipts = _run(lg, plan, writer, runnable, cwd or os.getcwd(), on_result, kind="verify")
    return {
        "plan": plan,
        "receipts": [r.as_dict() for r in receipts],
        "skipped": [{**r.as_dict(), "why": f"not trusted: todoledger trust {r.id}"} for r in skipped],
    }


def _run(
    lg: Ledger,
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
    if not lg.run_checks:
        raise LedgerError("checks do not run here: this server was started without --allow-checks")
    with lg.store.read():
        jobs = [(row.id, row.check, _inputs(lg, row, cwd)) for row in rows]
    trees: dict[tuple[str, ...], dict[str, Any] | None] = {}
    for row in rows:
        if row.check.watch not in trees:
            trees[row.check.watch] = tree.state(cwd, row.check.watch)
    by_id = {r.id: r for r in rows}
    receipts: dict[str, Receipt] = {}

    def finished(check_id: str, outcome: Outcome) -> None:
        row = by_id[check_id]
        receipts[check_id] = receipt = _receipt(row, outcome, writer, trees[row.check.watch])
        if on_result is not None:
            on_result(row, receipt)

    run.run_many(jobs, finished)
    ordered = [receipts[r.id] for r in rows]
    if kind is not None:
        _record(lg, plan, writer, rows, ordered, kind)
    return ordered


def _inputs(lg: Ledger, row: CheckRow, cwd: str) -> Inputs:
    from todoledger.checks.run import Inputs

    check, repo = row.check, _repo(lg)
    since = None
    if check.newer:
        item = lg.repo.item(row.item)
        started = repo.started_at(row.item) or (item.created_at if item else None)
        since = _epoch(started) if started else None
    value = baseline = None
    if check.kind == "metric":
        value = _median(repo.metric_values(row.item, check.target))
        if check.baseline is not None:
            base = lg.repo.item(check.baseline)
            if base is None:
                ids = lg.repo.ids_with_prefix(row.plan, check.baseline)
                base = lg.repo.item(ids[0]) if len(ids) == 1 else None
            baseline = _median(repo.metric_values(base.id, check.target)) if base else None
    return Inputs(cwd=cwd, since=since, value=value, baseline=baseline)


def _median(values: list[float]) -> float | None:
    """The median, without `statistics` (its imports cost more than a gate's run)."""
    if not values:
        return None
    ordered, mid = sorted(values), len(values) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _epoch(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


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


def _record(
    lg: Ledger, plan: str, writer: str, rows: Sequence[CheckRow], receipts: Sequence[Receipt], kind: str
) -> None:
    """Store the receipts as rows and as events; an assumption that holds is completed."""
    at = now()
    repo = _repo(lg)
    with lg._transaction():
        w = lg._op(plan, writer, at, kind, summary=_summary(receipts))
        _write_receipts(repo, w, rows, receipts)
        for row, r in zip(rows, receipts, strict=True):
            item = lg.repo.item(row.item)
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
        lg.repo.touch_plan(plan, at)


def _write_receipts(
    repo: CheckRepo, w: Writes, rows: Sequence[CheckRow], receipts: Sequence[Receipt]
) -> None:
    for row, r in zip(rows, receipts, strict=True):
        repo.add_receipt(w.plan, r)
        w.annotate(r.item, "receipt", None, _event(row, r))


def _all_hold(repo: CheckRepo, plan: str, item: str) -> bool:
    latest = repo.latest_receipts(plan)
    return all(
        (key := (c.id, c.check.canonical())) in latest and latest[key].result == "holds"
        for c in repo.checks(plan, [item])
    )


def _event(row: CheckRow, r: Receipt) -> dict[str, Any]:
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


# the gate of `done` ------------------------------------------------------------
@dataclass
class GatePassed:
    """Gates that let an item be completed; `record` writes their receipts (and
    an override) into the completing op, so a passing `done` is one transaction."""

    item: str
    rows: list[CheckRow]
    receipts: list[Receipt]
    forced: dict[str, Any] | None = None

    def record(self, lg: Ledger, w: Writes) -> None:
        _write_receipts(_repo(lg), w, self.rows, self.receipts)
        if self.forced is not None:
            w.annotate(self.item, "forced", None, self.forced)


def gate_before_done(
    lg: Ledger, plan: str, ref: str, writer: str, force_reason: str | None, cwd: str | None = None
) -> GatePassed | None:
    """Run the item's gates before it may be completed. While one fails (or is
    not trusted) its receipt is stored and the one-line refusal shows its
    output; with a reason the override is let through and recorded."""
    if force_reason is not None and not force_reason.strip():
        raise LedgerError("--force needs a --reason: why the gate may be overridden")
    with lg.store.read():
        item = lg._require(plan, ref)
        # An assumption's check is what its completion means: saying so does not make it hold.
        gates = [r for r in _repo(lg).checks(plan, [item.id]) if r.role in core.ROLES]
    if not gates:
        return None
    trusted = [g for g in gates if g.trusted]
    untrusted = [g for g in gates if not g.trusted]
    if not lg.run_checks and force_reason is None:
        raise LedgerError(
            f"{item.id} not completed: its gate {gates[0].check.text()} runs only where checks are allowed"
            " (todoledger done on the machine, or serve --allow-checks)"
        )
    if not lg.run_checks:
        trusted = []  # an override from a server that runs no checks: recorded, nothing run
        untrusted = gates
    receipts = _run(lg, plan, writer, trusted, cwd or os.getcwd(), None, kind=None)
    failing = [(g, r) for g, r in zip(trusted, receipts, strict=True) if r.result != "holds"]
    if not failing and not untrusted:
        return GatePassed(item.id, trusted, receipts)
    if force_reason is None:
        _record(lg, plan, writer, trusted, receipts, "gate")
        if failing:
            gate, receipt = failing[0]
            state = "not completed" if item.status != "completed" else "stays reported, not verified"
            raise LedgerError(f"{item.id} {state}: gate {gate.check.text()} {receipt.line()}")
        raise LedgerError(
            f"{item.id} not completed: gate {untrusted[0].check.text()} is not trusted"
            f" (todoledger trust {untrusted[0].id}, or {lg.override})"
        )
    skipped = "untrusted" if lg.run_checks else "not run"
    forced = {
        "past": "gates",
        "reason": force_reason,
        "gates": [{"check": g.id, "spec": g.check.text(), "result": r.result} for g, r in failing]
        + [{"check": g.id, "spec": g.check.text(), "result": skipped} for g in untrusted],
    }
    return GatePassed(item.id, trusted, receipts, forced)


def done_command(
    lg: Ledger,
    ref: str,
    *,
    metric: Sequence[str] = (),
    force: bool = False,
    reason: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """`todoledger done` (both the click command and the lean path in cli/entry.py).
    `force` overrides unmet prerequisites; a failing gate also needs the reason."""
    if reason is not None and not force:
        raise LedgerError("--reason goes with --force: it is recorded with the override")
    metrics = dict(parse_metric(m) for m in metric)
    return lg.done(ref, metrics=metrics, force=force, force_reason=reason if force else None, **kw)


# metrics -------------------------------------------------------------------
def record_metrics(
    lg: Ledger,
    ref: str,
    metrics: dict[str, float] | Sequence[tuple[str, float]],
    *,
    plan: str | None = None,
    writer: str | None = None,
) -> list[dict[str, Any]]:
    """Store numbers on an item (each a new run of that metric) with their events."""
    pairs = list(metrics.items()) if isinstance(metrics, dict) else list(metrics)
    if len(pairs) > MAX_METRICS_PER_CALL:
        raise LedgerError(f"{len(pairs)} metrics in one call; the limit is {MAX_METRICS_PER_CALL}")
    checked = [_metric_pair(name, value) for name, value in pairs]
    plan = plan or default_plan()
    writer = writer or default_writer()
    at = now()
    out: list[dict[str, Any]] = []
    with lg._transaction():
        item = lg._require(plan, ref)
        repo = _repo(lg)
        w = lg._op(plan, writer, at, "metric", summary=", ".join(f"{n}={v:g}" for n, v in checked))
        for name, value in checked:
            run = repo.add_metric(plan, item.id, name, value, writer, at)
            w.annotate(item.id, "metric", None, {"name": name, "value": value, "run": run})
            out.append({"item": item.id, "name": name, "value": value, "run": run})
        lg.repo.touch_plan(plan, at)
    return out


def parse_metric(text: str) -> tuple[str, float]:
    """`tok_s=60` -> ("tok_s", 60.0); one clear line otherwise."""
    name, sep, value = text.partition("=")
    if not sep:
        raise LedgerError(f"metric {text!r}: write NAME=NUMBER (e.g. tok_s=60)")
    try:
        number = float(value)
    except ValueError:
        raise LedgerError(f"metric {text!r}: {value.strip()!r} is not a number") from None
    return _metric_pair(name.strip(), number)


def _metric_pair(name: str, value: Any) -> tuple[str, float]:
    import math
    import re

    if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$", name):
        raise LedgerError(f"metric name {name!r}: letters, digits, _ and . (at most 64)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LedgerError(f"metric {name}: {value!r} is not a finite number")
    return name, float(value)


def metrics(lg: Ledger, ref: str | None = None, *, plan: str | None = None) -> list[dict[str, Any]]:
    plan = plan or default_plan()
    with lg.store.read():
        item = lg._require(plan, ref).id if ref else None
        return _repo(lg).metrics(plan, item)


def receipts(lg: Ledger, ref: str | None = None, *, plan: str | None = None) -> list[dict[str, Any]]:
    plan = plan or default_plan()
    with lg.store.read():
        item = lg._require(plan, ref).id if ref else None
        return [r.as_dict() for r in _repo(lg).receipts(plan, item)]


# derived verification ----------------------------------------------------------
def states(lg: Ledger, plan: str, items: Iterable[tuple[str, str]]) -> dict[str, str | None]:
    """Each item's verification; costs one query for a plan without checks.
    Call inside a read or write transaction."""
    pairs = list(items)
    repo = _repo(lg)
    if not pairs or not repo.any_in(plan):
        return {i: (core.REPORTED if s == "completed" else None) for i, s in pairs}
    rows = repo.checks(plan)
    latest_by_spec = repo.latest_receipts(plan)
    latest = {
        r.id: latest_by_spec[(r.id, r.check.canonical())]
        for r in rows
        if (r.id, r.check.canonical()) in latest_by_spec
    }
    return core.derive(pairs, rows, latest, _freshness())


def _freshness() -> Callable[[Receipt], bool]:
    """Is a receipt's tree state still current? One look per distinct tree."""
    from todoledger.checks import tree

    cache: dict[str, bool] = {}

    def fresh(r: Receipt) -> bool:
        if r.tree is None:
            return True
        key = repr(sorted(r.tree.items()))
        if key not in cache:
            cache[key] = tree.same(r.tree)
        return cache[key]

    return fresh


def held(lg: Ledger, plan: str) -> frozenset[str]:
    """Checked items that are not verified: those waiting on them are not ready."""
    repo = _repo(lg)
    if not repo.any_in(plan):
        return frozenset()
    items = lg.repo.items(plan)
    return core.held(states(lg, plan, [(i.id, i.status) for i in items]))


def write_warnings(lg: Ledger, plan: str, completed: Sequence[str]) -> list[Finding]:
    """For a whole-list write: gated items it reported completed that are not verified."""
    if not completed or not _repo(lg).any_in(plan):
        return []
    found = states(lg, plan, [(i, "completed") for i in completed])
    gated = {r.item: r for r in _repo(lg).checks(plan, list(completed))}
    out: list[Finding] = []
    for item in completed:
        state = found.get(item)
        if item in gated and state != core.VERIFIED:
            out.append(
                Finding(
                    "warning",
                    item,
                    "unverified-completion",
                    f"reported completed, but its check {gated[item].check.text()} is {state}:"
                    f" kept as reported, not verified (todoledger verify {item})",
                )
            )
    return out


def sweep_repeats(lg: Ledger, plan: str) -> dict[str, int]:
    """item -> how many runs its sweep asks for."""
    with lg.store.read():
        return _repo(lg).sweep_repeats(plan)


def unproven_by(lg: Ledger, writer: str, also: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Items that `writer` (or its subagents, `writer:...`) completed, and the items
    `also` names (the session's completions through MCP), still completed, whose
    gates fail, never ran or went stale: what a Stop gate names."""
    out: list[dict[str, Any]] = []
    with lg.store.read():
        repo = _repo(lg)
        by_plan: dict[str, list[str]] = {}
        pairs_done = set(repo.completed_by(writer))
        extra = lg.repo.items_by_id(sorted(set(also)), deps=False)
        pairs_done |= {(it.plan, it.id) for it in extra.values()}
        for plan, item in sorted(pairs_done):
            by_plan.setdefault(plan, []).append(item)
        for plan, ids in by_plan.items():
            gates: dict[str, list[CheckRow]] = {}
            for row in repo.checks(plan, ids):
                if row.role in core.ROLES:
                    gates.setdefault(row.item, []).append(row)
            found = {i: lg.repo.item(i) for i in gates}
            pairs = [(i, it.status) for i, it in found.items() if it is not None and it.status == "completed"]
            if not pairs:
                continue
            verdicts = states(lg, plan, pairs)
            latest = repo.latest_receipts(plan)
            for item, _ in pairs:
                state = verdicts.get(item)
                if state not in (core.FAILED, core.UNVERIFIED, core.STALE):
                    continue
                runs = [(g, latest.get((g.id, g.check.canonical()))) for g in gates[item]]
                record = found[item]
                assert record is not None
                out.append(
                    {
                        "plan": plan,
                        "item": item,
                        "content": record.content,
                        "state": state,
                        "gates": [
                            {"check": g.id, "spec": g.check.text(), "result": r.line() if r else "never run"}
                            for g, r in runs
                        ],
                    }
                )
    return out


# export / import -----------------------------------------------------------------
def export_checks(lg: Ledger, plan: str) -> dict[str, list[dict[str, Any]]]:
    """item id -> its checks, for the export lines (call inside a read)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in _repo(lg).checks(plan):
        out.setdefault(row.item, []).append(
            {"id": row.id, "role": row.role, "spec": row.check.text(), "options": row.check.options()}
        )
    return out


def import_checks(lg: Ledger, w: Writes, records: Sequence[dict[str, Any]]) -> int:
    """Bring in the checks of imported records, untrusted (call inside the import's
    transaction). A check whose text changed keeps its id and loses its trust."""
    repo = _repo(lg)
    plan, writer, at = w.plan, w.writer, w.at
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
                    row = CheckRow(existing.id, plan, record["id"], role, check, False, writer, at)
                    repo.add(row, trusted_by=None)
                    _note(w, row, old=existing)
                    added += 1
                continue
            if any(c.check == check and c.role == role for c in repo.checks(plan, [record["id"]])):
                continue
            new_id_ = (
                check_id
                if isinstance(check_id, str) and check_id.startswith("chk-") and existing is None
                else _check_id()
            )
            row = CheckRow(new_id_, plan, record["id"], role, check, False, writer, at)
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
