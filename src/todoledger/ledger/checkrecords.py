"""The checks' records: adding, removing and trusting checks, and the numbers
(metrics) recorded on items. Every function takes a `Unit`, the plan and the
writer, resolved by the façade."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from todoledger.core import verification as core
from todoledger.core.approval import is_person
from todoledger.core.checkspec import parse
from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow
from todoledger.ledger.gates import check_repo, insert_check, require_check, select, states

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit

MAX_METRICS_PER_CALL = 100


def add_check(
    u: Unit,
    plan: str,
    writer: str,
    ref: str,
    spec: str,
    options: dict[str, Any] | None = None,
    *,
    role: str = "gate",
    trusted: bool = True,
    stand_in: bool = False,
) -> dict[str, Any]:
    """Give an item a check (a completion gate by default). `trusted=False` for
    checks that did not come from this machine's user (import, HTTP). `stand_in`:
    its author says it runs against a stand-in (its passing is never proof)."""
    if role not in core.ROLES:
        raise LedgerError(f"role must be one of {', '.join(core.ROLES)}, not {role!r}")
    check = parse(spec, options)
    if is_person(writer) and trusted:  # a person's check vouches: on a signed ledger, signed
        from todoledger.ledger.signed import person

        writer = person(u, "gate add (a person's)", writer)
    at = now()
    with u.transaction(plan):
        item = u.require(plan, ref)
        if is_person(writer) and trusted:
            from todoledger.ledger.signed import sign

            sign(u, "gate add (a person's)", plan, item.id, {"role": role, "spec": check.canonical()})
        if not is_person(writer):
            # Another agent's check on a leased item would change what its holder must pass;
            # a person adding a gate only asks for more proof, and may.
            u.leased(item, writer, at)
        row = insert_check(u, plan, item.id, role, check, writer, at, trusted=trusted, stand_in=stand_in)
        return row.as_dict()


def clear_stand_in(u: Unit, plan: str, writer: str, check_id: str) -> dict[str, Any]:
    """A person says a check runs against the real thing: its stand-in mark goes.
    Only a person: an agent would turn its own stand-in into proof (on a signed
    ledger, by the person's signature)."""
    from todoledger.ledger.signed import person, sign

    writer = person(u, "gate real", writer)
    at = now()
    with u.transaction(plan):
        row = require_check(u, plan, check_id)
        if not row.stand_in:
            raise LedgerError(f"{check_id} is not marked as a stand-in")
        sign(u, "gate real", plan, row.item, {"check": row.id, "spec": row.check.canonical()})
        check_repo(u).clear_stand_in(row.id)
        w = u.op(plan, writer, at, "trust", summary=f"{row.id} runs against the real thing")
        w.annotate(row.item, "stand_in", True, False)
        u.repo.touch_plan(plan, at)
        return {"id": row.id, "item": row.item, "stand_in": False, "by": writer}


def remove_check(u: Unit, plan: str, writer: str, check_id: str, *, force: bool = False) -> dict[str, Any]:
    """Remove a check. Not the check a completion has not passed: without it the
    completion would read as reported, not failed, and what waits for it would
    go ahead; `force` does it all the same, and is recorded. Only a person removes
    a check: an agent would remove the proof its own claim is waiting for."""
    from todoledger.ledger.signed import person, sign

    writer = person(u, "gate remove", writer)
    at = now()
    with u.transaction():
        row = require_check(u, plan, check_id)
        sign(u, "gate remove", plan, row.item, {"check": row.id, "spec": row.check.canonical()})
        item = u.require(plan, row.item)
        state = states(u, plan, [(item.id, item.status)])[item.id] if item.status == "completed" else None
        unpassed = state is not None and state != core.VERIFIED
        if unpassed and not force:
            raise LedgerError(
                f"{row.id} is a check of {item.id}, which was completed without passing it ({state}):"
                f" removing it would hide that; reopen {item.id} first (force overrides, and is recorded)"
            )
        check_repo(u).remove(row.id)
        w = u.op(plan, writer, at, "uncheck", summary=f"removed {row.role} {row.id} from {row.item}")
        if unpassed:
            w.annotate(row.item, "forced", None, {"past": "check removal", "check": row.id, "was": state})
        w.annotate(row.item, "check", {"id": row.id, "spec": row.check.canonical()}, None)
        u.repo.touch_plan(plan, at)
    return row.as_dict()


def checks(u: Unit, plan: str, refs: Sequence[str] = ()) -> list[CheckRow]:
    """The checks of the plan, or of the named items / check ids."""
    with u.store.read():
        return select(u, plan, refs)


def trust(
    u: Unit,
    plan: str,
    writer: str,
    refs: Sequence[str] = (),
    *,
    approve: Callable[[CheckRow], bool] = lambda row: True,
) -> list[dict[str, Any]]:
    """Approve the exact text of untrusted checks; `approve` is asked for each
    (the CLI shows the spec, who wrote it and whether it was ever seen failing,
    and asks). A person may also approve an agent's own check: its passing then
    proves that agent's claim (`self-checked` becomes `verified`). Only a person
    trusts. Returns the approved checks."""
    from todoledger.core.approval import require_person
    from todoledger.ledger.signed import is_signed, person, sign

    if not is_signed(u):
        require_person("trust", writer)  # refused before anything is shown, as before
    pending = awaiting_trust(u, plan, writer, refs)
    approved = [r for r in pending if approve(r)]
    if not approved:
        return []
    writer = person(u, "trust", writer)  # after the person saw what they trust: then the passphrase
    at = now()
    with u.transaction():
        repo = check_repo(u)
        w = u.op(plan, writer, at, "trust", summary=f"trusted {len(approved)} checks")
        sign(u, "trust", plan, None, [{"id": r.id, "spec": r.check.canonical()} for r in approved])
        done: list[dict[str, Any]] = []
        for row in approved:
            current = repo.get(row.id)
            if current is None or current.check != row.check:
                raise LedgerError(f"{row.id} changed while it was shown; run trust again")
            repo.trust(row, writer, at)
            w.annotate(row.item, "trust", None, {"id": row.id, "spec": row.check.canonical()})
            done.append({**row.as_dict(), "trusted": True})
        u.repo.touch_plan(plan, at)
    return done


def awaiting_trust(u: Unit, plan: str, writer: str, refs: Sequence[str] = ()) -> list[CheckRow]:
    """The checks `writer` could approve: untrusted ones, and for a person
    those no person has approved yet (an agent's own, trusted only to run)."""
    from todoledger.ledger.signed import is_signed

    # On a signed ledger whoever signs is the person, whatever route runs `trust`.
    person = is_person(writer) or is_signed(u)
    return [r for r in checks(u, plan, refs) if not r.trusted or (person and not r.person_backed)]


def failing_history(u: Unit, plan: str) -> dict[str, int]:
    """check id -> how many receipts saw it fail or not run (absent: never seen failing)."""
    with u.store.read():
        return check_repo(u).failure_counts(plan)


def record_metrics(
    u: Unit, plan: str, writer: str, ref: str, metrics: dict[str, float] | Sequence[tuple[str, float]]
) -> list[dict[str, Any]]:
    """Store numbers on an item (each a new run of that metric) with their events.
    They are `typed`: a writer said so. A `metric:` gate counts them only once a
    person accepts them (`accept_metrics`); a person's own typed value is accepted as typed."""
    pairs = list(metrics.items()) if isinstance(metrics, dict) else list(metrics)
    if len(pairs) > MAX_METRICS_PER_CALL:
        raise LedgerError(f"{len(pairs)} metrics in one call; the limit is {MAX_METRICS_PER_CALL}")
    checked = [metric_pair(name, value) for name, value in pairs]
    at = now()
    out: list[dict[str, Any]] = []
    with u.transaction(plan):
        item = u.require(plan, ref)
        repo = check_repo(u)
        w = u.op(plan, writer, at, "metric", summary=", ".join(f"{n}={v:g}" for n, v in checked))
        for name, value in checked:
            run = repo.add_metric(plan, item.id, name, value, writer, at)
            w.annotate(
                item.id, "metric", None, {"name": name, "value": value, "run": run, "provenance": "typed"}
            )
            out.append({"item": item.id, "name": name, "value": value, "run": run, "provenance": "typed"})
        from todoledger.ledger.signed import registry

        # On a signed ledger a typed number is accepted only by a signed accept-metric.
        if is_person(writer) and not registry(u)["keys"]:
            for name in dict.fromkeys(n for n, _ in checked):
                repo.accept_metrics(item.id, name, writer)
        u.repo.touch_plan(plan, at)
    return out


def accept_metrics(u: Unit, plan: str, writer: str, ref: str, name: str) -> dict[str, Any]:
    """A person accepts the typed values of a metric on an item, so that a
    `metric:` gate may count them. Person-only: an agent gets one line."""
    from todoledger.ledger.signed import is_signed, person, sign

    if not is_person(writer) and not is_signed(u):
        raise LedgerError(
            f"accept-metric: only a person may accept a typed number ({writer} is an agent);"
            " a person runs it from a terminal or the board"
        )
    writer = person(u, "accept-metric", writer)  # on a signed ledger: whoever signs, else refused
    name, _ = metric_pair(name, 0.0)
    at = now()
    with u.transaction(plan):
        item = u.require(plan, ref)
        repo = check_repo(u)
        sign(u, "accept-metric", plan, item.id, {"metric": name})
        count = repo.accept_metrics(item.id, name, writer)
        if not count:
            raise LedgerError(f"{item.id} has no typed {name} waiting for acceptance")
        w = u.op(plan, writer, at, "accept", summary=f"accepted {count} typed {name} on {item.id}")
        w.annotate(item.id, "metric_accepted", None, {"name": name, "count": count})
        u.repo.touch_plan(plan, at)
    return {"item": item.id, "name": name, "accepted": count, "by": writer}


def parse_metric(text: str) -> tuple[str, float]:
    """`tok_s=60` -> ("tok_s", 60.0); one clear line otherwise."""
    name, sep, value = text.partition("=")
    if not sep:
        raise LedgerError(f"metric {text!r}: write NAME=NUMBER (e.g. tok_s=60)")
    try:
        number = float(value)
    except ValueError:
        raise LedgerError(f"metric {text!r}: {value.strip()!r} is not a number") from None
    return metric_pair(name.strip(), number)


def metric_pair(name: str, value: Any) -> tuple[str, float]:
    """A metric's name and number, checked; one clear line otherwise."""
    import math
    import re

    if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$", name):
        raise LedgerError(f"metric name {name!r}: letters, digits, _ and . (at most 64)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LedgerError(f"metric {name}: {value!r} is not a finite number")
    return name, float(value)


def metrics(u: Unit, plan: str, ref: str | None = None) -> list[dict[str, Any]]:
    """The numbers recorded on the plan's items (or on one item), each run in order."""
    with u.store.read():
        item = u.require(plan, ref).id if ref else None
        return check_repo(u).metrics(plan, item)


def receipts(u: Unit, plan: str, ref: str | None = None) -> list[dict[str, Any]]:
    """The receipts of the plan's checks (or of one item's), oldest first."""
    from todoledger.ledger.gates import age, clock

    with u.store.read():
        item = u.require(plan, ref).id if ref else None
        rows = check_repo(u).receipts(plan, item)
    at = clock() if rows else 0.0
    # Every receipt says how old it is: a liveness receipt stands for minutes, not for ever.
    return [r.as_dict() | {"age": age(r, at)} for r in rows]


def sweep_repeats(u: Unit, plan: str) -> dict[str, int]:
    """item -> how many runs its sweep asks for."""
    with u.store.read():
        return check_repo(u).sweep_repeats(plan)
