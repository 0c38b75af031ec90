"""Sweeps' records, below the façade: a sweep defined as items (a parent, one
child per combination, each with the check that runs it), a person's approval
of its commands, each repeat's receipt and numbers in one transaction, the
setups it started (so that a resumed sweep tears a killed one's down first),
and the results per combination. Running the combinations is `ledger.sweeps`,
above the façade.

A sweep's commands are commands todoledger runs: a person's own sweep runs as
written; any other writer's (an agent, a script) runs only once a person has
approved its whole definition (`approve`), and a changed definition needs
that again. A run is fresh for its recorded inputs (the files its commands
name and the watched paths, by content); the git commit it ran at is kept for
display and decides nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from todoledger.core import sweep as core
from todoledger.core.approval import is_person
from todoledger.core.checkspec import parse
from todoledger.core.model import OPEN_STATUSES, LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.ledger import items
from todoledger.ledger.gates import insert_check
from todoledger.ledger.receipts import receipt_event
from todoledger.store.checks import CheckRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit

Work = tuple[int, CheckRow, dict[str, str], int]  # (index, its run check, its parameters, fresh runs made)


def add(
    u: Unit,
    plan: str,
    writer: str,
    name: str,
    *,
    template: str,
    params: Sequence[str],
    run: str,
    metrics: Sequence[str],
    repeat: int = 1,
    baseline: Sequence[str] = (),
    keep: str | None = None,
    timeout: float = 3600.0,
    stand_in: bool = False,
    **lifecycle: Any,
) -> dict[str, Any]:
    """Define a sweep and expand it into items (a parent, one child per combination).
    `lifecycle`: setup, ready, ready_options, ready_timeout, teardown, clean,
    clean_options, warmup, order, seed, restarts, watch (see `core.sweep.define`).
    `stand_in`: it runs against stand-ins (simulated figures): its run checks are
    marked so, its numbers are never proof, and its results say simulated."""
    sweep = core.define(
        name,
        template=template,
        params=list(params),
        run=run,
        metrics=list(metrics),
        repeat=repeat,
        baseline=list(baseline),
        keep=keep,
        timeout=timeout,
        **lifecycle,
    )
    at = now()
    repo = CheckRepo(u.store)
    person = is_person(writer)  # anyone else's commands wait for a person's approval
    with u.transaction():
        if repo.sweep(plan, name) is not None:
            raise LedgerError(f"sweep {name!r} exists in plan {plan!r}")
        parent = items.add(u, plan, writer, sweep.parent_text(), notes=_notes(sweep))
        repo.add_sweep(plan, name, parent["id"], sweep.as_dict(), writer, at)
        made = []
        for position, (combo, is_base) in enumerate(sweep.combinations()):
            child = items.add(u, plan, writer, sweep.title(combo, is_base), parent=parent["id"])
            check = parse("cmd:" + sweep.command(combo), {"timeout": sweep.timeout})
            row = insert_check(
                u, plan, child["id"], "run", check, writer, at, trusted=person, stand_in=stand_in
            )
            repo.add_sweep_item(plan, name, child["id"], combo, is_base, row.id, position)
            made.append(
                {"id": child["id"], "content": child["content"], "params": combo, "baseline": is_base}
            )
    return {
        "plan": plan,
        "sweep": name,
        "parent": parent["id"],
        "items": made,
        "approved": person,
        "restarts": _restarts(sweep),
    }


def _restarts(sweep: core.Sweep) -> int:
    todo = {i: sweep.repeat for i in range(len(sweep.combinations()))}
    return core.restarts(sweep, core.schedule(sweep, todo, len(todo)))


def _notes(sweep: core.Sweep) -> str:
    parts = [f"sweep {sweep.name}", f"run: {sweep.run}"]
    parts += [f"{k}: {v}" for k, v in (("setup", sweep.setup), ("ready", sweep.ready)) if v]
    if sweep.setup:
        parts.append(f"teardown: {sweep.teardown or 'end the setup process group'}")
    if sweep.clean:
        parts.append(f"clean: {sweep.clean}")
    parts.append(f"metrics: {', '.join(n for n, _ in sweep.metrics)}")
    parts.append(f"repeat {sweep.repeat}" + (f", warmup {sweep.warmup}" if sweep.warmup else ""))
    if sweep.order != "grouped":
        parts.append(f"order {sweep.order}" + (f" (seed {sweep.seed})" if sweep.order == "shuffled" else ""))
    return "; ".join(parts)


def _load(
    u: Unit, plan: str, name: str
) -> tuple[str, core.Sweep, list[tuple[str, dict[str, str], bool, str]]]:
    repo = CheckRepo(u.store)
    found = repo.sweep(plan, name)
    if found is None:
        raise LedgerError(f"no sweep {name!r} in plan {plan!r} (todoledger sweep add)")
    return found[0], core.Sweep.from_dict(found[1]), repo.sweep_items(plan, name)


def definition(u: Unit, plan: str, name: str) -> dict[str, Any]:
    """The sweep, who wrote it, whether it may run, and each combination's commands."""
    repo = CheckRepo(u.store)
    with u.store.read():
        parent, sweep, rows = _load(u, plan, name)
        approval = repo.sweep_approval(plan, name)
        assert approval is not None
        checks = {r[3]: repo.get(r[3]) for r in rows}
        held = repo.runner(plan, name)
    created_by, approved_by, approved_at, digest = approval
    return {
        "plan": plan,
        "sweep": name,
        "parent": parent,
        "definition": sweep.as_dict(),
        "created_by": created_by,
        "approved_by": approved_by if digest == sweep.digest() else None,
        "approved_at": approved_at if digest == sweep.digest() else None,
        "runnable": _why_not(sweep, approval, list(checks.values())) is None,
        "combinations": [
            {
                "item": item,
                "params": combo,
                "baseline": is_base,
                "check": check_id,
                "commands": sweep.commands(combo),
            }
            for item, combo, is_base, check_id in rows
        ],
        "restarts": _restarts(sweep),
        "runner": _runner_view(held),
    }


