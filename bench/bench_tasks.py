"""MCP Tasks (mcp/tasks.py): what a task costs the agent's client, beside the calls
it is measured against, side by side in one run. Absolute times on a shared
machine are noise: the ratios are the figures.

    .venv/bin/python bench/bench_tasks.py            # 3 rounds of 30 calls
    .venv/bin/python bench/bench_tasks.py --quick    # 2 rounds of 10

Every peer runs in its own fresh `todoledger mcp` process (the SDK path,
TODOLEDGER_MCP_PATH=sdk: the route a task takes; the lean path hands task calls
on to it), spoken to in raw JSON-RPC lines of the 2026-07-28 envelope on its
pipes, warm (3 calls first, untimed), on a SQLite ledger of 20 items, one with
a person's `cmd:test -d .` check:

1. creating a task (`plan_verify` with the tasks extension declared: the row
   committed, the worker process started, the CreateTaskResult read back) vs a
   synchronous `plan_update` (notes on an item) over the same route. Target: at
   most 2x. Between two creations the client waits for the task to complete
   (untimed), so that no worker runs while a call is timed;
2. `tasks/get` of a completed task (its stored result in the reply) vs `todoread`.
   Target: at most 1x;
3. a sweep run by the task's worker (`plan_sweep` with the extension declared,
   from the call sent until the worker process exited) vs `todoledger sweep run`
   of an equal sweep (from its start until it exited), each in its own fresh
   process, in turn: the same combinations, repeats and run command (`expr`, so
   that the overhead is what is measured). Target: the worker adds at most 20 ms
   per sweep run (the difference divided by the runs: derived).

Each round starts each peer's process afresh; the two peers of a comparison run
side by side, their calls alternated (one of each in turn), so that both see the
same load. Medians per round, with the p90 beside them. The load average is
printed at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent / "todoledger"
VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"


class Server:
    """A fresh `todoledger mcp` process on pipes (the SDK path)."""

    def __init__(self, db: Path) -> None:
        env = dict(os.environ, TODOLEDGER_DB=str(db), TODOLEDGER_MCP_PATH="sdk")
        for name in ("TODOLEDGER_WRITER", "TODOLEDGER_TOKEN", "TODOLEDGER_PLAN"):
            env.pop(name, None)
        self.proc = subprocess.Popen(
            [str(BIN), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.n = 0
        self.meta = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "1"},
        }

    def rpc(self, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(seconds for the round trip, the reply)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.n += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.n, "method": method, "params": {**params, "_meta": self.meta}}
        )
        start = time.perf_counter()
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            out = self.proc.stdout.readline()
            if not out:
                raise SystemExit("the server closed its output")
            message = json.loads(out)
            if message.get("id") == self.n:
                took = time.perf_counter() - start
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return took, message["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def ledger(folder: Path) -> tuple[Path, str]:
    from todoledger import Ledger

    db = folder / "ledger.db"
    with Ledger(db) as lg:
        ids = [lg.add(f"item {n}", writer="cli:bench")["id"] for n in range(20)]
        lg.add_check(ids[0], "cmd:test -d .", writer="cli:bench")  # a person's check: it runs
    return db, ids[1]


def wait_done(server: Server, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        _, got = server.rpc("tasks/get", {"taskId": task_id})
        if got["status"] not in ("working", "input_required"):
            if got["status"] != "completed":
                raise SystemExit(f"task {task_id} ended {got['status']}: {got.get('statusMessage')}")
            return got
        if time.monotonic() > deadline:
            raise SystemExit(f"task {task_id} still {got['status']} after 120 s")
        time.sleep(0.02)


def worker_gone(db: Path, task_id: str) -> None:
    """Wait until the task's worker process has exited (not only stored its result)."""
    from todoledger import Ledger

    with Ledger(db) as lg:
        row = lg.task(task_id, None)
    pid = row["pid"] if row is not None else None
    deadline = time.monotonic() + 60
    while pid is not None and os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                return
        time.sleep(0.01)


def warm(server: Server, calls: list[tuple[str, dict[str, Any]]]) -> None:
    for method, params in calls:
        server.rpc(method, params)


def create_vs_update(db: Path, item: str, n: int) -> tuple[list[float], list[float], str]:
    """Task creations on one fresh server, plan_updates on another, calls alternated."""
    creator, updater = Server(db), Server(db)
    try:
        creates, updates, last = [], [], ""
        for k in range(n + 3):
            took_u, reply_u = updater.rpc(
                "tools/call", {"name": "plan_update", "arguments": {"id": item, "notes": f"n{k}"}}
            )
            assert not reply_u.get("isError"), reply_u
            took_c, reply_c = creator.rpc("tools/call", {"name": "plan_verify", "arguments": {}})
            if reply_c.get("resultType") != "task":
                raise SystemExit(f"plan_verify did not become a task: {reply_c}")
            wait_done(creator, reply_c["taskId"])  # untimed: no worker runs while a call is timed
            worker_gone(db, reply_c["taskId"])
            last = reply_c["taskId"]
            if k >= 3:  # the first three warm each server
                creates.append(took_c)
                updates.append(took_u)
        return creates, updates, last
    finally:
        creator.close()
        updater.close()


def get_vs_read(db: Path, task_id: str, n: int) -> tuple[list[float], list[float]]:
    """tasks/get on one fresh server, todoread on another, calls alternated."""
    getter, reader = Server(db), Server(db)
    try:
        gets, reads = [], []
        for k in range(n + 3):
            took_r, reply_r = reader.rpc("tools/call", {"name": "todoread", "arguments": {}})
            assert not reply_r.get("isError"), reply_r
            took_g, reply_g = getter.rpc("tasks/get", {"taskId": task_id})
            assert reply_g["status"] == "completed" and reply_g["result"]["structuredContent"]["receipts"], (
                reply_g
            )
            if k >= 3:
                gets.append(took_g)
                reads.append(took_r)
        return gets, reads
    finally:
        getter.close()
        reader.close()


