"""`report` must grow linearly with the plan: the time of report on N items
against report on N/100 items, measured side by side in one run.

    .venv/bin/python bench/bench_report.py              # 100,000 vs 1,000 items, target <= 150x
    .venv/bin/python bench/bench_report.py --items 10000  # quicker: 10,000 vs 100

Each plan is built the way a long session builds it: batches of 100 new items
arrive while the earlier ones are still open (one op per batch), then every
tenth item is started and finished. That is the shape that made phases quadratic.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

BATCH = 100


def build(db: Path, items: int) -> None:
    os.environ["TODOLEDGER_DB"] = str(db)
    from todoledger.ledger import Ledger

    with Ledger() as lg:
        for start in range(0, items, BATCH):
            lines = [
                json.dumps({"id": f"t{n:06d}", "content": f"Step {n} of the bench plan", "status": "pending"})
                for n in range(start, min(items, start + BATCH))
            ]
            lg.import_jsonl(lines, plan="bench", writer="bench")
        for n in range(0, items, 10):
            lg.start(f"t{n:06d}", plan="bench", writer="bench")
            lg.done(f"t{n:06d}", plan="bench", writer="bench")


def report_seconds(db: Path) -> float:
    os.environ["TODOLEDGER_DB"] = str(db)
    from todoledger.ingest.report import load, render_md
    from todoledger.ledger import Ledger

    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        with Ledger(create=False) as lg:
            render_md(load(lg, "bench"))
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=100_000, help="Large plan size; the small one is 1/100.")
    args = ap.parse_args()
    large, small = args.items, max(BATCH, args.items // 100)
    with tempfile.TemporaryDirectory(prefix="todoledger-bench-") as tmp:
        t = time.perf_counter()
        build(Path(tmp) / "small.db", small)
        build(Path(tmp) / "large.db", large)
        print(f"built plans of {small:,} and {large:,} items in {time.perf_counter() - t:.0f} s", flush=True)
        small_s = report_seconds(Path(tmp) / "small.db")
        large_s = report_seconds(Path(tmp) / "large.db")
    ratio = large_s / small_s
    scale = large / small
    print(f"report on {small:,} items: {small_s * 1000:.0f} ms")
    print(f"report on {large:,} items: {large_s * 1000:.0f} ms")
    print(f"ratio: {ratio:.0f}x for {scale:.0f}x the items (target <= {1.5 * scale:.0f}x)")
    sys.exit(0 if ratio <= 1.5 * scale else 1)


if __name__ == "__main__":
    main()
