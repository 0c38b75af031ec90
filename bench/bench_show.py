"""`todoledger show` on a terminal, beside Taskwarrior's `task list` on the
same terminal, measured side by side in one run (absolute times on a shared
machine are noise).

    .venv/bin/python bench/bench_show.py              # 3 rounds of 11 samples a case
    .venv/bin/python bench/bench_show.py --samples 5  # quicker

Both commands run on a pseudo-terminal of 50 x 120 (bench/terminal.py), read
to the end, with paging off (PAGER=cat: Taskwarrior does not page). Each
round alternates the cases, so that the machine's noise hits them alike, and
prints the ratio of the medians; the last lines give min, median and max of
the rounds.

1. at 1,000 items, two shapes: every item open, and a quarter completed (the
   same tasks in Taskwarrior, completed ones with an end date): `show` (open
   work, finished work folded into a count) against `task list` (pending
   tasks), target <= 2x; `show --all` beside it;
2. linear: `show` at 10,000 items against `show` at 1,000, target <= 11x
   (`task list` at 10,000 beside it);
3. the renderers in one process, on the same view: rich's table (the
   renderer `show` used before, kept here as the reference) against
   `cli/render_term.py`, per drawn row at 100, 1,000 and 10,000 rows; and
   rich's import against `python -c pass`.
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from equal_work import check, held_by_ledger, held_by_taskwarrior
from terminal import on_terminal, taskwarrior, taskwarrior_data

ROOT = Path(__file__).resolve().parent.parent
TODOLEDGER = str(Path(sys.executable).parent / "todoledger")
ROUNDS = 3


def todoledger_plan(db: Path, n: int, quarter_done: bool) -> None:
    """n items; with `quarter_done`, every fourth completed."""
    from todoledger import Ledger

    lines = [
        json.dumps(
            {
                "id": f"t{k:05d}",
                "content": f"item {k} of the benchmark plan",
                "position": float(k),
                "status": "completed" if quarter_done and k % 4 == 0 else "pending",
            }
        )
        for k in range(n)
    ]
    with Ledger(db) as lg:
        for start in range(0, n, 1000):
            lg.import_jsonl(lines[start : start + 1000])


def taskwarrior_plan(task: str, env: dict[str, str], work: Path, n: int, quarter_done: bool) -> None:
    """The same tasks in Taskwarrior (a completed task needs its end date)."""
    tasks = [
        {"description": f"item {k} of the benchmark plan", "status": "pending"}
        | ({"status": "completed", "end": "20260101T000000Z"} if quarter_done and k % 4 == 0 else {})
        for k in range(n)
    ]
    source = work / "tasks.json"
    source.write_text(json.dumps(tasks))
    subprocess.run([task, "import", str(source)], env=env, capture_output=True, check=True)


def equal_show(db: Path, ours: dict[str, str], task: str, theirs: dict[str, str], label: str) -> str:
    """`show` and `task list` hold the same items and draw the same rows, on the terminal they are timed on."""
    return check(
        f"show / task list, {label}",
        (held_by_ledger(db), held_by_taskwarrior(task, theirs)),
        (on_terminal([TODOLEDGER, "show"], ours)[1], on_terminal([task, "list"], theirs)[1]),
    )


def rounds(cases: dict[str, tuple[list[str], dict[str, str]]], samples: int) -> list[dict[str, float]]:
    """ROUNDS rounds; in each, the cases alternated `samples` times: the median ms of each."""
    out = []
    for _ in range(ROUNDS):
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(samples):
            for name, (cmd, env) in cases.items():
                times[name].append(on_terminal(cmd, env)[0])
        out.append({name: statistics.median(v) * 1000 for name, v in times.items()})
    return out


def spread(values: list[float]) -> str:
    return f"min {min(values):.2f}x, median {statistics.median(values):.2f}x, max {max(values):.2f}x"


def terminal_section(samples: int, work: Path) -> None:
    env = dict(os.environ, PAGER="cat", TERM="xterm-256color")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("NO_COLOR", None)
    tw = taskwarrior()
    shapes = {"all open": False, "a quarter completed": True}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], env)
    }
    checked: list[str] = []
    for label, share in shapes.items():
        # A folder of its own per shape: both shapes once shared one (`label[0]` is "a" for
        # both), so the second import landed on the first and `task list` drew 1,750 tasks
        # against `show`'s 750 (issue 30); equal_work.check now stops such a run.
        slug = label.replace(" ", "-")
        db = work / f"show-{slug}.db"
        todoledger_plan(db, 1000, share)
        ours = env | {"TODOLEDGER_DB": str(db)}
        cases[f"show, {label}"] = ([TODOLEDGER, "show"], ours)
        cases[f"show --all, {label}"] = ([TODOLEDGER, "show", "--all"], ours)
        if tw:
            theirs = taskwarrior_data(work / f"tw-{slug}", env)
            taskwarrior_plan(tw[0], theirs, work, 1000, share)
            cases[f"task list, {label}"] = ([tw[0], "list"], theirs)
            checked.append(f"{label}: " + equal_show(db, ours, tw[0], theirs, label))
    big = work / "show-10k.db"
    todoledger_plan(big, 10_000, True)
    cases["show, 10,000 items"] = ([TODOLEDGER, "show"], env | {"TODOLEDGER_DB": str(big)})
    cases["show --all, 10,000 items"] = ([TODOLEDGER, "show", "--all"], env | {"TODOLEDGER_DB": str(big)})
    if tw:
        theirs = taskwarrior_data(work / "tw-10k", env)
        taskwarrior_plan(tw[0], theirs, work, 10_000, True)
        cases["task list, 10,000 items"] = ([tw[0], "list"], theirs)
        big_env = env | {"TODOLEDGER_DB": str(big)}
        checked.append("10,000 items: " + equal_show(big, big_env, tw[0], theirs, "10,000 items"))
    for _cmd, case_env in cases.values():  # a first run of each: page cache, bytecode
        on_terminal(_cmd, case_env)
    measured = rounds(cases, samples)

    print(f"1. on a terminal (pty 50 x 120, PAGER=cat), 1,000 items; {samples} samples a case a round:")
    if tw is None:
        print("   `task` not found (apt-get install taskwarrior): the comparison with task list is skipped")
    else:
        print(f"   Taskwarrior: task {tw[1]} (as Debian installs it)")
        for line in checked:
            print(f"   {line}")
    floors = ", ".join(f"{r['python -c pass']:.1f}" for r in measured)
    print(f"   python -c pass on the same terminal, each round: {floors} ms")
    for label in shapes:
        for n, r in enumerate(measured, 1):
            line = f"   round {n}, {label}: show {r[f'show, {label}']:.1f} ms, show --all {r[f'show --all, {label}']:.1f} ms"
            if tw:
                base = r[f"task list, {label}"]
                line += (
                    f", task list {base:.1f} ms: show {r[f'show, {label}'] / base:.2f}x"
                    f", show --all {r[f'show --all, {label}'] / base:.2f}x"
                )
            print(line)
        if tw:
            ratios = [r[f"show, {label}"] / r[f"task list, {label}"] for r in measured]
            every = [r[f"show --all, {label}"] / r[f"task list, {label}"] for r in measured]
            print(f"   {label}: show / task list {spread(ratios)} (target <= 2x in each round)")
            print(f"   {label}: show --all / task list {spread(every)} (reported)")
    print("2. linear: show at 10,000 items (a quarter completed) against show at 1,000, same shape:")
    growth = []
    for n, r in enumerate(measured, 1):
        ratio = r["show, 10,000 items"] / r["show, a quarter completed"]
        growth.append(ratio)
        line = (
            f"   round {n}: {r['show, 10,000 items']:.1f} ms vs {r['show, a quarter completed']:.1f} ms: {ratio:.2f}x;"
            f" show --all {r['show --all, 10,000 items'] / r['show --all, a quarter completed']:.2f}x"
        )
        if tw:
            line += f"; task list {r['task list, 10,000 items'] / r['task list, a quarter completed']:.2f}x"
        print(line)
    print(f"   show 10,000 / 1,000: {spread(growth)} (target <= 11x in each round)")


def rich_table(view: Any, console: Any) -> None:
    """The rich table `show` drew on a terminal before bench_show.py's first run,
    kept here as the reference it is measured against."""
    from rich.table import Table
    from rich.text import Text

    from todoledger.core.sanitize import for_terminal as clean

    marks = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "✕"}
    title = Text(f"plan {clean(view.plan)} · revision {view.revision} · ")
    title.append(view.summary() or "empty")
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for name in ("id", "", "item", "pri", "waits for"):
        table.add_column(name, no_wrap=name != "item")
    for it in view.items:
        content = Text("  " * it.depth) + Text(clean(it.content))
        if it.flag() == "ready":
            content.append(" ready", style="bold cyan")
        table.add_row(
            Text(clean(it.id), style="cyan"),
            Text(marks.get(it.status, "?")),
            content,
            Text(it.priority, style="yellow"),
            Text(clean(", ".join(it.depends_on))),
        )
    console.print(table)


def renderer_section(work: Path) -> None:
    from rich.console import Console

    from todoledger import Ledger
    from todoledger.cli import render_term

    os.environ.pop("NO_COLOR", None)
    os.environ["TERM"] = "xterm-256color"
    print("3. the renderers in one process, same view, every row open, 120 columns (median of 3):")
    for n in (100, 1000, 10_000):
        db = work / f"render-{n}.db"
        todoledger_plan(db, n, False)
        with Ledger(db) as lg:
            view = lg.view()
        rich_s, term_s = [], []
        for _ in range(3):
            console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system="standard")
            start = time.perf_counter()
            rich_table(view, console)
            rich_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            "\n".join(render_term.plan_lines(view, None, width=120))
            term_s.append(time.perf_counter() - start)
        r, t = statistics.median(rich_s), statistics.median(term_s)
        print(
            f"   {n:>6,} rows: rich {r * 1000:8.1f} ms ({r / n * 1e6:5.1f} us a row),"
            f" render_term {t * 1000:7.1f} ms ({t / n * 1e6:5.1f} us a row): rich {r / t:.1f}x"
        )
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    imports, bare = [], []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import rich.console, rich.table, rich.text"], env=env, check=True
        )
        imports.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare.append(time.perf_counter() - start)
    i, b = statistics.median(imports) * 1000, statistics.median(bare) * 1000
    print(f"   importing rich's console and table: {i - b:.1f} ms beyond python -c pass ({b:.1f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=11, help="samples of each case in a round")
    parser.add_argument("--only", choices=("terminal", "renderers"))
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "src" / "todoledger"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-show-") as tmp:
        work = Path(tmp)
        if args.only in (None, "terminal"):
            terminal_section(args.samples, work)
        if args.only in (None, "renderers"):
            renderer_section(work)


if __name__ == "__main__":
    main()
