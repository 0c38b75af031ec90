"""The GPU sweep as an MCP task (issue 33): an agent's `plan_sweep`, run by the
detached task worker, across a killed `todoledger mcp` and a killed worker.

    python3 bench/gpu_sweep/run_task.py --out "$OUT"      # from the repository's root

The sweep is run.py's (`common.define`: server.py with k = 16, 8, 4, 2 draft
tokens and the baseline k = 0 on ONE port, its /health polled, client.py a run,
the default teardown, the clean check after each), without run.py's leftover on
purpose, with --repeat 3 by default (run.py's 5 took ~245 s on an H100). The
person `cli:operator` defines it through the Python API (an explicit person
identity) and approves it (`sweep trust`), so that an agent may run it.

The agent is this runner's raw MCP client (`mcp_stdio.py`) on the pipes of
`todoledger mcp`, on the 2026-07-28 protocol, declaring the tasks extension.
What it goes through, each step checked and written to run.log as it goes, every
`tasks/get` answer to tasks.log with its time:

1. `server/discover` advertises the extension; `plan_sweep {name}` answers a
   task (`resultType: "task"`), which is polled with `tasks/get` at its
   `pollIntervalMs`.
2. Once the first run is recorded, the stdio server is killed (SIGKILL). The
   worker, detached, must go on: a run must be recorded while no server runs.
   Then a NEW `todoledger mcp` is started, and the same taskId polled there.
3. In the middle of a combination (one done, the next with some of its runs
   recorded), the worker itself (its pid is the task row's) is killed with
   SIGKILL; its server is left behind. The next `tasks/get` must start a new
   worker ("resumed: worker 2 started"), which tears that server down and runs
   only the runs not recorded: no combination gets more runs than its repeats.
4. The task completes; the runner lease is given back, no setup or worker is
   left, the clean check holds, the new server exits 0 at the end of its stdin.

Without nvidia-smi (`--size tiny`, a CPU check of this runner) the clean check is
run.py's stand-in, `leftovers.py`; the summary says so. In --out: summary.md,
tasks.log, run.log, results.txt, results.html, results.json and the ledger. The
exit status is 1 when any step's check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from common import (  # type: ignore[import-not-found]
    NAME,
    OPERATOR,
    PLAN,
    ROOT,
    STAND_IN,
    TL,
    clean_check,
    clean_now,
    define,
    environment,
    free_port,
    machine,
    machine_line,
    plan_lines,
    prepare,
    results,
    say,
    short_rows,
    teardowns,
    todoledger,
)
from mcp_stdio import EXTENSION, ServerGone, StdioServer  # type: ignore[import-not-found]

CLIENT = "gpu-sweep-runner"  # the agent's client name: its writer is mcp:gpu-sweep-runner:...
FINISHED = ("completed", "failed", "cancelled")


class Run:
    """The runner's state: the checks so far, what the polls saw, the servers started."""

    def __init__(self, out: str, db: str, env: dict[str, str], work: str, deadline: float) -> None:
        self.out, self.db, self.env, self.work, self.deadline = out, db, env, work, deadline
        self.started = time.monotonic()
        self.checks: list[tuple[bool, str]] = []
        self.statuses: list[str] = []  # each status as it changed
        self.messages: list[str] = []  # each status message as it changed
        self.tasks_log = os.path.join(out, "tasks.log")
        open(self.tasks_log, "w").close()
        self.servers: list[StdioServer] = []
        self.server: StdioServer | None = None
        self.task_id: str | None = None
        self.poll_s = 1.0
        self.last: dict[str, Any] = {}

    # the checks ---------------------------------------------------------------------------
    def check(self, ok: bool, line: str) -> bool:
        self.checks.append((ok, line))
        say(f"# {'ok    ' if ok else 'FAILED'} {line}")
        return ok

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.checks)

    # the MCP side -------------------------------------------------------------------------
    def start_server(self) -> StdioServer:
        label = "ABCDEFGH"[len(self.servers)]
        server = StdioServer(
            [*TL, "mcp"],
            cwd=ROOT,
            env=self.env,
            name=CLIENT,
            stderr=os.path.join(self.work, f"mcp-{label}.stderr"),
            label=label,
        )
        self.servers.append(server)
        self.server = server
        say(f"$ todoledger mcp        # server {label}, pid {server.pid}, on pipes")
        return server

    def get(self) -> dict[str, Any]:
        """One tasks/get on the current server, written to tasks.log."""
        assert self.server is not None and self.task_id is not None
        message = self.server.rpc("tasks/get", {"taskId": self.task_id})
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        label = self.server.label
        if "error" in message:
            self.log_task(f"{at} +{self.elapsed():7.2f} s  server {label}  error  {message['error']}")
            raise ServerGone(f"tasks/get answered an error: {message['error']}")
        got: dict[str, Any] = message["result"]
        status, text = got["status"], got.get("statusMessage", "")
        self.log_task(f"{at} +{self.elapsed():7.2f} s  server {label}  {status}  {text}")
        if not self.statuses or self.statuses[-1] != status:
            self.statuses.append(status)
        if not self.messages or self.messages[-1] != text:
            self.messages.append(text)
            say(f"    tasks/get ({label}): {status}: {text}")
        self.poll_s = max(0.05, int(got.get("pollIntervalMs") or 1000) / 1000)
        self.last = got
        return got

    def log_task(self, line: str) -> None:
        with open(self.tasks_log, "a") as fh:
            fh.write(line + "\n")

    def poll_until(self, done: Any, what: str, limit: float | None = None) -> bool:
        """tasks/get at the task's poll interval, and the ledger read every 0.1 s between,
        until `done()` says so or the task ends; False when the time ran out or it ended first."""
        end = self.deadline if limit is None else min(self.deadline, time.monotonic() + limit)
        next_get = 0.0
        while time.monotonic() < end:
            if done():
                return True
            if self.server is not None and time.monotonic() >= next_get:
                if self.get()["status"] in FINISHED:
                    return bool(done())
                next_get = time.monotonic() + self.poll_s
            time.sleep(0.1)
        say(f"# gave up waiting for {what}")
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # the ledger side ----------------------------------------------------------------------
    def task_row(self) -> dict[str, Any]:
        from todoledger.ledger import Ledger

        with Ledger(self.db) as lg:
            row = lg.task(self.task_id or "", None)
        assert row is not None, "the task's row is gone"
        return row

    def runs(self) -> dict[str, list[str]]:
        """Each combination (its params, as `k=8`) -> its counted runs recorded in the
        ledger (the `at` of each passing receipt of its run check)."""
        from todoledger.ledger import Ledger

        with Ledger(self.db) as lg:
            combos = lg.sweep_definition(NAME, plan=PLAN)["combinations"]
            found: dict[str, list[str]] = {}
            for c in combos:
                params = " ".join(f"{k}={v}" for k, v in c["params"].items())
                found[params] = [r["at"] for r in lg.receipts(c["item"], plan=PLAN) if r["result"] == "holds"]
        return found


