"""Claude Code's task panel (`install claude-code --panel`): what one sync costs a
writer, printed beside the writer's own call in one run:

    .venv/bin/python bench/bench_panel.py

A 100-item plan (open and completed items, dependencies) in a SQLite ledger and
a task-list folder as Claude Code keeps one. Each round is one change of one
item (`Ledger.update`), then the sync that follows every write; the median of
the rounds. The target: a sync at most 20 ms beyond the writer's own call, and,
when the rows already match, nothing but one directory read (counted: the
bench fails on any other file operation in the folder).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from todoledger import Ledger
from todoledger.panel import Target, files
from todoledger.panel.sync import sync

ITEMS = 100
ROUNDS = 30
BUDGET_MS = 20.0
WRITER = "cli:bench"


def plan(lg: Ledger) -> list[str]:
    ids: list[str] = []
    for n in range(ITEMS):
        after = [ids[-1]] if ids and n % 3 == 0 else []
        ids.append(lg.add(f"Step {n}: tune the drafter's layer {n}", writer=WRITER, depends_on=after)["id"])
    for item in ids[:30]:
        lg.done(item, writer=WRITER)
    return ids


def ms(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def counted() -> dict[str, int]:
    """Every file operation of the panel's file layer, counted from here on."""
    counts: dict[str, int] = {}
    for name in ("listing", "read", "create", "replace", "remove", "raise_highwatermark", "highwatermark"):
        original = getattr(files, name)

        def wrapper(*args: Any, _name: str = name, _original: Any = original) -> Any:
            counts[_name] = counts.get(_name, 0) + 1
            return _original(*args)

        setattr(files, name, wrapper)
    return counts


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tasks" / "todoledger-main-bench000"
        folder.mkdir(parents=True)
        where = Target(tmp, "main", folder.name, str(folder))
        with Ledger(str(Path(tmp) / "ledger.db")) as lg:
            ids = plan(lg)
            first = ms(lambda: sync(lg, where))
            writes, synced, both = [], [], []
            for n in range(ROUNDS):
                item = ids[40 + n % 50]
                writes.append(ms(lambda item=item, n=n: lg.update(item, notes=f"round {n}", writer=WRITER)))
                synced.append(ms(lambda: sync(lg, where)))
                both.append(writes[-1] + synced[-1])
            counts = counted()
            unchanged = [ms(lambda: sync(lg, where)) for _ in range(ROUNDS)]
        rows = len([p for p in folder.glob("*.json")])
    write, one, total, idle = (statistics.median(x) for x in (writes, synced, both, unchanged))
    print(f"panel sync, {ITEMS}-item plan ({rows} rows: 70 open, 20 of 30 completed, 1 more-row), SQLite")
    print(f"  first sync (every row written):        {first:7.2f} ms")
    print(f"  {'':38} {'median':>8} {'ratio to the call':>18}")
    print(f"  the writer's own call (update):       {write:8.2f} ms {1.0:17.2f}x")
    print(f"  the call and its sync:                {total:8.2f} ms {total / write:17.2f}x")
    print(
        f"  the sync beyond the call:             {one:8.2f} ms {one / write:17.2f}x  (budget {BUDGET_MS:.0f} ms)"
    )
    print(f"  a sync when the rows match:           {idle:8.2f} ms {idle / write:17.2f}x")
    per = {k: v / ROUNDS for k, v in sorted(counts.items())}
    print(f"  file operations per matching sync:    {per}")
    ok = one <= BUDGET_MS and per == {"listing": 1.0}
    print("ok" if ok else "FAILED: over budget, or a matching sync did more than one directory read")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
