"""Benchmarks for the board, in headless Chromium (Debian's, through
Playwright's executable_path) against a real `todoledger serve`, measured side
by side in one run:

1. a 2,000-item plan against a 20-item plan, in each of --runs runs (after one
   that warms the caches): from navigation start to the last open row painted
   (the page's Performance mark `board:rows-painted`, set in the frame after
   every row the page holds is in the DOM; every open row is checked to be
   there), target < 500 ms in each run, and as a ratio to the 20-item page;
   beside it the first frame (double requestAnimationFrame after
   DOMContentLoaded) and the first contentful paint;
2. a 20,000-item plan, past the 5,000 rows a page holds: its first page
   (1,000 rows) and a filtered page (open items whose text matches), from
   navigation start to their rows painted;
3. live update latency: a write to the ledger (the service call the CLI makes)
   until the change is visible in the open page, median and p95 over --writes
   writes (target: median < 250 ms), on the 20- and 2,000-item plans.

Rows off screen are in the DOM but laid out and painted only when scrolled near: the
rows come in blocks of 50, each a `content-visibility: auto` box (before issue 30 each
row was one). The load average is printed at the start and the end: on this project's
2-core machine other work shows in every figure (docs/performance.md gives the load
beside each).

    .venv/bin/python bench/bench_board.py [--runs 3] [--writes 50] [--only paint]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from todoledger import Ledger

BIN = Path(sys.executable).parent
CHROMIUM = os.environ.get("TODOLEDGER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
RENDERED = """
document.addEventListener('DOMContentLoaded', () => requestAnimationFrame(() =>
  requestAnimationFrame(() => { window.__rendered = performance.now(); })));
