"""Parameter sweeps (service layer, no SQL): one item per combination under a
parent item; `run` runs each pending combination's command, records every
repeat (receipt and metrics) as it finishes, and completes the item after its
last repeat. An interrupted run, even by SIGKILL, resumes where it stopped:
finished repeats and combinations never run again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from todoledger.core import sweep as core
from todoledger.core.checkspec import parse
from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.service import Ledger, default_plan, default_writer
from todoledger.store.checks import CheckRepo
from todoledger.verification import _event, _insert


def add(
    lg: Ledger,
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
    plan: str | None = None,
    writer: str | None = None,
) -> dict[str, Any]:
    """Define a sweep and expand it into items (a parent, one child per combination)."""
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
    )
    plan = plan or default_plan()
    writer = writer or default_writer()
    at = now()
    repo = CheckRepo(lg.store)
    with lg._transaction():
        if repo.sweep(plan, name) is not None:
            raise LedgerError(f"sweep {name!r} exists in plan {plan!r}")
        parent = lg.add(f"Sweep {name}: {template}", plan=plan, writer=writer, notes=_notes(sweep))
        repo.add_sweep(plan, name, parent["id"], sweep.as_dict(), writer, at)
        items = []
        for position, (combo, is_base) in enumerate(sweep.combinations()):
            child = lg.add(sweep.title(combo, is_base), plan=plan, writer=writer, parent=parent["id"])
            check = parse("cmd:" + sweep.command(combo), {"timeout": sweep.timeout})
            row = _insert(lg, plan, child["id"], "run", check, writer, at, trusted=True)
            repo.add_sweep_item(plan, name, child["id"], combo, is_base, row.id, position)
            items.append(
                {"id": child["id"], "content": child["content"], "params": combo, "baseline": is_base}
            )
    return {"plan": plan, "sweep": name, "parent": parent["id"], "items": items}


def _notes(sweep: core.Sweep) -> str:
    return f"run: {sweep.run}; metrics: {', '.join(n for n, _ in sweep.metrics)}; repeat {sweep.repeat}"


def _load(
    lg: Ledger, plan: str, name: str
) -> tuple[str, core.Sweep, list[tuple[str, dict[str, str], bool, str]]]:
    repo = CheckRepo(lg.store)
    found = repo.sweep(plan, name)
    if found is None:
        raise LedgerError(f"no sweep {name!r} in plan {plan!r} (todoledger sweep add)")
    return found[0], core.Sweep.from_dict(found[1]), repo.sweep_items(plan, name)


Progress = Callable[[dict[str, Any]], None]


def run(
    lg: Ledger,
    name: str,
    *,
    parallel: int = 1,
    plan: str | None = None,
    writer: str | None = None,
    cwd: str | None = None,
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every pending combination (`parallel` at a time), each `repeat` times."""
    from todoledger.checks import run as runner
    from todoledger.checks import tree

    plan = plan or default_plan()
    writer = writer or default_writer()
    cwd = cwd or os.getcwd()
    repo = CheckRepo(lg.store)
    with lg.store.read():
        _, sweep, rows = _load(lg, plan, name)
        work = []
        for index, (item_id, combo, _, check_id) in enumerate(rows):
            check = repo.get(check_id)
            item = lg.repo.item(item_id)
            if check is None or item is None or item.status in ("completed", "cancelled"):
                continue
            if not check.trusted:
                raise LedgerError(f"sweep {name}: {check_id} is not trusted (todoledger trust {check_id})")
            finished = repo.count_holds(check_id, check.check.canonical())
            work.append((index, check, combo, finished))
    state = tree.state(cwd)
    lock = threading.Lock()
    started = time.monotonic()
    counts = {"runs": 0, "failed": 0}

    def combination(index: int, check: CheckRow, combo: dict[str, str], finished: int) -> None:
        for k in range(finished + 1, sweep.repeat + 1):
            outcome = runner.run(check.check, runner.Inputs(cwd=cwd))
            values = core.extract(sweep, outcome.output) if outcome.result == "holds" else {}
            missing = [n for n, _ in sweep.metrics if n not in values]
            result, note = outcome.result, ""
            if result == "holds" and missing:
                result, note = "fails", f"\nno {', '.join(missing)} in the output"
            receipt = Receipt(
                check.id,
                check.item,
                check.check.canonical(),
                result,
                outcome.code,
                outcome.duration_ms,
                outcome.output + note,
                now(),
                writer,
                state,
            )
            with lock:
                _record_repeat(lg, plan, writer, sweep, check, receipt, values, k)
                counts["runs"] += 1
                if on_progress is not None:
                    on_progress(
                        {
                            "combination": index + 1,
                            "of": len(rows),
                            "params": combo,
                            "repeat": k,
                            "repeats": sweep.repeat,
                            "result": result,
                            "values": values,
                            "elapsed": time.monotonic() - started,
                            "line": receipt.line(),
                        }
                    )
            if result != "holds":
                counts["failed"] += 1
                return  # this combination stays pending; the next `sweep run` tries it again

    if parallel <= 1 or len(work) <= 1:
        for job in work:
            combination(*job)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(parallel, len(work))) as pool:
            for future in [pool.submit(combination, *job) for job in work]:
                future.result()
    _finish(lg, plan, writer, name)
    return {"plan": plan, "sweep": name, "combinations": len(work), **counts}