def _why_not(
    sweep: core.Sweep, approval: tuple[str, str | None, str | None, str | None], checks: list[CheckRow | None]
) -> str | None:
    """Why the sweep may not run (None: it may): a person wrote it, or a person
    approved its definition as it is now."""
    created_by, approved_by, _, digest = approval
    if any(c is None for c in checks):
        return "a combination's run check is missing or unreadable"
    rows = [c for c in checks if c is not None]
    approved = approved_by is not None and is_person(approved_by) and digest == sweep.digest()
    if is_person(created_by) or approved:
        untrusted = [c for c in rows if not c.trusted]
        if untrusted:
            return f"{untrusted[0].id} is not trusted (todoledger trust {untrusted[0].id})"
        return None
    if not sweep.has_lifecycle and rows and all(c.trusted and c.person_backed for c in rows):
        return None  # a person trusted every command it runs, one by one
    return (
        f"written by {created_by}, not a person: its commands run once a person approves them"
        f" (todoledger sweep trust {sweep.name})"
    )


def approve(
    u: Unit,
    plan: str,
    writer: str,
    name: str,
    *,
    shown: Callable[[dict[str, Any]], bool] = lambda d: True,
) -> dict[str, Any] | None:
    """A person approves a sweep's whole definition, every combination's
    commands as `definition` shows them (`shown` is asked); its run checks are
    trusted with it. None when `shown` says no."""
    from todoledger.core.approval import require_person
    from todoledger.ledger.signed import person, registry, sign

    with u.store.read():
        signed = bool(registry(u)["keys"])
    if not signed:
        require_person("sweep trust", writer)  # refused before anything is shown, as before
    found = definition(u, plan, name)
    if not shown(found):
        return None
    writer = person(u, "sweep trust", writer)  # after the person saw every command: then the passphrase
    at = now()
    repo = CheckRepo(u.store)
    with u.transaction():
        parent, sweep, rows = _load(u, plan, name)
        if sweep.as_dict() != found["definition"]:
            raise LedgerError(f"sweep {name} changed while it was shown; run sweep trust again")
        digest = sweep.digest()
        sign(u, "sweep trust", plan, parent, {"sweep": name, "digest": digest})
        repo.approve_sweep(plan, name, writer, at, digest)
        w = u.op(plan, writer, at, "trust", summary=f"approved sweep {name} ({len(rows)} combinations)")
        w.annotate(parent, "sweep_approved", None, {"sweep": name, "digest": digest})
        for item, _, _, check_id in rows:
            row = repo.get(check_id)
            if row is not None and not (row.trusted and row.person_backed):
                repo.trust(row, writer, at)
                w.annotate(item, "trust", None, {"id": row.id, "spec": row.check.canonical()})
        u.repo.touch_plan(plan, at)
    return found | {"approved_by": writer, "approved_at": at, "runnable": True}


