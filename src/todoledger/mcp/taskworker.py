"""The worker of an MCP task: a detached `todoledger` process that runs the task's
tool call after the server replied, and outlives that server (a stdio server dies
with its client). SDK-free: `python -m todoledger.mcp.taskworker TASK_ID`.

Started by `spawn` only after the task's row is committed (ledger/tasks.py), in a
session of its own (`start_new_session`), stdio on the null device, in the
server's working folder and environment (so it opens the same ledger). A new
task's first worker takes the lease itself (host, pid, process start time; until
then the task counts as starting for `ledger.tasks.START_GRACE`); a resumed
task's lease is recorded by the server that started its worker (`start`, so that
of two servers resuming at once one wins). Then the worker:

- heartbeats (`ledger.tasks.BEAT`) from a thread with its own connection, and
  stops its own work (SIGTERM to itself) when the row says cancel, or the lease
  is no longer its own;
- runs the call through the same tools as the server (`mcp/tools.py` PlanTools),
  writing only as the task's recorded writer, never as its own process; a
  `plan_sweep` (`_sweep`) runs `ledger.sweeps.run` with this process as the
  sweep's runner (its lease), each step its status message (`progress_line`);
- stores the result: `completed` with the CallToolResult the server would have
  replied (a tool error included, `isError: true`, as SEP-2663 says), `cancelled`
  when it was stopped on a cancel (verify's own teardown, `checks.run.interruptible`,
  ended the checks' process groups), `failed` with a JSON-RPC error otherwise.

`resume` is what a `tasks/get` does for a `working` task whose worker lapsed
(`ledger.tasks.lapsed`: a dead pid on this host, no heartbeat elsewhere): a
cancelled one is marked so; a resumable step (RESUMABLE: `plan_verify` records
its receipts only when all its checks ran, so running it again resumes it) gets
a new worker, up to MAX_WORKERS (`plan_sweep` records each run: the new worker
tears down the setup a killed one left and runs only what is not recorded); else the task fails with a JSON-RPC error that
names the step and the command that resumes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.ledger import Ledger

RESUMABLE = frozenset({"plan_verify", "plan_sweep"})
MAX_WORKERS = 3  # workers started for one task before a lapse fails it instead
LEASE_WAIT = 10.0  # seconds a new worker waits to see the lease recorded as its own
INTERNAL_ERROR = -32603
_children: list[int] = []  # pids of the workers this server started: reaped, never waited on


def spawn(row: dict[str, Any]) -> int:
    """Start the worker process, detached (a session of its own, stdio on the null
    device); its pid. Its scheduling policy stays the server's: a SCHED_IDLE start
    would hold the server (posix_spawn waits for the exec) on a busy machine, and an
    unprivileged process may not take the normal policy back (RLIMIT_NICE)."""
    for pid in list(_children):  # reap the ones that ended (a long-lived HTTP server)
        with contextlib.suppress(ChildProcessError, ValueError):  # reaped by another spawn's thread
            if os.waitpid(pid, os.WNOHANG)[0]:
                _children.remove(pid)
    # -P: the project folder (the agent's) does not go on the module path ahead of todoledger's own.
    argv = [sys.executable, "-P", "-m", "todoledger.mcp.taskworker", row["id"]]
    env = dict(os.environ)
    quiet = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    where = row["cwd"] or os.getcwd()
    env["PWD"] = where
    pid = _spawn_in(where, argv, env, quiet)
    _children.append(pid)
    return pid


def _spawn_in(cwd: str, argv: list[str], env: dict[str, str], actions: list[Any]) -> int:
    """posix_spawn (a vfork: cheap beside the server's heap) has no working-folder action
    before Python 3.13: the worker is told its folder (TODOLEDGER_TASK_CWD) and changes
    to it first (`main`)."""
    env["TODOLEDGER_TASK_CWD"] = cwd
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


_pending: list[Any] = []  # threads still starting a worker (`spawn_soon`)


def spawn_soon(row: dict[str, Any]) -> None:
    """`spawn`, from a thread: the reply that names the task (its row is committed)
    goes out while the worker's process is started. `settle` waits for it before
    the server exits; a worker that never started is started again by the next
    `tasks/get` once the task's start grace passed (`ledger.tasks.lapsed`)."""
    import threading

    thread = threading.Thread(target=spawn, args=(row,), name="todoledger-task-spawn")
    _pending[:] = [t for t in _pending if t.is_alive()]
    _pending.append(thread)
    thread.start()


def settle() -> None:
    """Wait for the workers being started (a server about to exit)."""
    for thread in list(_pending):
        thread.join(timeout=10)


def start(lg: Ledger, row: dict[str, Any]) -> bool:
    """Start a worker for a lapsed task and record its lease, if the lease is still
    as `row` read it (one of two servers resuming at once wins); False: another did.
    (A new task's first worker takes the lease itself: one write less before the reply.)"""
    from todoledger.checks import lifecycle

    pid = spawn(row)
    took = lg.take_task_lease(
        row["id"], (row["host"], row["pid"]), lifecycle.host(), pid, lifecycle.start_ticks(pid)
    )
    if not took:  # it waits for a lease it will never see, and exits; no need to wait for it
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    return took


def resume_line(row: dict[str, Any]) -> tuple[str, str]:
    """(the step the task was on, the command that resumes it by hand)."""
    import shlex  # an agent names the plan and the ids: quoted, the line runs todoledger and nothing else

    args = row["arguments"] if isinstance(row["arguments"], dict) else {}
    if row["tool"] == "plan_verify":
        words = ["todoledger", "verify", "--plan", str(row["plan"]), *(str(i) for i in args.get("ids") or [])]
        return "running its checks", shlex.join(words)
    if row["tool"] == "plan_sweep":
        name = str(args.get("name"))
        return f"running sweep {name}", shlex.join(
            ["todoledger", "sweep", "run", name, "--plan", str(row["plan"])]
        )
    return f"running {row['tool']}", f"call {row['tool']} again"


def resume(lg: Ledger, row: dict[str, Any], why: str) -> dict[str, Any]:
    """A working task whose worker lapsed (`why`): cancelled if it was asked to be,
    a new worker for a resumable step, else failed with the resume line. The row after."""
    task_id = row["id"]
    if row["cancel"]:
        done = lg.task_transition(task_id, "cancelled", message=f"cancelled ({why})")
        return done or lg.task(task_id, None) or row
    if row["tool"] in RESUMABLE and int(row["workers"]) < MAX_WORKERS and start(lg, row):
        from todoledger.checks import lifecycle

        fresh = lg.task(task_id, None) or row
        message = f"resumed: worker {fresh['workers']} started ({why})"
        moved = lg.task_transition(
            task_id, "working", message=message, worker=(lifecycle.host(), int(fresh["pid"]))
        )
        return moved or lg.task(task_id, None) or fresh
    step, command = resume_line(row)
    tried = f" after {row['workers']} workers" if int(row["workers"]) >= MAX_WORKERS else ""
    message = f"{row['tool']} stopped while {step}: {why}{tried}; resume it with `{command}`"
    error = {"code": INTERNAL_ERROR, "message": message, "data": {"step": step, "resume": command}}
    done = lg.task_transition(task_id, "failed", message=message, error=error)
    return done or lg.task(task_id, None) or row


# the worker process --------------------------------------------------------------------------


class _Lost(BaseException):
    """SIGTERM outside the checks: the task was cancelled or its lease taken."""


def _on_term(signum: int, frame: object) -> None:
    raise _Lost


def _wait_for_lease(lg: Ledger, task_id: str, host: str, pid: int) -> dict[str, Any] | None:
    """The task's row once its lease is this process's: a new task's first worker takes
    it; a resumed task's was recorded by the server that started this one."""
    import time

    from todoledger.checks import lifecycle

    deadline = time.monotonic() + LEASE_WAIT
    while True:
        row = lg.task(task_id, None)
        if row is None or row["status"] not in ("working", "input_required"):
            return None
        if (row["host"], row["pid"]) == (host, pid):
            return row
        if row["pid"] is None and int(row["workers"]) == 0:  # a new task's first worker: it takes the lease
            if lg.take_task_lease(task_id, (None, None), host, pid, lifecycle.start_ticks(pid)):
                continue
            return None
        if time.monotonic() > deadline:  # the server that started it lost the race, or died first
            return None
        time.sleep(0.02)


def heartbeat(
    task_id: str, plan: str, host: str, pid: int, stop: Any, told: list[str], give_up: float | None = None
) -> None:
    """Beat until `stop`; on a cancel or a lost lease, say which in `told` and SIGTERM this process.
    A beat the ledger cannot take is tried again at the next; after `give_up` seconds (half the
    lapse) without one, this worker stops itself: past the lapse a server on another host would
    resume the task, and two workers would run its commands side by side."""
    import time

    from todoledger.ledger.ledger import Ledger
    from todoledger.ledger.tasks import BEAT, LAPSE

    limit = LAPSE / 2 if give_up is None else give_up
    last, lg = time.monotonic(), None
    try:
        while not stop.wait(min(BEAT, limit)):
            try:
                lg = lg or Ledger()
                row = lg.beat_task(task_id, plan, host, pid)
            except Exception:  # unreachable for this beat: a new connection at the next
                if lg is not None:
                    with contextlib.suppress(Exception):
                        lg.close()
                lg = None
                if time.monotonic() - last > limit:
                    told.append("lost")
                    os.kill(pid, signal.SIGTERM)
                    return
                continue
            last = time.monotonic()
            if row is None or row["cancel"]:
                told.append("lost" if row is None else "cancel")
                os.kill(pid, signal.SIGTERM)
                return
    finally:
        if lg is not None:
            with contextlib.suppress(Exception):
                lg.close()


def _call_result(data: dict[str, Any]) -> dict[str, Any]:
    """The CallToolResult the server would have replied (mcp/server.py `_result`)."""
    import json

    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "structuredContent": data, "isError": False}


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def progress_line(p: dict[str, Any]) -> str:
    """A sweep's progress as the task's status message: "k=8: repeat 2/5 holds"."""
    params = " ".join(f"{k}={v}" for k, v in p["params"].items()) or "sweep"
    where = f" (combination {p['combination']} of {p['of']})" if p.get("combination") else ""
    if p.get("phase", "run") == "run":
        return f"{params}: repeat {p['repeat']}/{p['repeats']} {p['result']}{where}"
    return f"{params}: {p['line']}"[:300]