def _finish(lg: Ledger, plan: str, writer: str, name: str) -> None:
    """Complete the sweep's parent once every combination is completed."""
    at = now()
    with lg._transaction():
        parent_id, _, rows = _load(lg, plan, name)
        parent = lg.repo.item(parent_id)
        children = lg.repo.items_by_id([r[0] for r in rows])
        if parent is None or parent.status in ("completed", "cancelled"):
            return
        if any(c.status != "completed" for c in children.values()):
            return
        w = lg._op(plan, writer, at, "sweep", summary=f"sweep {name} complete")
        w.set(
            parent.id,
            "evidence",
            parent.evidence,
            f"{len(children)} combinations measured: todoledger sweep results {name}",
        )
        w.set(parent.id, "status", parent.status, "completed")
        lg.repo.touch_plan(plan, at)


def _record_repeat(
    lg: Ledger,
    plan: str,
    writer: str,
    sweep: core.Sweep,
    check: CheckRow,
    receipt: Receipt,
    values: dict[str, float],
    k: int,
) -> None:
    """One repeat, in one transaction: its receipt, its numbers, and after the
    last repeat the completed item; a kill loses at most the repeat running."""
    repo = CheckRepo(lg.store)
    at = receipt.at
    with lg._transaction():
        item = lg._require(plan, check.item)
        w = lg._op(plan, writer, at, "sweep", summary=f"sweep {sweep.name} {item.id} run {k}/{sweep.repeat}")
        repo.add_receipt(plan, receipt)
        w.annotate(item.id, "receipt", None, _event(check, receipt))
        if receipt.result == "holds":
            for metric, value in values.items():
                index = repo.add_metric(plan, item.id, metric, value, writer, at)
                w.annotate(item.id, "metric", None, {"name": metric, "value": value, "run": index})
        if item.status == "pending":
            w.set(item.id, "status", "pending", "in_progress")
        if receipt.result == "holds" and k >= sweep.repeat:
            medians = ", ".join(
                f"{n} median {core.summary(repo.metric_values(item.id, n))['median']:g}"
                for n, _ in sweep.metrics
            )
            w.set(
                item.id, "evidence", item.evidence, f"{sweep.repeat} runs of {check.check.text()}: {medians}"
            )
            w.set(item.id, "status", "in_progress", "completed")
        lg.repo.touch_plan(plan, at)


def exists(lg: Ledger, name: str, *, plan: str | None = None) -> bool:
    with lg.store.read():
        return CheckRepo(lg.store).sweep(plan or default_plan(), name) is not None


def listing(lg: Ledger, *, plan: str | None = None) -> list[dict[str, str]]:
    """The sweeps of a plan, oldest first: name and parent item."""
    plan = plan or default_plan()
    with lg.store.read():
        return [{"name": n, "parent": p} for n, p in CheckRepo(lg.store).sweeps_of(plan)]


def results(lg: Ledger, name: str, *, plan: str | None = None) -> dict[str, Any]:
    """Per combination and metric: median/min/max/spread, ratio to the baseline, verdict, flags."""
    plan = plan or default_plan()
    repo = CheckRepo(lg.store)
    with lg.store.read():
        _, sweep, rows = _load(lg, plan, name)
        runs = [
            (combo, is_base, {n: repo.metric_values(item, n) for n, _ in sweep.metrics})
            for item, combo, is_base, _ in rows
        ]
    return {"plan": plan, "sweep": name, "keep": sweep.keep, "rows": core.results(sweep, runs)}