def finish(u: Unit, plan: str, writer: str, name: str) -> None:
    """Complete the sweep's parent once every combination is completed."""
    at = now()
    with u.transaction():
        parent_id, _, rows = _load(u, plan, name)
        parent = u.repo.item(parent_id)
        children = u.repo.items_by_id([r[0] for r in rows])
        if parent is None or parent.status not in OPEN_STATUSES:
            return
        if any(c.status != "completed" for c in children.values()):
            return
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {name} complete")
        w.set(
            parent.id,
            "evidence",
            parent.evidence,
            f"{len(children)} combinations measured: todoledger sweep results {name}",
        )
        w.set(parent.id, "status", parent.status, "completed")
        u.repo.touch_plan(plan, at)


def record_repeat(
    u: Unit,
    plan: str,
    writer: str,
    sweep: core.Sweep,
    check: CheckRow,
    receipt: Receipt,
    values: dict[str, float],
    k: int,
) -> None:
    """One repeat, in one transaction: its receipt, its numbers, and after the
    last repeat (`k`: the fresh runs the combination has with this one) the
    completed item; a kill loses at most the repeat running."""
    repo = CheckRepo(u.store)
    at = receipt.at
    with u.transaction():
        item = u.require(plan, check.item)
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {sweep.name} {item.id} run {k}/{sweep.repeat}")
        repo.add_receipt(plan, receipt)
        w.annotate(item.id, "receipt", None, receipt_event(check, receipt))
        if receipt.result == "holds":
            for metric, value in values.items():
                index = repo.add_metric(
                    plan, item.id, metric, value, writer, at, provenance="measured", check_id=check.id
                )
                w.annotate(
                    item.id,
                    "metric",
                    None,
                    {
                        "name": metric,
                        "value": value,
                        "run": index,
                        "provenance": "measured",
                        "check": check.id,
                    },
                )
        status = item.status
        if status == "pending":
            w.set(item.id, "status", "pending", "in_progress")
            status = "in_progress"
        if receipt.result == "holds" and k >= sweep.repeat:
            medians = ", ".join(
                f"{n} median {core.summary(_measured(repo, item.id, n, check.id)[-sweep.repeat :])['median']:g}"
                for n, _ in sweep.metrics
            )
            w.set(
                item.id, "evidence", item.evidence, f"{sweep.repeat} runs of {check.check.text()}: {medians}"
            )
            if status == "in_progress":
                w.set(item.id, "status", "in_progress", "completed")
        u.repo.touch_plan(plan, at)


def _measured(repo: CheckRepo, item: str, name: str, check_id: str) -> list[float]:
    """The values a sweep's run check measured on the item, oldest first."""
    return [v for v, how, by, _, _ in repo.metric_runs(item, name) if how == "measured" and by == check_id]