def _sweep(lg: Ledger, tools: Any, row: dict[str, Any], me: tuple[str, int]) -> dict[str, Any]:
    """Run the task's sweep as its writer, this process the sweep's runner (its lease,
    `ledger.sweeps`): recorded runs are never run again, a setup a killed worker left
    is torn down first; each step is the task's status message. A cancel (SIGTERM)
    ends it through the sweep's own teardown, then `_Lost`."""
    from todoledger.checks import run as checks_run

    def told(p: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):  # a missed note is only a stale message
            lg.task_note(row["id"], progress_line(p), me)

    name = str(row["arguments"]["name"])
    data: dict[str, Any] = tools.run_sweep(name, str(row["arguments"]["plan"]), row["writer"], told)
    # A signal stopped it (the sweep's clean check after a teardown lets checks run again,
    # so `stopping()` may be clear by now: the answer's line and the cancel flag tell).
    signalled = str(data.get("stopped") or "").startswith(f"sweep {name} was stopped (")
    now = lg.task(row["id"], None)
    if checks_run.stopping() is not None or signalled or (now is not None and now["cancel"]):
        raise _Lost
    return data


def run(task_id: str) -> int:
    import threading

    from todoledger.checks import lifecycle
    from todoledger.checks import run as checks_run
    from todoledger.core.model import LedgerError
    from todoledger.ledger.ledger import Ledger
    from todoledger.mcp.tools import PlanTools

    host, pid = lifecycle.host(), os.getpid()
    me = (host, pid)
    signal.signal(signal.SIGTERM, _on_term)
    with Ledger() as lg:
        row = _wait_for_lease(lg, task_id, host, pid)
        if row is None:
            return 0
        if row["cancel"]:  # cancelled while this worker was starting: nothing of it runs
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            said = f"cancelled before {row['tool']} ran"
            lg.task_transition(task_id, "cancelled", message=said, worker=me)
            return 0
        stop = threading.Event()
        told: list[str] = []  # what the heartbeat saw before it stopped this process: cancel | lost
        beat = threading.Thread(
            target=heartbeat, args=(task_id, row["plan"], host, pid, stop, told), daemon=True
        )
        beat.start()
        tools = PlanTools(default_plan=row["plan"], cwd=None, shared=None)  # the plan the server resolved
        status, result, error, message = "completed", None, None, None
        try:
            try:
                if row["tool"] == "plan_sweep":
                    data = _sweep(lg, tools, row, me)
                else:
                    data = getattr(tools, row["tool"])(row["arguments"], row["writer"])
                result = _call_result(data)
                message = f"{row['tool']} finished"
            except LedgerError as exc:
                if checks_run.stopping() is not None:
                    raise _Lost from None
                tools.note_refusal(row["tool"], row["arguments"], row["writer"], str(exc))
                result, message = _tool_error(str(exc)), f"{row['tool']} refused: {exc}"[:300]
        except _Lost:
            now = lg.task(task_id, None)
            if "lost" in told or now is None or (now["host"], now["pid"]) != me:
                return 0  # another worker holds it now: nothing of ours to record
            if now["cancel"] or "cancel" in told:
                status, message = "cancelled", f"cancelled: {row['tool']} stopped and its checks ended"
            else:
                step, command = resume_line(row)
                status = "failed"
                message = f"{row['tool']} was stopped (SIGTERM) while {step}; resume it with `{command}`"
                error = {
                    "code": INTERNAL_ERROR,
                    "message": message,
                    "data": {"step": step, "resume": command},
                }
        except Exception as exc:  # a bug: the task fails with one sentence, never a traceback
            status = "failed"
            message = f"internal error in {row['tool']} ({type(exc).__name__})"
            error = {"code": INTERNAL_ERROR, "message": message}
        finally:
            stop.set()
            tools.close()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the result is stored whatever comes now
        lg.task_transition(task_id, status, message=message, result=result, error=error, worker=me)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    where = os.environ.pop("TODOLEDGER_TASK_CWD", None)
    if where:
        os.chdir(where)
    if len(args) != 1:
        sys.stderr.write("usage: python -m todoledger.mcp.taskworker TASK_ID\n")
        return 2
    return run(args[0])


if __name__ == "__main__":
    sys.exit(main())
