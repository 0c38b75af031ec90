"""Gates: the checks on items, below the façade. What each item's verification
state is, which items are gated (completed, but not proven: what waits for
them is not ready), running checks and recording their receipts, the gate of
`done`, and the checks in an export. Every function takes a `Unit`.

Checks written locally (CLI, stdio MCP, hooks) are trusted to run; checks that
arrive any other way (`import`, the HTTP server) are not, and nothing runs them
until a person approves their exact text with `trust`. Running is not proving:
each check keeps its writer and route, and an item is `verified` only by a
check its claimant does not control (`core.verification`); a person's `trust`
of an agent's check is what turns that agent's `self-checked` into `verified`.
A check that cannot fail (`checkspec.cannot_fail`) is refused when added.
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


def check_repo(u: Unit) -> CheckRepo:
    """The checks' queries, on the unit's store."""
    return CheckRepo(u.store)


def new_check_id() -> str:
    """A fresh check id: chk- and an item-style id."""
    return "chk-" + new_id()


def insert_check(
    u: Unit, plan: str, item: str, role: str, check: Check, writer: str, at: str, *, trusted: bool
) -> CheckRow:
    from todoledger.core.checkspec import cannot_fail

    repo = check_repo(u)
    siblings = repo.checks(plan, [item])
    for existing in siblings:
        if existing.check == check and existing.role == role:
            raise LedgerError(f"{item} already has this {role}: {existing.id} {check.text()}")
    why = cannot_fail(check, [c.check for c in siblings])
    if why is None and check.kind == "cmd":  # a file: check already there that this command writes
        why = next(
            (
                f"it writes {c.check.target}, which the item's check {c.id} looks for"
                for c in siblings
                if c.check.kind == "file" and cannot_fail(c.check, [check]) is not None
            ),
            None,
        )
    if why is not None:
        raise LedgerError(f"check {check.text()} cannot fail ({why}): it would prove nothing")
    route = core.route_of(writer)
    cwd, path = written_in()
    row = CheckRow(
        new_check_id(),
        plan,
        item,
        role,
        check,
        trusted,
        writer,
        at,
        writer if trusted else None,
        route,
        cwd,
        path,
    )
    repo.add(row, trusted_by=writer if trusted else None)
    w = u.op(plan, writer, at, role, summary=f"{role} {row.id} on {item}")
    w.annotate(
        item,
        "check",
        None,
        {"id": row.id, "role": role, "spec": check.canonical(), "trusted": trusted, "route": route},
    )
    u.repo.touch_plan(plan, at)
    return row


def written_in() -> tuple[str, str | None]:
    """Where a check being written will run, and with which PATH: its writer's,
    now. Whoever runs it later (`verify`, `done`, a sweep) runs it there: a
    claimant who runs `done` from a folder, or with a PATH, of its own making
    does not choose what a person's check sees."""
    try:
        cwd = os.getcwd()
    except OSError:
        raise LedgerError("the working folder is gone: a check runs where it is written") from None
    return cwd, os.environ.get("PATH")


def runs_in(row: CheckRow, cwd: str) -> str:
    """The folder a check runs in: where it was written; `cwd` (the caller's)
    only for a check from before that was kept."""
    return row.cwd or cwd


def require_check(u: Unit, plan: str, check_id: str) -> CheckRow:
    """The plan's check of this id; one clear line otherwise."""
    row = check_repo(u).get(check_id)
    if row is None or row.plan != plan:
        raise LedgerError(f"no check {check_id!r} in plan {plan!r}")
    return row


def select(u: Unit, plan: str, refs: Sequence[str]) -> list[CheckRow]:
    """The checks of the plan, or of the named items and check ids (inside a read)."""
    repo = check_repo(u)
    if not refs:
        return repo.checks(plan)
    chosen: dict[str, CheckRow] = {}
    for ref in refs:
        if ref.startswith("chk-"):
            row = require_check(u, plan, ref)
            chosen[row.id] = row
            continue
        item = u.require(plan, ref)
        rows = repo.checks(plan, [item.id])
        if not rows:
            raise LedgerError(f"{item.id} has no checks (add one: todoledger gate add {item.id} SPEC)")
        chosen.update((r.id, r) for r in rows)
    return list(chosen.values())


def states(u: Unit, plan: str, items: Iterable[tuple[str, str]]) -> dict[str, str | None]:
    """Each item's verification; costs one query for a plan without checks.
    Call inside a read or write transaction."""
    pairs = list(items)
    repo = check_repo(u)
    if not pairs or not repo.any_in(plan):
        return {i: (core.REPORTED if s == "completed" else None) for i, s in pairs}
    rows = repo.checks(plan)
    latest_by_spec = repo.latest_receipts(plan)
    latest = {
        r.id: latest_by_spec[(r.id, r.check.canonical())]
        for r in rows
        if (r.id, r.check.canonical()) in latest_by_spec
    }
    claimants = repo.completers(plan) if any(s == "completed" for _, s in pairs) else {}
    return core.derive(pairs, rows, latest, _freshness(), claimants, _proof(u, rows))


def clock() -> float:
    """Seconds since the epoch, now: `TODOLEDGER_NOW` fixes it (how tests age a receipt)."""
    return epoch(now())