def exists(u: Unit, plan: str, name: str) -> bool:
    """Is there a sweep of this name in the plan?"""
    with u.store.read():
        return CheckRepo(u.store).sweep(plan, name) is not None


def listing(u: Unit, plan: str) -> list[dict[str, str]]:
    """The sweeps of a plan, oldest first: name and parent item."""
    with u.store.read():
        return [{"name": n, "parent": p} for n, p in CheckRepo(u.store).sweeps_of(plan)]


def _freshness() -> Callable[[dict[str, Any] | None], bool]:
    """Is a run fresh for its recorded inputs? One look per distinct record."""
    from todoledger.checks import tree

    cache: dict[str, bool] = {}

    def fresh(state: dict[str, Any] | None) -> bool:
        if state is None:
            return True
        key = repr(sorted(state.items()))
        if key not in cache:
            cache[key] = tree.same(state)
        return cache[key]

    return fresh


def _runs(repo: CheckRepo, check: CheckRow) -> list[Receipt]:
    """The passing receipts of the run check's current text, oldest first."""
    spec = check.check.canonical()
    return [
        r
        for r in repo.receipts(check.plan, check.item)
        if r.check == check.id and r.spec == spec and r.result == "holds"
    ]


def results(u: Unit, plan: str, name: str, *, include_stale: bool = False) -> dict[str, Any]:
    """Per combination and metric: median/min/max/spread, ratio to the baseline,
    verdict and flags, with stale runs left out unless `include_stale`; where
    the runs ran, and what they depend on."""
    repo = CheckRepo(u.store)
    fresh = _freshness()
    envs: list[dict[str, Any]] = []
    inputs: set[str] = set()
    stale_total = 0
    with u.store.read():
        _, sweep, rows = _load(u, plan, name)
        runs: core.Runs = []
        simulated = False
        for item, combo, is_base, check_id in rows:
            check = repo.get(check_id)
            simulated = simulated or (check is not None and check.stand_in)
            passed = _runs(repo, check) if check is not None else []
            flags = [fresh(r.tree) for r in passed]
            stale_total += flags.count(False)
            for r in passed:
                if r.env is not None:
                    envs.append({k: v for k, v in r.env.items() if k not in ("command", "params")})
                if r.tree:
                    inputs.update((r.tree.get("inputs") or {}).keys())
                    inputs.update((r.tree.get("watch") or {}).keys())
            values: dict[str, list[tuple[float, bool]]] = {}
            for metric, _ in sweep.metrics:
                got = _measured(repo, item, metric, check_id)
                # Each passing run recorded one value of every metric, in the same transaction.
                marks = (
                    flags[-len(got) :] if len(flags) >= len(got) else [True] * (len(got) - len(flags)) + flags
                )
                values[metric] = list(zip(got, marks, strict=True))
            runs.append((combo, is_base, values))
        setups = repo.setups(plan, name)
    distinct: list[str] = []
    for env in envs:
        line = core.env_line(env)
        if line not in distinct:
            distinct.append(line)
    return {
        "plan": plan,
        "sweep": name,
        "keep": sweep.keep,
        "simulated": simulated,  # run against stand-ins: its figures are no measurement of the real thing
        "rows": core.results(sweep, runs, include_stale=include_stale),
        "include_stale": include_stale,
        "stale": stale_total,
        "environments": distinct,
        "inputs": sorted(inputs),
        "order": sweep.order,
        "warmup": sweep.warmup,
        "setups": [
            {
                k: s[k]
                for k in (
                    "item",
                    "host",
                    "pid",
                    "started_at",
                    "ended_at",
                    "outcome",
                    "ready",
                    "teardown",
                    "clean",
                )
            }
            for s in setups
        ],
    }