"""
WATCH = """() => {
  window.__want = []; window.__seenAt = {};
  const main = document.getElementById('main');
  new MutationObserver(() => {
    const text = main.textContent;
    for (const m of window.__want) if (!(m in window.__seenAt) && text.includes(m)) window.__seenAt[m] = Date.now();
  }).observe(main, {childList: true, subtree: true, characterData: true});
}"""


def plan_lines(plan: str, n: int) -> list[str]:
    """A plan of n items: phases of 10, chains of dependencies, estimates, resources."""
    out = []
    for i in range(n):
        record = {
            "id": f"{plan}{i:05d}",
            "content": f"{plan} step {i}: benchmark configuration {i % 7} with {i % 13} draft tokens",
            "status": "completed" if i < n // 4 else ("in_progress" if i == n // 4 else "pending"),
            "priority": ("high", "medium", "low")[i % 3],
            "position": float(i),
            "estimate": f"{5 + i % 50}m",
        }
        if i % 10 and i > 0:
            record["depends_on"] = [f"{plan}{i - 1:05d}"]
        if i % 4 == 1:
            record["uses"] = ["server"] if i % 8 == 1 else [f"gpu:{i % 4}"]
        out.append(json.dumps(record))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


SETTLE = 0.5
MARKS = """() => {
  const at = (name) => (performance.getEntriesByName(name)[0] || {}).startTime;
  const rows = [...document.querySelectorAll('.items .row[data-id]')];
  return {
    painted: at('board:rows-painted'), frame: window.__rendered, paint: at('first-contentful-paint'),
    response: performance.getEntriesByType('navigation')[0].responseEnd,
    rows: rows.length,
    open: rows.filter((r) => !r.matches('.st-completed, .st-cancelled')).length,
  };
}"""


def measure(context: object, url: str) -> dict[str, float]:
    page = context.new_page()  # type: ignore[attr-defined]
    page.goto(url, wait_until="load")
    page.wait_for_function(
        "performance.getEntriesByName('board:rows-painted').length === 1 && window.__rendered !== undefined"
    )
    got: dict[str, float] = page.evaluate(MARKS)
    page.close()
    time.sleep(SETTLE)  # the closed page's requests done: each navigation meets an idle server
    return got


def ms(value: float | None) -> str:
    """A paint time; Chromium reports no first contentful paint for some headless loads."""
    return "none reported" if value is None else f"{value:.0f} ms"


def spread(values: list[float], unit: str = " ms", digits: int = 0) -> str:
    def f(v: float) -> str:
        return f"{v:.{digits}f}{unit}"

    return f"min {f(min(values))}, median {f(statistics.median(values))}, max {f(max(values))}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument(
        "--only", choices=("paint",), help="paint: part 1 alone (the 20- and 2,000-item pages)"
    )
    args = parser.parse_args()
    print(load_line("at the start"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-board-"))
    db = tmp / "ledger.db"
    sizes = {"small": 20, "big": 2000, "huge": 20_000}
    if args.only == "paint":
        del sizes["huge"]
    open_rows = build_ledger(db, sizes)
    server, base = start_server(db)
    try:
        with sync_playwright() as pw:
            browser, context = open_context(pw)
            version = browser.version
            urls = {
                "small": f"{base}/plan?plan=small",
                "big": f"{base}/plan?plan=big",
                "huge": f"{base}/plan?plan=huge",
                "huge, filtered": f"{base}/plan?plan=huge&status=open&q=draft+tokens",
            }
            runs: list[dict[str, dict[str, float]]] = []
            # The 20- and 2,000-item pages alternate; the 20,000-item pages run after them, on
            # their own, so that their server work never overlaps the smaller pages' navigations.
            groups = [("small", "big"), ("huge", "huge, filtered")][: 1 if args.only == "paint" else 2]
            for group in groups:
                for run in range(args.runs + 1):  # the first run warms caches and is dropped
                    got = {name: measure(context, urls[name]) for name in group}
                    for plan in group:
                        if plan in ("small", "big"):
                            assert got[plan]["open"] == open_rows[plan], (plan, got[plan], open_rows[plan])
                    if "huge" in got:
                        assert got["huge"]["rows"] == 1000, got["huge"]
                    if run and group[0] == "small":
                        runs.append(got)
                    elif run:
                        runs[run - 1].update(got)
            print(f"Chromium {version}, headless; navigation start to the marks, in ms")
            print(
                f"1. every open row painted (board:rows-painted): 20 items ({open_rows['small']} open),"
                f" 2,000 items ({open_rows['big']} open), {args.runs} runs after a warm-up:"
            )
            ratios = []
            for n, got in enumerate(runs, 1):
                small, big = got["small"], got["big"]
                ratio = big["painted"] / small["painted"]
                ratios.append(ratio)
                print(
                    f"   run {n}: 2,000 items {big['painted']:.0f} ms"
                    f" ({'ok' if big['painted'] < 500 else 'MISSED'}: target < 500), 20 items {small['painted']:.0f} ms:"
                    f" {ratio:.2f}x; the page's last byte in {big['response']:.0f} / {small['response']:.0f} ms;"
                    f" first frame {big['frame']:.0f} / {small['frame']:.0f} ms,"
                    f" first contentful paint {ms(big['paint'])} / {ms(small['paint'])}"
                )
            print(f"   2,000 items, every open row painted: {spread([g['big']['painted'] for g in runs])}")
            print(f"   ratio to the 20-item page: {spread(ratios, 'x', 2)}")
            if args.only == "paint":
                browser.close()
                print(load_line("at the end"))
                return
            print("2. 20,000 items (paged past 5,000 rows: 1,000 rows a page, with a filter):")
            for n, got in enumerate(runs, 1):
                huge, filtered = got["huge"], got["huge, filtered"]
                print(
                    f"   run {n}: first page {huge['painted']:.0f} ms ({huge['rows']:.0f} rows; its last byte"
                    f" in {huge['response']:.0f} ms), filtered page {filtered['painted']:.0f} ms"
                    f" ({filtered['rows']:.0f} rows; last byte in {filtered['response']:.0f} ms)"
                )
            print(f"\n3. live update: write -> visible on the open page, {args.writes} writes (ms)")
            for plan in ("small", "big"):
                page = context.new_page()
                page.goto(f"{base}/plan?plan={plan}", wait_until="load")
                page.wait_for_selector("#live.on")
                page.evaluate(WATCH)
                lags: list[float] = []
                with Ledger(db) as lg:
                    for k in range(args.writes):
                        marker = f"live-{plan}-{k}-{time.time_ns()}"
                        page.evaluate("m => window.__want.push(m)", marker)
                        start = time.time() * 1000
                        lg.add(marker, plan=plan, writer="cli:bench")
                        page.wait_for_function(f"'{marker}' in window.__seenAt", polling="raf")
                        lags.append(page.evaluate(f"window.__seenAt['{marker}']") - start)
                        time.sleep(0.1)
                page.close()
                print(
                    f"  {sizes[plan]:>5} items: median {statistics.median(lags):6.0f}   p95 {pct(lags, 0.95):6.0f}"
                    f"   max {max(lags):6.0f}"
                )
            browser.close()
            print(load_line("at the end"))
    finally:
        server.terminate()
        server.wait(timeout=10)


def build_ledger(db: Path, sizes: dict[str, int]) -> dict[str, int]:
    """The plans (name -> items) in a new ledger at `db`; how many open items each holds."""
    open_rows = {}
    with Ledger(db) as lg:
        for plan, n in sizes.items():
            lines = plan_lines(plan, n)
            for chunk in range(0, n, 2000):
                lg.import_jsonl(lines[chunk : chunk + 2000], plan=plan, writer="cli:bench")
            open_rows[plan] = sum(
                1 for it in lg.show(plan)["items"] if it["status"] in ("pending", "in_progress")
            )
    return open_rows


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real `todoledger serve` on the ledger, once it listens: the process and its base URL."""
    port = free_port()
    env = dict(os.environ, TODOLEDGER_DB=str(db))
    server = subprocess.Popen(
        [str(BIN / "todoledger"), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("serve did not start") from None
            time.sleep(0.05)


def open_context(pw: Any) -> tuple[Any, Any]:
    """Headless Chromium and a context of 1500 x 1000 whose pages carry the probes."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
    # The page forbids eval; the measuring probes need it (rendering is the same).
    context = browser.new_context(viewport={"width": 1500, "height": 1000}, bypass_csp=True)
    context.add_init_script(RENDERED)
    return browser, context


def load_line(when: str) -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {when}: {one:.2f} (1 min), {five:.2f} (5 min), {fifteen:.2f} (15 min); {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
