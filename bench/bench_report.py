"""`report` must grow linearly with the plan: the report of N items against the
report of N/100 items, each step apart, measured side by side in one run.

    .venv/bin/python bench/bench_report.py                # 100,000 vs 1,000 items, target <= 110x
    .venv/bin/python bench/bench_report.py --items 10000  # quicker: 10,000 vs 100

Each plan is built the way a long session builds it: batches of 100 new items
arrive while the earlier ones are still open (one op per batch), then every
tenth item is started and finished. That is the shape that made phases quadratic.

Three rounds; in each, the small and the large report alternate (the best of
two tries each), and the report's two steps are timed apart: `load` (the
ledger's events, ops and view, and the story, findings and proof worked out
from them) and `render` (the Markdown). Each must grow at most 1.1x the
items' growth in each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BATCH = 100
ROUNDS = 3


def build(db: Path, items: int) -> None:
    from todoledger.ledger import Ledger

    with Ledger(db) as lg:
        for start in range(0, items, BATCH):
            lines = [
                json.dumps({"id": f"t{n:06d}", "content": f"Step {n} of the bench plan", "status": "pending"})
                for n in range(start, min(items, start + BATCH))
            ]
            lg.import_jsonl(lines, plan="bench", writer="bench")
        for n in range(0, items, 10):
            lg.start(f"t{n:06d}", plan="bench", writer="bench")
            lg.done(f"t{n:06d}", plan="bench", writer="bench")


def report_seconds(db: Path) -> tuple[float, float]:
    """The best of two reports of `db`: (load, render) seconds, each the fastest try."""
    from todoledger.ingest.report import load, render_md
    from todoledger.ledger import Ledger

    best_load = best_render = float("inf")
    for _ in range(2):
        with Ledger(db, create=False) as lg:
            start = time.perf_counter()
            report = load(lg, "bench")
            loaded = time.perf_counter()
            render_md(report)
            done = time.perf_counter()
        del report
        best_load, best_render = min(best_load, loaded - start), min(best_render, done - loaded)
    return best_load, best_render


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=100_000, help="Large plan size; the small one is 1/100.")
    args = ap.parse_args()
    large, small = args.items, max(BATCH, args.items // 100)
    scale = large / small
    limit = 1.1 * scale
    with tempfile.TemporaryDirectory(prefix="todoledger-bench-") as tmp:
        t = time.perf_counter()
        build(Path(tmp) / "small.db", small)
        build(Path(tmp) / "large.db", large)
        print(f"built plans of {small:,} and {large:,} items in {time.perf_counter() - t:.0f} s", flush=True)
        report_seconds(Path(tmp) / "small.db")  # page cache, imports
        ratios: dict[str, list[float]] = {"load": [], "render": [], "report": []}
        for n in range(1, ROUNDS + 1):
            small_load, small_render = report_seconds(Path(tmp) / "small.db")
            large_load, large_render = report_seconds(Path(tmp) / "large.db")
            round_ratios = {
                "load": large_load / small_load,
                "render": large_render / small_render,
                "report": (large_load + large_render) / (small_load + small_render),
            }
            for name, ratio in round_ratios.items():
                ratios[name].append(ratio)
            print(
                f"round {n}: {small:,} items: load {small_load * 1000:.0f} ms, render {small_render * 1000:.0f} ms;"
                f" {large:,} items: load {large_load * 1000:.0f} ms, render {large_render * 1000:.0f} ms;"
                f" ratios load {round_ratios['load']:.0f}x, render {round_ratios['render']:.0f}x,"
                f" report {round_ratios['report']:.0f}x",
                flush=True,
            )
    print(f"for {scale:.0f}x the items (target <= {limit:.0f}x for each step, in each round):")
    for name, values in ratios.items():
        print(
            f"  {name:<7} min {min(values):.0f}x, median {statistics.median(values):.0f}x, max {max(values):.0f}x"
        )
    sys.exit(0 if max(max(v) for v in ratios.values()) <= limit else 1)


if __name__ == "__main__":
    os.environ.pop("TODOLEDGER_DB", None)
    main()