def pending(u: Unit, plan: str, name: str, *, stale: bool = False) -> tuple[core.Sweep, int, list[Work]]:
    """The sweep, its number of combinations, and the combinations still to run:
    (index, the check that runs it, its parameters, fresh runs already made).
    `stale`: completed combinations whose runs went stale run again too.
    Refuses a sweep no person wrote or approved."""
    repo = CheckRepo(u.store)
    fresh = _freshness()
    with u.store.read():
        _, sweep, rows = _load(u, plan, name)
        approval = repo.sweep_approval(plan, name)
        assert approval is not None
        checks = [repo.get(r[3]) for r in rows]
        why = _why_not(sweep, approval, checks)
        if why is not None:
            raise LedgerError(f"sweep {name}: {why}; nothing was run")
        work: list[Work] = []
        for index, ((item_id, combo, _, _), check) in enumerate(zip(rows, checks, strict=True)):
            item = u.repo.item(item_id)
            if check is None or item is None or item.status in ("cancelled", "dropped"):
                continue
            made = sum(1 for r in _runs(repo, check) if fresh(r.tree))
            if item.status == "completed" and (not stale or made >= sweep.repeat):
                continue
            work.append((index, check, combo, made))
    return sweep, len(rows), work


def live_setups(u: Unit, plan: str, name: str) -> list[dict[str, Any]]:
    """The setups the sweep started and never tore down (a run killed while they ran)."""
    repo = CheckRepo(u.store)
    with u.store.read():
        _, _, rows = _load(u, plan, name)
        combos = {item: combo for item, combo, _, _ in rows}
        return [s | {"params": combos.get(s["item"], {})} for s in repo.setups(plan, name, live=True)]


def setup_started(
    u: Unit,
    plan: str,
    writer: str,
    name: str,
    item: str,
    *,
    host: str,
    pid: int,
    ticks: str | None,
    command: str,
    log: str,
) -> int:
    """Record a setup just started (before anything waits on it): its row's key."""
    at = now()
    repo = CheckRepo(u.store)
    with u.transaction():
        seq = repo.add_setup(
            plan, name, item, host=host, pid=pid, ticks=ticks, command=command, log=log, at=at, by=writer
        )
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {name} {item} setup started")
        w.annotate(item, "setup", None, {"pid": pid, "host": host, "command": command})
        u.repo.touch_plan(plan, at)
    return seq


def setup_ended(
    u: Unit,
    plan: str,
    writer: str,
    name: str,
    item: str,
    seq: int,
    *,
    teardown: dict[str, Any],
    clean: dict[str, Any] | None,
    outcome: str,
    ready: dict[str, Any] | None = None,
) -> None:
    """A setup torn down: its ready check's outcome (kept until now: one write less
    per combination), how it ended, what its clean check found, and why it ended."""
    at = now()
    repo = CheckRepo(u.store)
    with u.transaction():
        if ready is not None:
            repo.setup_ready(seq, ready)
        repo.end_setup(seq, at, teardown, clean, outcome)
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {name} {item} torn down ({outcome})")
        if ready is not None:
            w.annotate(item, "ready", None, ready)
        w.annotate(item, "teardown", None, {"teardown": teardown, "clean": clean, "outcome": outcome})
        u.repo.touch_plan(plan, at)


def note(u: Unit, plan: str, writer: str, name: str, item: str, field: str, value: dict[str, Any]) -> None:
    """An event of a sweep's lifecycle on one of its items (a clean check with no setup, a stop)."""
    at = now()
    with u.transaction():
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {name} {item} {field}: {value.get('result', '')}")
        w.annotate(item, field, None, value)
        u.repo.touch_plan(plan, at)


# one runner per sweep -------------------------------------------------------------------------
BEAT = 5.0  # seconds between two heartbeats of a runner (a row update, not an event)
LAPSE = 30.0  # seconds without a heartbeat after which a runner on another host counts as gone


