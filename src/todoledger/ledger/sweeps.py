"""Running a parameter sweep, above the façade: each pending combination's
command runs (`parallel` at a time), every repeat is recorded (receipt and
metrics) as it finishes, and the item is completed after its last repeat. An
interrupted run, even by SIGKILL, resumes where it stopped: finished repeats
and combinations never run again. Defining a sweep and its results are
`Ledger.add_sweep` and `Ledger.sweep_results`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from todoledger.core import sweep as core
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.defaults import default_plan, default_writer
from todoledger.ledger.ledger import Ledger

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

    cwd = cwd or os.getcwd()
    writer = writer or default_writer(lg.token_holder)  # each repeat's receipt names who ran it
    sweep, combinations, work = lg.sweep_work(name, plan=plan)
    states: dict[str, Any] = {}  # each folder's tree, once: a combination runs where the sweep was added
    lock = threading.Lock()
    started = time.monotonic()
    counts = {"runs": 0, "failed": 0}

    def combination(index: int, check: CheckRow, combo: dict[str, str], finished: int) -> None:
        home = check.cwd or cwd
        with lock:
            if home not in states:
                states[home] = tree.state(home) if os.path.isdir(home) else None
            state = states[home]
        for k in range(finished + 1, sweep.repeat + 1):
            outcome = runner.run(check.check, runner.Inputs(cwd=home, path=check.path))
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
                lg.record_sweep_repeat(sweep, check, receipt, values, k, plan=plan, writer=writer)
                counts["runs"] += 1
                if on_progress is not None:
                    on_progress(
                        {
                            "combination": index + 1,
                            "of": combinations,
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
    lg.finish_sweep(name, plan=plan, writer=writer)
    return {"plan": plan or default_plan(), "sweep": name, "combinations": len(work), **counts}
