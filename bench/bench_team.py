"""Team mode: SQLite vs PostgreSQL side by side, in one run.

- writes per second with 1, 4, 16 and 64 concurrent writer processes on
  each backend: whole-list writes of 20 items (each writer its own list in
  one shared plan, one status moved per write) and single-item updates;
- `next` on a 100,000-item plan, PostgreSQL vs SQLite (the plan is built in
  SQLite and copied with `migrate`'s copy);
- writers of several plans (PostgreSQL locks per plan): 16 processes across
  4 plans on PostgreSQL vs 16 on SQLite, and on PostgreSQL 16 writers in one
  plan vs one writer (no collapse);
- `watch` latency, commit to print, p50 and p90 on each backend;
- a claim under 16-way contention: p50 and p99 latency;
- the contention run of tests/contention.py (16 processes as two hosts,
  short leases) for --contention seconds (60 by default), with its checks;
- a server's calls on a PostgreSQL ledger (service.SharedLedger, as `serve`
  uses it): 16 threads reading a 200-item plan, on a pool of 8 connections
  vs one (`--pool-size 1`), alone and while one writer waits for the ledger's
  write lock (held by another process, as a long write would), interleaved
  and repeated.

PostgreSQL: a database of its own on TODOLEDGER_BENCH_PG (default
postgresql://postgres@127.0.0.1:5432/postgres), dropped at the end.

Figures that comments in the code point here for, measured when each choice
was made:

- SQLite's own busy handler (naps backing off to 100 ms): with eight
  processes writing one plan, one waited 8 s while the median wait was
  20 us, and on a loaded machine a writer ran past the 30 s limit and failed
  (store/sqlite.py `_begin_immediate`, which polls at a short jittered interval);
- PostgreSQL's ready query planned on statistics from before a large write:
  70 ms for `next` on a fresh 500-item plan, growing with the square
  (store/postgres.py, ANALYZE_AFTER_ROWS).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SERVER = os.environ.get("TODOLEDGER_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
LEVELS = (1, 4, 16, 64)


def pg_database() -> tuple[str, str]:
    import psycopg

    name = f"todoledger_bench_{secrets.token_hex(5)}"
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    return name, f"{SERVER.rpartition('/')[0]}/{name}"


def pg_ledger(database: str) -> str:
    """A fresh ledger: a schema of the bench database."""
    import psycopg

    schema = f"b_{secrets.token_hex(5)}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{database}?options=-csearch_path%3D{schema}"


def drop(name: str) -> None:
    import psycopg

    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# writers --------------------------------------------------------------------
def writer_task(task: tuple[str, str, int, float, float]) -> tuple[int, list[float], list[str]]:
    """Open the ledger, get ready, then from `start` write for `seconds`: (writes, claim latencies)."""
    from todoledger import Ledger
    from todoledger.core.model import BusyError, LedgerError

    target, kind, index, start, seconds = task
    me = f"bench:w{index}"
    done, latencies, errors = 0, [], []
    with Ledger(target) as lg:
        todos = [{"content": f"{me} step {k}", "status": "pending"} for k in range(20)]
        mine = None
        if kind == "update":
            mine = lg.add(f"{me} notes", plan="updates", writer=me)["id"]
        time.sleep(max(0.0, start - time.time()))
        end = start + seconds
        while time.time() < end:
            try:
                if kind in ("list", "spread"):
                    todos[done % 20]["status"] = (
                        "completed" if todos[done % 20]["status"] == "pending" else "pending"
                    )
                    # "spread": the writers take turns over 4 plans, 4 to a plan.
                    plan = f"lists{index % 4}" if kind == "spread" else "lists"
                    lg.write({"todos": todos}, plan=plan, writer=me)
                elif kind == "update":
                    assert mine is not None
                    lg.update(mine, plan="updates", writer=me, notes=f"note {done}")
                else:
                    t0 = time.perf_counter()
                    got = lg.next("claims", claim=True, writer=me)
                    latencies.append(time.perf_counter() - t0)
                    if not got:
                        break
                    lg.done(got[0]["id"], plan="claims", writer=me, token=got[0]["token"], evidence="bench")
                done += 1
            except (BusyError, LedgerError) as exc:
                errors.append(str(exc))
    return done, latencies, errors


def concurrent(pool: Any, target: str, kind: str, n: int, seconds: float) -> tuple[int, list[float]]:
    start = time.time() + 3 + n * 0.1  # every writer connected and waiting before the clock starts
    results = pool.map(writer_task, [(target, kind, i, start, seconds) for i in range(n)], chunksize=1)
    errors = [e for r in results for e in r[2]]
    if errors:
        print(f"    ({len(errors)} refused writes, not counted; first: {errors[0]})")
    return sum(r[0] for r in results), [x for r in results for x in r[1]]


def bench_writes(pool: Any, targets: dict[str, Any], seconds: float, levels: tuple[int, ...]) -> None:
    print(f"\nwrites per second ({seconds:g} s per cell; a new ledger per cell)")
    print(f"{'writers':>8} | {'kind':<18} | {'SQLite':>9} | {'PostgreSQL':>10} | {'PG/SQLite':>9}")
    for kind, label in (("list", "20-item list"), ("update", "single update")):
        for n in levels:
            rates = {}
            for backend, fresh in targets.items():
                count, _ = concurrent(pool, fresh(), kind, n, seconds)
                rates[backend] = count / seconds
            ratio = rates["postgres"] / rates["sqlite"] if rates["sqlite"] else float("nan")
            print(
                f"{n:>8} | {label:<18} | {rates['sqlite']:>9.0f} | {rates['postgres']:>10.0f} | {ratio:>8.2f}x"
            )


def bench_plans(pool: Any, targets: dict[str, Any], seconds: float) -> None:
    """Per-plan locks: writers of different plans do not queue behind each other."""
    print(f"\nwriters of several plans: 20-item lists, {seconds:g} s per cell, a new ledger per cell")
    spread = {
        b: concurrent(pool, fresh(), "spread", 16, seconds)[0] / seconds for b, fresh in targets.items()
    }
    print(
        f"  16 writers across 4 plans: SQLite {spread['sqlite']:.0f}/s, PostgreSQL {spread['postgres']:.0f}/s,"
        f" PostgreSQL/SQLite {spread['postgres'] / spread['sqlite']:.2f}x"
    )
    one = concurrent(pool, targets["postgres"](), "list", 1, seconds)[0] / seconds
    many = concurrent(pool, targets["postgres"](), "list", 16, seconds)[0] / seconds
    print(f"  PostgreSQL, one plan: 16 writers {many:.0f}/s, 1 writer {one:.0f}/s, 16/1 {many / one:.2f}x")


def watch_latency(target: str, writes: int) -> list[float]:
    """Seconds from a write's commit (its call returned) to `watch --json` printing its event."""
    import json
    import subprocess
    import threading

    from todoledger import Ledger

    with Ledger(target) as lg:
        lg.add("before the watch", plan="w", writer="bench:w")
        since = lg.last_event()
    env = dict(os.environ, TODOLEDGER_DB=target)
    exe = str(Path(sys.executable).parent / "todoledger")
    watch = subprocess.Popen(
        [exe, "watch", "--json", "--since", str(since), "--count", str(writes + 1)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    printed: dict[int, float] = {}
    ready = threading.Event()

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            printed[json.loads(line)["seq"]] = time.perf_counter()
            ready.set()

    reader = threading.Thread(target=read)
    reader.start()
    committed: dict[int, float] = {}
    with Ledger(target) as lg:
        lg.add("watch is up", plan="w", writer="bench:w")
        ready.wait(30)  # its first line: watch is connected and waiting
        for k in range(writes):
            time.sleep(0.05)  # each write alone, watch idle when it lands
            lg.add(f"watched {k}", plan="w", writer="bench:w")
            committed[lg.last_event()] = time.perf_counter()
    watch.wait(60)
    reader.join()
    return [printed[seq] - at for seq, at in committed.items() if seq in printed]


def bench_watch(targets: dict[str, Any], writes: int) -> None:
    print(f"\nwatch latency, commit (the write's call returned) to print, {writes} writes a backend")
    for backend, fresh in targets.items():
        lat = sorted(watch_latency(fresh(), writes))
        q = statistics.quantiles(lat, n=10)
        print(f"{backend:>10}: p50 {statistics.median(lat) * 1000:.1f} ms, p90 {q[8] * 1000:.1f} ms")


def bench_claims(pool: Any, targets: dict[str, Any], seconds: float) -> None:
    from todoledger import Ledger

    print("\nclaim under 16-way contention (claim, then done with the token)")
    for backend, fresh in targets.items():
        target = fresh()
        with Ledger(target) as lg:
            for part in range(10):  # a write takes up to 2,000 items
                jobs = [{"content": f"job {part}.{k}", "status": "pending"} for k in range(2_000)]
                lg.write({"todos": jobs}, plan="claims", writer=f"lead{part}")
            with lg.bulk():
                pass  # PostgreSQL analyses the new rows when a bulk load ends (as autovacuum would, later)
        count, latencies = concurrent(pool, target, "claim", 16, seconds)
        with Ledger(target) as lg:
            claimed = [e for e in lg.history("claims") if e["field"] == "claimed"]
            items = [e["item"] for e in claimed]
            assert len(items) == len(set(items)), "an item was claimed twice"
        q = statistics.quantiles(latencies, n=100)
        print(
            f"{backend:>10}: {count} claims in {seconds:g} s, p50 {q[49] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms,"
            " no item claimed twice"
        )


def bench_next(work: Path, pg: str, items: int, runs: int = 50) -> None:
    from bench_core import build_scale_plan
    from todoledger import Ledger

    db = work / "scale.db"
    t0 = time.perf_counter()
    build_scale_plan(db, items, items)
    with Ledger(db) as lg:
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        lg.copy_to(pg)
        copied = time.perf_counter() - t0
    print(
        f"\nnext on a {items:,}-item plan (built in SQLite in {built:.0f} s, copied to PostgreSQL in {copied:.0f} s)"
    )
    medians = {}
    for backend, target in (("sqlite", str(db)), ("postgres", pg)):
        with Ledger(target) as lg:
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                rows = lg.next("big", limit=5)
                times.append(time.perf_counter() - start)
            assert rows
        medians[backend] = statistics.median(times)
        print(f"{backend:>10}: median {medians[backend] * 1000:.2f} ms")
    print(f"  PostgreSQL/SQLite: {medians['postgres'] / medians['sqlite']:.2f}x")


def pool_cell(url: str, size: int, seconds: float, stalled_writer: bool, threads: int = 16) -> float:
    """Reads per second of `threads` server calls on a pool of `size`."""
    import threading

    import psycopg

    from todoledger.ledger.shared import SharedLedger

    os.environ["TODOLEDGER_DB"] = url
    shared = SharedLedger(pool_size=size)
    counts = [0] * threads
    stop = threading.Event()

    def reader(k: int) -> None:
        while not stop.is_set():
            with shared.session() as ledger:
                ledger(False).view("pool")
            counts[k] += 1

    def writer() -> None:
        with shared.session() as ledger:
            ledger(True).add("written once the lock is free", plan="pool", writer="bench:writer")

    holder = psycopg.connect(url, autocommit=True)
    try:
        with shared.session() as ledger:
            ledger(False).plans()  # opened (and the pool started) before the clock
        if stalled_writer:
            holder.execute("SELECT pg_advisory_lock(hashtext(current_schema()))")
            waiting = threading.Thread(target=writer)
            waiting.start()
            time.sleep(0.3)  # the writer has its connection and waits for the lock
        workers = [threading.Thread(target=reader, args=(k,)) for k in range(threads)]
        for w in workers:
            w.start()
        time.sleep(seconds)
        stop.set()
        if stalled_writer:
            holder.execute("SELECT pg_advisory_unlock(hashtext(current_schema()))")
            waiting.join()
        for w in workers:
            w.join()
    finally:
        holder.close()
        shared.close()
    return sum(counts) / seconds


def bench_pool(pg: str, seconds: float, repeats: int = 3) -> None:
    from todoledger import Ledger

    with Ledger(pg) as lg:
        lg.write({"todos": [{"content": f"step {k}", "status": "pending"} for k in range(200)]}, plan="pool")
    print(f"\nserver calls on PostgreSQL: 16 threads reading a 200-item plan, {seconds:g} s a cell")
    print(f"{'case':<32} | {'pool of 1':>9} | {'pool of 8':>9} | {'8/1':>6}")
    for stalled, label in ((False, "reads"), (True, "reads while a writer waits")):
        for _ in range(repeats):
            one = pool_cell(pg, 1, seconds, stalled)
            eight = pool_cell(pg, 8, seconds, stalled)
            ratio = f"{eight / one:.2f}x" if one else "inf"
            print(f"{label:<32} | {one:>7.0f}/s | {eight:>7.0f}/s | {ratio:>6}")


def bench_contention(sqlite_db: str, pg: str, seconds: float) -> None:
    from tests.contention import run, verify

    print(f"\ncontention run: 16 processes as two hosts, 1 s leases, {seconds:g} s, checked")
    for backend, targets in (
        ("sqlite", (sqlite_db, sqlite_db)),
        ("postgres", (pg, pg.replace("127.0.0.1", "localhost"))),
    ):
        figures = verify(targets[0], run(targets, seconds))
        print(f"{backend:>10}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each throughput cell")
    parser.add_argument("--items", type=int, default=100_000, help="items of the `next` plan")
    parser.add_argument(
        "--contention", type=float, default=60.0, help="length of the contention run (0: skip)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 s cells, levels 1/4/16, 10,000 items, 10 s run"
    )
    parser.add_argument("--only-pool", action="store_true", help="only the server pool's cells")
    parser.add_argument(
        "--only",
        choices=("pool", "next", "plans"),
        help="only one part: the server pool's cells, `next`, or the writers of several plans and watch latency",
    )
    args = parser.parse_args()
    levels = LEVELS
    if args.quick:
        args.seconds, args.items, args.contention, levels = 1.0, 10_000, 10.0, (1, 4, 16)
    name, database = pg_database()
    work = Path(tempfile.mkdtemp(prefix="bench-team-"))
    counter = iter(range(1_000_000))
    targets = {
        "sqlite": lambda: str(work / f"cell{next(counter)}.db"),
        "postgres": lambda: pg_ledger(database),
    }
    try:
        if args.only_pool or args.only == "pool":
            bench_pool(pg_ledger(database), args.seconds)
            return
        if args.only == "plans":
            with multiprocessing.get_context("spawn").Pool(16) as pool:
                bench_plans(pool, targets, args.seconds)
            bench_watch(targets, 40)
            return
        if args.only == "next":
            bench_next(Path(tempfile.mkdtemp(prefix="bench-next-")), pg_ledger(database), args.items)
            return
        with multiprocessing.get_context("spawn").Pool(max(levels)) as pool:
            bench_writes(pool, targets, args.seconds, levels)
            bench_plans(pool, targets, args.seconds)
            bench_claims(pool, targets, args.seconds * 2)
        bench_watch(targets, 40)
        bench_next(work, pg_ledger(database), args.items)
        if args.contention:
            bench_contention(str(work / "contention.db"), pg_ledger(database), args.contention)
        bench_pool(pg_ledger(database), args.seconds)
    finally:
        drop(name)


if __name__ == "__main__":
    main()
