"""The board's 2,000-item page against its 20-item page, in real Chromium (Debian's, through
Playwright) against a real `todoledger serve`, as bench/bench_board.py measures them: every
open row in the page, and the time from navigation start to the page's mark
`board:rows-painted` (the frame after every row is in the DOM). Side by side in one run,
alternated, after a warm-up; the 2,000-item page's median at most PAINT_RATIO times the
20-item page's (issue 30, item 6). A ratio, never an absolute time: the figure against the
500 ms target is bench_board.py's, with the load beside it (docs/performance.md).

The bound, as measured on the project's 2-core machine with other sessions' work on it
(the ratio of the medians here, the median of each run's ratio in bench_board.py): after
issue 30, 1.7x to 4.5x at load average 4 to 11; before it, 4.6x to 7.2x at the same loads,
over 5x in 5 of 7 runs. A loaded machine stretches the larger page more (the server's work
and the browser's share one core between them), so the bound leaves room for load. On a
quiet machine the old page's ratio was 2.9x to 3.6x (docs/performance.md), under this bound:
there the 500 ms target, not this ratio, tells the two apart."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

CHROMIUM = os.environ.get("TODOLEDGER_CHROMIUM", "/usr/bin/chromium")
playwright_sync = pytest.importorskip("playwright.sync_api", reason="pip install playwright (.ci/run does)")
if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)", allow_module_level=True)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.sqlite_only,  # the benchmark's own SQLite ledger
    pytest.mark.xdist_group("board-paint"),
]
ROUNDS = 7
PAINT_RATIO = 5.0


def test_2000_items_paint_every_open_row_within_a_bounded_ratio_of_20(tmp_path: Path) -> None:
    import bench_board

    sizes = {"small": 20, "big": 2000}
    open_rows = bench_board.build_ledger(tmp_path / "ledger.db", sizes)
    assert open_rows == {"small": 15, "big": 1500}
    server, base = bench_board.start_server(tmp_path / "ledger.db")
    painted: dict[str, list[float]] = {plan: [] for plan in sizes}
    try:
        with playwright_sync.sync_playwright() as pw:
            browser, context = bench_board.open_context(pw)
            for run in range(ROUNDS + 1):  # the first warms the caches and is dropped
                for plan in sizes:
                    got = bench_board.measure(context, f"{base}/plan?plan={plan}")
                    # Every row in the page, every open one among them: none is left for later.
                    assert (got["rows"], got["open"]) == (sizes[plan], open_rows[plan])
                    if run:
                        painted[plan].append(got["painted"])
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    ratio = statistics.median(painted["big"]) / statistics.median(painted["small"])
    said = (
        f"load average {os.getloadavg()[0]:.1f}; every open row painted (ms): 2,000 items"
        f" {[round(v) for v in painted['big']]}, 20 items {[round(v) for v in painted['small']]};"
        f" ratio of the medians {ratio:.2f}x (at most {PAINT_RATIO}x)"
    )
    print(said)
    assert ratio <= PAINT_RATIO, said