def _runner_view(held: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded runner as `sweep show` and a refusal tell it: who, since when, on what,
    its heartbeat's age, and whether it is alive as far as this host can tell."""
    if held is None:
        return None
    alive, how = runner_alive(held)
    import time

    return held | {
        "beat_age_s": round(max(0.0, time.time() - float(held["beat"])), 1),
        "alive": alive,
        "how": how,
    }


def runner_alive(held: dict[str, Any]) -> tuple[bool, str]:
    """Is the recorded runner still running? On this host its pid and start time
    decide, whatever its heartbeat says; on another host, a heartbeat in the last
    30 s (`LAPSE`). (alive, why in a few words)."""
    import time

    from todoledger.checks import lifecycle

    if held["host"] == lifecycle.host():
        pid = int(held["pid"])
        ticks = lifecycle.start_ticks(pid)
        if held["ticks"] is not None and ticks is not None:
            if ticks != held["ticks"]:
                return False, f"pid {pid} is another process now"
            if not lifecycle.running(pid, ticks):  # killed, and not reaped yet by its parent
                return False, f"pid {pid} has ended (not yet reaped)"
            return True, "its process is alive on this host"
        if ticks is None and os.path.isdir("/proc/self"):
            return False, f"pid {pid} is gone"
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False, f"pid {pid} is gone"
        except OSError:
            pass
        return True, "its process is alive on this host"
    age = time.time() - float(held["beat"])
    if age > LAPSE:
        return False, f"no heartbeat from {held['host']} for {age:.0f} s"
    return True, f"a heartbeat from {held['host']} {age:.0f} s ago"


def busy_line(name: str, held: dict[str, Any]) -> str | None:
    """The one line that refuses to run a sweep its live runner `held` runs; None: it is not alive."""
    alive, how = runner_alive(held)
    if not alive:
        return None
    doing = f", on {held['doing']}" if held["doing"] else ""
    return (
        f"sweep {name} is already being run by pid {held['pid']} on {held['host']} since"
        f" {held['started_at']}{doing} ({how}): watch it with `todoledger sweep show {name}`;"
        " nothing was run and nothing of that run was touched"
    )


def runner_busy(u: Unit, plan: str, name: str) -> str | None:
    """`busy_line` for the sweep's recorded runner, if any (a read: nothing is taken)."""
    with u.store.read():
        _load(u, plan, name)
        held = CheckRepo(u.store).runner(plan, name)
    return None if held is None else busy_line(name, held)


def claim_runner(u: Unit, plan: str, writer: str, name: str, *, pid: int, ticks: str | None) -> None:
    """Make this process the sweep's one runner, or refuse in one line naming the
    live runner (host, pid, since when, the combination it is on) and how to watch it."""
    import time

    from todoledger.checks import lifecycle

    repo = CheckRepo(u.store)
    here = lifecycle.host()
    with u.transaction(plan):
        _load(u, plan, name)
        held = repo.runner(plan, name)
        if held is not None and not (held["host"] == here and int(held["pid"]) == pid):
            busy = busy_line(name, held)
            if busy is not None:
                raise LedgerError(busy)
        repo.set_runner(
            plan, name, host=here, pid=pid, ticks=ticks, writer=writer, at=now(), beat=time.time()
        )


def beat_runner(u: Unit, plan: str, name: str, *, pid: int, doing: str | None = None) -> bool:
    """The runner's heartbeat: a row update, never an event. False when the sweep
    is no longer this process's to run (another took it after a lapse)."""
    import time

    from todoledger.checks import lifecycle

    repo = CheckRepo(u.store)
    with u.transaction(plan):
        return repo.beat_runner(plan, name, lifecycle.host(), pid, time.time(), doing)


def release_runner(u: Unit, plan: str, name: str, *, pid: int) -> None:
    from todoledger.checks import lifecycle

    repo = CheckRepo(u.store)
    with u.transaction(plan):
        repo.drop_runner(plan, name, lifecycle.host(), pid)