def sdk_missing(env: dict[str, str]) -> str:
    """What keeps `todoledger mcp` from loading its SDK path (the tasks extension) here,
    in one line ("" when it loads): the GPU machine has no registry to install from."""
    probe = "import todoledger.mcp.server, todoledger.mcp.tasks, todoledger.mcp.stdio"
    got = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    if got.returncode == 0:
        return ""
    return (got.stderr.strip().splitlines() or [f"exit {got.returncode}"])[-1]


def state(pid: int) -> str:
    """The process's state letter in /proc (Z: ended, not yet reaped by its parent), or "gone"."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def alive(pid: int) -> bool:
    return state(pid) not in ("Z", "X", "gone")


def wait_gone(pid: int, limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def counts(runs: dict[str, list[str]]) -> str:
    return ", ".join(f"{p}: {len(a)}" for p, a in runs.items())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu-sweep-task-out")
    ap.add_argument("--size", default=None, help="1b (default with a GPU) or tiny (default without)")
    ap.add_argument("--k", default="16,8,4,2")
    ap.add_argument("--repeat", type=int, default=3, help="counted runs per combination (at least 2)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--clean-timeout", type=float, default=15.0)
    ap.add_argument("--limit", type=float, default=480.0, help="seconds before the runner gives up")
    ap.add_argument("--commit", default=os.environ.get("GIT_COMMIT", ""), help="the commit this runs")
    args = ap.parse_args()
    if args.repeat < 2:
        sys.stderr.write(
            "run_task.py: --repeat must be at least 2 (the worker is killed between two runs of one"
            " combination); nothing was run\n"
        )
        return 2
    out, db = prepare(args.out)
    env = environment(db)
    missing = sdk_missing(env)
    if missing:
        say(
            f"# todoledger mcp cannot serve tasks with this Python ({sys.executable}): {missing};"
            " carry the wheels of bench/gpu_sweep/wheels.txt (bench/gpu_sweep/README.md); nothing was run"
        )
        return 2
    work = tempfile.mkdtemp(prefix="gpu-sweep-task-")
    gpu, gpu_text = machine()
    size = args.size or ("1b" if gpu else "tiny")
    port = free_port()
    clean = clean_check(gpu, str(port))
    mine = clean_check(False, str(port))  # this runner's servers, by /proc, on any machine
    run = Run(out, db, env, work, time.monotonic() + args.limit)
    say(
        f"# gpu_sweep as an MCP task: {'nvidia-smi found' if gpu else 'no nvidia-smi: the clean check is the stand-in leftovers.py'}"
    )
    if gpu:
        say(f"# GPU: {gpu_text}")
    say(
        f"# model {size}, k = {args.k}, baseline k = 0, {args.repeat} runs after {args.warmup} warm-up,"
        f" {args.tokens} tokens a run, one port ({port}) for every configuration"
    )
    say(f"# {OPERATOR} defines the sweep through the Python API and approves it (a person's own sweep)")
    define(
        db,
        k=args.k,
        size=size,
        tokens=args.tokens,
        port=port,
        clean=clean,
        clean_timeout=args.clean_timeout,
        repeat=args.repeat,
        warmup=args.warmup,
    )
    from todoledger.ledger import Ledger

    with Ledger(db) as lg:
        approved = lg.approve_sweep(NAME, plan=PLAN, writer=OPERATOR) or {}
    run.check(
        bool(approved.get("runnable")) and approved.get("approved_by") == OPERATOR,
        f"{OPERATOR} wrote sweep {NAME} and approved it (sweep trust): approved by"
        f" {approved.get('approved_by')}, runnable {approved.get('runnable')}",
    )
    todoledger(env, "sweep", "show", NAME)
    try:
        steps(run, args, mine)
    except (ServerGone, AssertionError, OSError) as exc:
        run.check(False, f"the runner stopped: {type(exc).__name__}: {exc}")
    finally:
        leftovers(run)
    code = finish(run, args, gpu, gpu_text, size, port, clean)
    shutil.rmtree(work, ignore_errors=True)
    return code


def steps(run: Run, args: argparse.Namespace, mine: str) -> None:
    # 1. the task ---------------------------------------------------------------------------
    first = run.start_server()
    found = first.rpc("server/discover")
    extensions = (found.get("result") or {}).get("capabilities", {}).get("extensions") or {}
    run.check(EXTENSION in extensions, f"server/discover advertises {EXTENSION}: {sorted(extensions)}")
    say(f"$ tools/call plan_sweep {{name: {NAME}}}        # declaring {EXTENSION}")
    called = first.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": NAME}})
    created = called.get("result") or {}
    if not run.check(
        created.get("resultType") == "task" and created.get("status") == "working",
        f"plan_sweep answered a task: resultType {created.get('resultType')}, status"
        f" {created.get('status')}, pollIntervalMs {created.get('pollIntervalMs')},"
        f" `{created.get('statusMessage') or called.get('error') or created}`",
    ):
        return
    run.task_id = created["taskId"]
    run.statuses.append(created["status"])
    run.messages.append(created.get("statusMessage", ""))
    run.poll_s = int(created.get("pollIntervalMs") or 1000) / 1000
    row = run.task_row()
    run.check(
        row["plan"] == PLAN and row["writer"].startswith(f"mcp:{CLIENT}:"),
        f"the task {run.task_id} is a row of the ledger: plan {row['plan']}, writer {row['writer']}",
    )

    # 2. the stdio server killed mid-sweep ----------------------------------------------------
    if not run.poll_until(lambda: sum(map(len, run.runs().values())) >= 1, "the first recorded run"):
        run.check(False, "no run was recorded before the time ran out")
        return
    worker = int(run.task_row()["pid"])
    before = sum(map(len, run.runs().values()))
    say(
        f"# SIGKILL of the stdio server A, pid {first.pid}, after {before} recorded run(s); worker pid {worker}"
    )
    code = first.kill()
    run.server = None
    run.check(
        code == -signal.SIGKILL and alive(worker),
        f"server A (pid {first.pid}) killed with SIGKILL (exit {code}); the worker (pid {worker}) still runs",
    )
    grew = run.poll_until(
        lambda: sum(map(len, run.runs().values())) > before, "a run recorded with no server", limit=300
    )
    now = run.runs()
    run.check(
        grew,
        f"with no todoledger mcp running, the worker recorded runs: {before} -> {sum(map(len, now.values()))}"
        f" ({counts(now)})",
    )
    run.start_server()
    got = run.get()
    run.check(
        got["status"] == "working",
        f"a NEW todoledger mcp (server B) answers tasks/get for the same task: {got['status']}",
    )

    # 3. the worker killed in the middle of a combination -------------------------------------
    def middle() -> bool:
        found = run.runs()
        return any(len(a) == args.repeat for a in found.values()) and any(
            0 < len(a) < args.repeat for a in found.values()
        )

    if not run.poll_until(middle, "the middle of a combination"):
        run.check(False, f"no moment in the middle of a combination was seen: {counts(run.runs())}")
        return
    row = run.task_row()
    worker = int(row["pid"])
    os.kill(worker, signal.SIGKILL)
    killed_at = run.runs()
    say(f"# SIGKILL of the worker itself, pid {worker} (worker {row['workers']}), runs: {counts(killed_at)}")
    gone = wait_gone(worker)
    how = {"gone": "gone from /proc", "Z": "a zombie: its parent has not reaped it yet"}.get(
        state(worker), state(worker)
    )
    from todoledger.ledger import Ledger

    with Ledger(run.db) as lg:
        left = lg.sweep_live_setups(NAME, plan=PLAN)
    after_kill = run.runs()
    partial = [p for p, a in after_kill.items() if 0 < len(a) < args.repeat]
    run.check(
        gone and len(left) == 1 and len(partial) == 1,
        f"the worker (pid {worker}) was killed in the middle of {', '.join(partial) or 'no combination'}"
        f" ({how}):"
        f" its server (pid {left[0]['pid'] if left else None}) left running, runs recorded: {counts(after_kill)}",
    )
    got = run.get()
    resumed = got.get("statusMessage", "")
    run.check(
        got["status"] == "working" and resumed.startswith("resumed: worker 2 started"),
        f"the next tasks/get started a new worker: {got['status']}: `{resumed}`",
    )
    new_worker = int(run.task_row()["pid"] or 0)

    # 4. the end --------------------------------------------------------------------------------
    run.poll_until(lambda: run.last.get("status") in FINISHED, "the task's end")
    done = run.last
    result = done.get("result") or {}
    data = result.get("structuredContent") or {}
    run.check(
        done.get("status") == "completed" and result.get("isError") is False and data.get("stopped") is None,
        f"the task completed: {done.get('status')}: `{done.get('statusMessage', '')}`; the new worker ran"
        f" {data.get('runs')} runs in {data.get('setups')} setups, {data.get('failed')} failed",
    )
    final = run.runs()
    wanted = args.repeat
    run.check(
        all(len(a) == wanted for a in final.values()),
        f"every combination has exactly its {wanted} recorded runs, none more: {counts(final)}",
    )
    kept = all(set(killed_at[p]) <= set(final[p]) for p in killed_at)
    left_to_run = sum(wanted - len(a) for a in after_kill.values())
    run.check(
        kept and data.get("runs") == left_to_run,
        f"the runs recorded before the worker's kill were kept, and the new worker ran only the"
        f" {left_to_run} left (it says {data.get('runs')})",
    )
    row = run.task_row()
    with Ledger(run.db) as lg:
        live = lg.sweep_live_setups(NAME, plan=PLAN)
        runner = lg.sweep_definition(NAME, plan=PLAN)["runner"]
        told = [e["new"]["status"] for e in lg.history(PLAN) if e["field"] == "task"]
        setups = lg.sweep_results(NAME, plan=PLAN)["setups"]
    outcomes = [s["outcome"] for s in setups]
    run.check(
        row["workers"] == 2 and "torn down on resume after a kill" in outcomes,
        f"worker {row['workers']} finished it; the setup the killed worker left was torn down on resume"
        f" (outcomes: {', '.join(map(str, outcomes))})",
    )
    run.check(
        not live and runner is None,
        f"no setup recorded live ({len(live)}), the sweep's runner lease given back ({runner})",
    )
    run.check(
        wait_gone(new_worker) if new_worker else True,
        f"the second worker (pid {new_worker}) exited after storing the result",
    )
    theirs = clean_now(mine)
    run.check(
        theirs.returncode == 0,
        f"no server of this runner left (leftovers.py {mine.split()[-1]}): {theirs.stdout.strip()}",
    )
    run.check(
        told == ["working", "working", "completed"],
        f"the task's transitions in the plan's history: {told}",
    )
    say("$ todoledger tasks --all")
    todoledger(run.env, "tasks", "--all")


def leftovers(run: Run) -> None:
    """Whatever happened: a task still running is cancelled (its sweep's own teardown), the
    servers started here end; the last one at the end of its stdin, as a client that quits."""
    if run.task_id is not None and run.last.get("status") not in FINISHED:
        try:
            if run.server is None:
                run.start_server()
            assert run.server is not None
            say(f"# cancelling the task {run.task_id}: the runner stopped before it ended")
            run.server.rpc("tasks/cancel", {"taskId": run.task_id})
            run.poll_until(lambda: run.last.get("status") in FINISHED, "the cancel", limit=120)
        except (ServerGone, OSError) as exc:
            say(f"# could not cancel it: {exc}")
    for server in run.servers:
        if server.proc.poll() is None:
            code = server.close()
            if server is run.server:
                run.check(code == 0, f"server {server.label} exited {code} at the end of its stdin")
    if run.task_id is not None:  # a failed step may leave a worker or a server on the GPU: end them
        from todoledger.ledger import Ledger

        with Ledger(run.db) as lg:
            row = lg.task(run.task_id, None)
            live = lg.sweep_live_setups(NAME, plan=PLAN)
        if row is not None and row["pid"] is not None and alive(int(row["pid"])):
            say(f"# ending the task's worker, pid {row['pid']}, left running ({row['status']})")
            os.kill(int(row["pid"]), signal.SIGKILL)
            wait_gone(int(row["pid"]))
        for setup in live:
            say(f"# ending a setup the sweep left running: process group {setup['pid']}")
            with contextlib.suppress(OSError):
                os.killpg(int(setup["pid"]), signal.SIGKILL)
    for server in run.servers:
        with open(os.path.join(run.work, f"mcp-{server.label}.stderr")) as fh:
            said = fh.read().strip()
        if said:
            say(f"# server {server.label}'s stderr:")
            for line in said.splitlines():
                say(f"    {line}")


def finish(
    run: Run,
    args: argparse.Namespace,
    gpu: bool,
    gpu_text: str,
    size: str,
    port: int,
    clean: str,
) -> int:
    table, data = results(run.out, run.env)
    short = short_rows(data, args.repeat)
    run.check(
        not short,
        f"Every combination has its {args.repeat} runs, none failed."
        if not short
        else f"Rows short of {args.repeat} runs or failed: {short}",
    )
    left = clean_now(clean)
    run.check(
        left.returncode == 0,
        f"After the sweep, the clean check: exit {left.returncode}: {left.stdout.strip().splitlines()[-1:]}",
    )
    runs = run.runs() if run.task_id else {}
    elapsed = run.elapsed()
    summary = [
        "# GPU sweep as an MCP task (plan_sweep, the detached worker)",
        "",
        machine_line(gpu, gpu_text)
        + ("" if gpu else f"; the stand-in is `{STAND_IN} PORT`: this runner's servers still alive"),
        *plan_lines(
            size=size,
            k=args.k,
            repeat=args.repeat,
            warmup=args.warmup,
            tokens=args.tokens,
            port=port,
            commit=args.commit,
        ),
        f"- the agent: this runner's raw MCP client `{CLIENT}` on `todoledger mcp`'s pipes, protocol"
        f" 2026-07-28, declaring {EXTENSION}; the sweep is {OPERATOR}'s, approved by them",
        f"- wall time of the whole runner: {elapsed:.0f} s",
        f"- result: {'every step held' if run.ok else 'a step FAILED'}",
        "",
        "## Steps (each checked)",
        "",
        *[f"- {'ok' if ok else 'FAILED'}: {line}" for ok, line in run.checks],
        "",
        "## Task states seen (tasks/get, in order; every answer is in tasks.log)",
        "",
        f"- statuses: {' -> '.join(run.statuses) or 'none'}",
        "- status messages, each as it changed:",
        *[f"  - `{m}`" for m in run.messages],
        "",
        "## Recorded runs per combination (passing receipts in the ledger)",
        "",
        *[f"- {p}: {len(a)}" for p, a in runs.items()],
        "",
        "## Teardowns (what each waited for)",
        "",
        *[f"- {t}" for t in teardowns(data)],
        "",
        "## Results",
        "",
        "```",
        table.rstrip(),
        "```",
    ]
    with open(os.path.join(run.out, "summary.md"), "w") as fh:
        fh.write("\n".join(summary) + "\n")
    say("\n".join(summary))
    for extra in (run.db + "-wal", run.db + "-shm"):
        if os.path.exists(extra):
            say(f"# note: {os.path.basename(extra)} is still there (a connection still open)")
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