def _proof(u: Unit, rows: Sequence[CheckRow]) -> Callable[[CheckRow, str | None], bool]:
    """Does a passing check prove the claimant's claim? Its author must be
    independent of the claimant (`CheckRow.independent`); for a `metric:` gate,
    so must the numbers: measured by an independent check, or accepted by a person."""
    by_id = {r.id: r for r in rows}
    repo = check_repo(u)

    def proves(row: CheckRow, claimant: str | None) -> bool:
        if not row.independent(claimant):
            return False
        if row.check.kind != "metric":
            return True
        runs = [m for m in repo.metric_runs(row.item, row.check.target) if _usable(m)]
        for _, provenance, check_id, _accepted, _writer in runs:
            if provenance != core.MEASURED:
                continue  # accepted by a person (`_usable`): theirs
            source = by_id.get(check_id or "")
            if source is None or not source.independent(claimant):
                return False
        return bool(runs)

    return proves


def _usable(run: tuple[float, str, str | None, str | None, str]) -> bool:
    """A metric value a gate may count: measured, or typed and accepted by a person."""
    from todoledger.core.approval import is_person

    _, provenance, _, accepted_by, _ = run
    return provenance == core.MEASURED or (accepted_by is not None and is_person(accepted_by))


# How far ahead of the reader's clock a receipt may be dated (clocks of two
# machines of a team differ a little); beyond it, it is not current.
FUTURE_SKEW = 300.0


def _freshness() -> Callable[[CheckRow, Receipt], bool]:
    """Is a receipt still current: younger than its check's maximum age, its
    tree state unchanged? One look per distinct tree."""
    from todoledger.checks import tree

    cache: dict[str, bool] = {}
    at_now: list[float] = []

    def fresh(row: CheckRow, r: Receipt) -> bool:
        if not at_now:
            at_now.append(clock())
        if epoch(r.at) - at_now[0] > FUTURE_SKEW:
            return False  # dated ahead of the reader's clock: its writer's clock is not proof
        limit = row.check.age_limit
        if limit is not None and at_now[0] - epoch(r.at) > limit:
            return False
        if r.tree is None:
            return True
        key = repr(sorted(r.tree.items()))
        if key not in cache:
            cache[key] = tree.same(r.tree)
        return cache[key]

    return fresh


def age(r: Receipt, at: float | None = None) -> str:
    """How old a receipt is, for people: `42 s`, `12 min`, `3 h`, `2 d`."""
    seconds = max(0.0, (clock() if at is None else at) - epoch(r.at))
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def gated_items(u: Unit, plan: str) -> frozenset[str]:
    """Checked items that are not verified: those waiting on them are not ready."""
    repo = check_repo(u)
    if not repo.any_in(plan):
        return frozenset()
    items = u.repo.items(plan)
    return core.gated(states(u, plan, [(i.id, i.status) for i in items]))


def write_warnings(u: Unit, plan: str, completed: Sequence[str]) -> list[Finding]:
    """For a whole-list write: gated items it reported completed that are not verified."""
    if not completed or not check_repo(u).any_in(plan):
        return []
    found = states(u, plan, [(i, "completed") for i in completed])
    gated = {r.item: r for r in check_repo(u).checks(plan, list(completed))}
    out: list[Finding] = []
    for item in completed:
        state = found.get(item)
        if item in gated and state not in (core.VERIFIED, core.SELF_CHECKED):
            claimed = core.claimed_label("completed", state)
            shown = (
                f"counted as {claimed!r}, not as completed" if claimed else "kept as reported, not verified"
            )
            out.append(
                Finding(
                    "warning",
                    item,
                    "unverified-completion",
                    f"reported completed, but its check {gated[item].check.text()} is {state}:"
                    f" {shown} (todoledger verify {item})",
                )
            )
    return out


def unproven_by(u: Unit, writer: str, also: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Items that `writer` (or its subagents, `writer:...`) completed, and the items
    `also` names (the session's completions through MCP), still completed, whose
    gates fail, never ran or went stale: what a Stop gate names."""
    out: list[dict[str, Any]] = []
    with u.store.read():
        repo = check_repo(u)
        by_plan: dict[str, list[str]] = {}
        pairs_done = set(repo.completed_by(writer))
        extra = u.repo.items_by_id(sorted(set(also)), deps=False)
        pairs_done |= {(it.plan, it.id) for it in extra.values()}
        for plan, item in sorted(pairs_done):
            by_plan.setdefault(plan, []).append(item)
        for plan, ids in by_plan.items():
            gates: dict[str, list[CheckRow]] = {}
            for row in repo.checks(plan, ids):
                if row.role in core.ROLES:
                    gates.setdefault(row.item, []).append(row)
            found = {i: u.repo.item(i) for i in gates}
            pairs = [(i, it.status) for i, it in found.items() if it is not None and it.status == "completed"]
            if not pairs:
                continue
            verdicts = states(u, plan, pairs)
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
        named = tree.named_inputs(home, row.check.kind, row.check.target) if os.path.isdir(home) else ()
        key = keys[row.id] = (home, row.check.watch, named)
        if key not in trees:
            trees[key] = tree.state(*key) if os.path.isdir(home) else None
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
        value = _median([m[0] for m in runs if _usable(m)])
        typed = _median([m[0] for m in runs if not _usable(m)])
        if check.baseline is not None:
            base = u.repo.item(check.baseline)
            if base is None:
                ids = u.repo.ids_with_prefix(row.plan, check.baseline)
                base = u.repo.item(ids[0]) if len(ids) == 1 else None
            if base is not None:
                baseline = _median([m[0] for m in repo.metric_runs(base.id, check.target) if _usable(m)])
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
    with u.transaction():
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