SWEEP_COMBINATIONS = 10


def add_sweep(db: Path, name: str, repeat: int) -> int:
    """An equal sweep, a person's (so that it may run): its runs."""
    from todoledger import Ledger

    with Ledger(db) as lg:
        lg.add_sweep(
            name,
            template=f"{name} n={{n}}",
            params=["n=" + ",".join(str(k) for k in range(SWEEP_COMBINATIONS))],
            run="expr {n} + 1",
            metrics=[r"v=(\d+)"],
            repeat=repeat,
            writer="cli:bench",
        )
    return SWEEP_COMBINATIONS * repeat


def worker_of(task_id: str) -> int:
    """The pid of the task's worker process (found by its command line)."""
    deadline = time.monotonic() + 30
    needle = f"taskworker\0{task_id}".encode()
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as fh:
                        if needle in fh.read():
                            return int(name)
                except OSError:
                    continue
        time.sleep(0.001)
    raise SystemExit(f"no worker for task {task_id}")


def exited(pid: int) -> None:
    while os.path.exists(f"/proc/{pid}"):
        with open(f"/proc/{pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                return
        time.sleep(0.002)


def sweep_by_worker(db: Path, name: str) -> float:
    """Seconds from the plan_sweep call sent until its worker exited (warm server)."""
    server = Server(db)
    try:
        warm(server, [("tools/call", {"name": "todoread", "arguments": {}})] * 3)
        start = time.perf_counter()
        _, reply = server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": name}})
        if reply.get("resultType") != "task":
            raise SystemExit(f"plan_sweep did not become a task: {reply}")
        exited(worker_of(reply["taskId"]))
        took = time.perf_counter() - start
        done = wait_done(server, reply["taskId"])
        data = done["result"]["structuredContent"]
        if data["failed"] or data["stopped"]:
            raise SystemExit(f"the worker's sweep failed: {data}")
        return took
    finally:
        server.close()


def sweep_by_cli(db: Path, name: str) -> float:
    env = dict(os.environ, TODOLEDGER_DB=str(db))
    start = time.perf_counter()
    done = subprocess.run([str(BIN), "sweep", "run", name], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"todoledger sweep run {name} failed: {done.stdout[-300:]} {done.stderr[-300:]}")
    return took


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return f"median {statistics.median(values) * 1000:6.2f} ms  p90 {p90 * 1000:6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 10 calls")
    opts = parser.parse_args()
    rounds, n = (2, 10) if opts.quick else (3, 30)
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs; shared machine: ratios only)"
    )
    print(
        f"{rounds} rounds; each peer {n} warm calls in its own fresh `todoledger mcp` (SDK path), stdio, SQLite"
    )
    with tempfile.TemporaryDirectory() as scratch:
        db, item = ledger(Path(scratch))
        create_r: list[float] = []
        get_r: list[float] = []
        for r in range(1, rounds + 1):
            create, update, task_id = create_vs_update(db, item, n)
            get, read = get_vs_read(db, task_id, n)
            c, u = statistics.median(create), statistics.median(update)
            g, d = statistics.median(get), statistics.median(read)
            create_r.append(c / u)
            get_r.append(g / d)
            print(f"round {r}:")
            print(f"  task created (plan_verify)  {ms(create)}")
            print(f"  plan_update (synchronous)   {ms(update)}")
            print(f"    ratio create/update (derived): {c / u:.2f}x  (target <= 2x)")
            print(f"  tasks/get (completed)       {ms(get)}")
            print(f"  todoread                    {ms(read)}")
            print(f"    ratio tasks/get/todoread (derived): {g / d:.2f}x  (target <= 1x)")
        sweep_rows: list[tuple[float, float, int]] = []
        repeat = 2 if opts.quick else 3
        for r in range(1, rounds + 1):
            runs = add_sweep(db, f"cli{r}", repeat)
            add_sweep(db, f"task{r}", repeat)
            # In turn, the order flipped each round: both see the same load.
            if r % 2:
                cli, task = sweep_by_cli(db, f"cli{r}"), sweep_by_worker(db, f"task{r}")
            else:
                task, cli = sweep_by_worker(db, f"task{r}"), sweep_by_cli(db, f"cli{r}")
            sweep_rows.append((task, cli, runs))
            print(
                f"sweep round {r}: {runs} runs ({SWEEP_COMBINATIONS} combinations x {repeat}), load {os.getloadavg()[0]:.2f}"
            )
            print(f"  by the task's worker (call to worker exit)  {task * 1000:8.1f} ms")
            print(f"  todoledger sweep run (start to exit)         {cli * 1000:8.1f} ms")
            print(
                f"    ratio worker/cli (derived): {task / cli:.2f}x;"
                f" per run (derived): {(task - cli) / runs * 1000:+.2f} ms  (target <= +20 ms)"
            )
    print(
        "side by side, per round (derived: from the medians above; each sweep figure from one run of each peer):"
    )
    print(f"  create/update:  {'  '.join(f'{x:.2f}x' for x in create_r)}  (target <= 2x)")
    print(f"  get/todoread:   {'  '.join(f'{x:.2f}x' for x in get_r)}  (target <= 1x)")
    print(
        "  sweep worker/cli:  "
        + "  ".join(f"{t / c:.2f}x ({(t - c) / n * 1000:+.2f} ms/run)" for t, c, n in sweep_rows)
        + "  (target <= +20 ms/run)"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
