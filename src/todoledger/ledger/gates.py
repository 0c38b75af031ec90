"""Gates: the checks on items, below the façade. Each check's record (who wrote it,
where it runs), what each item's verification state is, and which items are gated
(completed, but not proven: what waits for them is not ready). Running checks and
recording their receipts is `ledger.receipts`, above. Every function takes a `Unit`.

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

from todoledger.core import verification as core
from todoledger.core.checkspec import Check
from todoledger.core.ids import new_id
from todoledger.core.model import Finding, LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.ledger.values import epoch
from todoledger.store.checks import CheckRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from todoledger.ledger.unit import Unit


def check_repo(u: Unit) -> CheckRepo:
    """The checks' queries, on the unit's store."""
    return CheckRepo(u.store)


def new_check_id() -> str:
    """A fresh check id: chk- and an item-style id."""
    return "chk-" + new_id()


def insert_check(
    u: Unit,
    plan: str,
    item: str,
    role: str,
    check: Check,
    writer: str,
    at: str,
    *,
    trusted: bool,
    stand_in: bool = False,
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
        stand_in,
    )
    repo.add(row, trusted_by=writer if trusted else None)
    w = u.op(plan, writer, at, role, summary=f"{role} {row.id} on {item}")
    w.annotate(
        item,
        "check",
        None,
        {"id": row.id, "role": role, "spec": check.canonical(), "trusted": trusted, "route": route}
        | ({"stand_in": True} if stand_in else {}),
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
    return states_and_held(u, plan, items)[0]


def states_and_held(
    u: Unit, plan: str, items: Iterable[tuple[str, str]]
) -> tuple[dict[str, str | None], frozenset[str]]:
    """Each item's verification, and the items a gate of which does not open
    (`core.held_back`): what waits on them is not ready."""
    pairs = list(items)
    repo = check_repo(u)
    if not pairs or not repo.any_in(plan):
        return {i: (core.REPORTED if s == "completed" else None) for i, s in pairs}, frozenset()
    rows = repo.checks(plan)
    latest_by_spec = repo.latest_receipts(plan)
    latest = {}
    if latest_by_spec:
        # canonical() writes JSON: once per parsed check, which rows of the same spec share
        # (store/checks.py); a plan none of whose checks ever ran has no receipt to match
        texts: dict[int, str] = {}
        for r in rows:
            text = texts.get(id(r.check))
            if text is None:
                text = texts[id(r.check)] = r.check.canonical()
            if (r.id, text) in latest_by_spec:
                latest[r.id] = latest_by_spec[(r.id, text)]
    claimants = repo.completers(plan) if any(s == "completed" for _, s in pairs) else {}
    fresh, proof = _freshness(), _proof(u, rows)
    return core.derive_and_hold(pairs, rows, latest, fresh, claimants, proof)


def clock() -> float:
    """Seconds since the epoch, now: `TODOLEDGER_NOW` fixes it (how tests age a receipt)."""
    return epoch(now())


def _proof(u: Unit, rows: Sequence[CheckRow]) -> Callable[[CheckRow, str | None], str]:
    """The state a passing, fresh check gives the claimant's claim
    (`core.passing_state`: who wrote or trusted the check); for a `metric:` gate,
    also where its numbers came from: typed ones give `typed`, typed ones a person
    accepted `accepted by <person>`, measured ones the state of the check that
    measured them, whichever is weakest."""
    by_id = {r.id: r for r in rows}
    repo = check_repo(u)

    def proves(row: CheckRow, claimant: str | None) -> str:
        own = core.passing_state(row, claimant)
        if row.check.kind != "metric" or own == core.STAND_IN:
            return own
        runs = repo.metric_runs(row.item, row.check.target)
        counted = [m for m in runs if usable(m)]
        if not counted:
            return core.TYPED if runs else own
        found = [own]
        for _, provenance, check_id, accepted, _writer in counted:
            if provenance != core.MEASURED:
                found.append(core.accepted_by(accepted or "a person"))
                continue
            source = by_id.get(check_id or "")
            found.append(core.passing_state(source, claimant) if source is not None else core.SELF_CHECKED)
        # A person's gate met by a person's accepted numbers reads as accepted, never verified.
        state = core.weakest(found) or own
        return state

    return proves


def usable(run: tuple[float, str, str | None, str | None, str]) -> bool:
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
            from todoledger.checks import tree  # only for a receipt that ran against a tree

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
    return states_and_held(u, plan, [(i.id, i.status) for i in items])[1]


def write_warnings(u: Unit, plan: str, completed: Sequence[str]) -> list[Finding]:
    """For a whole-list write: gated items it reported completed that are not verified."""
    if not completed or not check_repo(u).any_in(plan):
        return []
    found = states(u, plan, [(i, "completed") for i in completed])
    gated = {r.item: r for r in check_repo(u).checks(plan, list(completed))}
    out: list[Finding] = []
    for item in completed:
        state = found.get(item)
        if item in gated and state not in (core.VERIFIED, core.SELF_CHECKED, core.CROSS_CHECKED):
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
