"""Sweeps as the seeds ran them (issue 22), with real processes throughout: a
setup that starts a real local server per combination, a ready check
against it, teardown after the runs, on a failure, on Ctrl-C and after a
SIGKILL, a clean check that catches what a teardown left, warm-up runs that
are not counted, the order of the runs, and who may run a sweep."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import act_as_person, person_env, subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.core import sweep as core
from todoledger.core.model import LedgerError
from todoledger.ledger import sweeps

PY = sys.executable

# A stand-in server: one per combination. It logs what it does (start, ready, each
# benchmark request, SIGTERM) so that the test can tell which server served which run.
SERVER = r"""
import http.server, json, os, signal, sys, time
port, k, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else ""
here = os.path.dirname(os.path.abspath(__file__))

def note(event):
    with open(os.path.join(here, "servers.log"), "a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "k": k, "event": event, "t": time.time()}) + "\n")

def on_term(*_):
    note("sigterm")
    os._exit(0)

signal.signal(signal.SIGTERM, on_term)
note("start")
print(f"loading weights for k={k}...", flush=True)
if mode == "crash":
    sys.exit(3)
time.sleep(delay)
TOK_S = {0: 82.0, 16: 60.0, 8: 70.0, 4: 76.0}

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = b"ok"
        elif self.path == "/bench":
            note("bench")
            body = json.dumps({"tok_s": TOK_S.get(k, 50.0), "k": k, "pid": os.getpid()}).encode()
        else:
            body = b"?"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

srv = http.server.HTTPServer(("127.0.0.1", port), H)
if mode == f"worker{k}" and os.fork() == 0:
    # A worker in a session of its own that holds the port: a teardown that ends
    # only the main process leaves it behind, as the seeds' zombie GPU processes.
    os.setsid()
    note("worker")
    with open(os.path.join(here, "worker.pid"), "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        time.sleep(1)
with open(os.path.join(here, f"main-{k}.pid"), "w") as fh:
    fh.write(str(os.getpid()))
note("ready")
srv.serve_forever()
"""

# The benchmark run: asks the combination's server, prints its answer as JSON.
CLIENT = r"""
import json, os, sys, time, urllib.request
port = int(sys.argv[1])
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
with urllib.request.urlopen(f"http://127.0.0.1:{port}/bench", timeout=10) as answer:
    found = json.load(answer)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.log"), "a") as fh:
    fh.write(json.dumps(found) + "\n")
time.sleep(pause)
print(json.dumps(found))
"""


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their registered token."""
    act_as_person(ledger_env, monkeypatch)


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "client.py").write_text(CLIENT)
    return tmp_path


@pytest.fixture
def port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def events(folder: Path) -> list[dict[str, Any]]:
    path = folder / "servers.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def served(lg: Ledger, port: int, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "template": "Benchmark k={k}",
        "params": ["k=16,8"],
        "baseline": ["k=0"],
        "setup": f"python3 server.py {port} {{k}} 0.3",
        "ready": f"http://127.0.0.1:{port}/health",
        "ready_options": {"expect": "ok"},
        "ready_timeout": 30,
        "clean": f"port:127.0.0.1:{port}",
        "run": f"python3 client.py {port}",
        "metrics": ["tok_s=$.tok_s", "served_k=$.k"],
        "repeat": 3,
        "keep": "tok_s>baseline",
    } | kw
    return lg.add_sweep("s", **args)


def test_each_combination_is_measured_on_its_own_server_once_ready(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        made = served(lg, port, warmup=1)
        out = sweeps.run(lg, "s", ready_interval=0.1)
        assert (out["runs"], out["failed"], out["warmups"], out["setups"]) == (9, 0, 3, 3)
        assert out["stopped"] is None
        result = lg.sweep_results("s")
        # Every counted run was served by the server started for its own setting.
        for it in made["items"]:
            ks = [m["value"] for m in lg.metrics(it["id"]) if m["name"] == "served_k"]
            assert ks == [float(it["params"]["k"])] * 3
        setups = result["setups"]
        assert [s["outcome"] for s in setups] == ["done"] * 3
        receipt = next(r for r in lg.receipts() if r["item"] == made["items"][0]["id"])
        assert receipt["env"]["command"] == f"python3 client.py {port}"
        assert receipt["env"]["params"] == {"k": "16"}
        assert receipt["env"]["host"] == socket.gethostname() and "python" in receipt["env"]
        assert receipt["env"]["gpus"] is None  # no nvidia-smi on this machine: said so, not invented
        assert receipt["tree"]["inputs"].keys() == {"client.py", "server.py"}  # what the run depends on
        view = {i["content"]: i for i in lg.show()["items"]}
        assert view["Benchmark k=16, 8; baseline 0"]["status"] == "completed"
    log = events(scripts)
    assert not listening(port)
    # Warm-up runs are not counted: each server answered 1 + 3 benchmark requests, 3 were kept.
    by_pid: dict[int, list[str]] = {}
    for e in log:
        by_pid.setdefault(e["pid"], []).append(e["event"])
    assert sorted(by_pid.values()) == [["start", "ready", "bench", "bench", "bench", "bench", "sigterm"]] * 3
    rows = {(r["params"]["k"], r["metric"]): r for r in result["rows"]}
    assert rows[("16", "tok_s")]["n"] == 3 and rows[("16", "tok_s")]["median"] == 60.0
    assert rows[("16", "tok_s")]["verdict"] == "discard" and rows[("16", "tok_s")]["ratio"] == 60 / 82
    # Never two servers at once: each started after the one before it got SIGTERM.
    starts = [e for e in log if e["event"] == "start"]
    terms = [e for e in log if e["event"] == "sigterm"]
    assert all(terms[n]["t"] <= starts[n + 1]["t"] for n in range(len(starts) - 1))


def test_ready_timeout_fails_the_combination_with_the_setups_output(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        served(
            lg,
            port,
            params=["k=16"],
            baseline=[],
            keep=None,
            setup=f"python3 server.py {port} {{k}} 600",
            ready_timeout=2,
        )
        lg.add_sweep(
            "crash",
            template="Crash k={k}",
            params=["k=4"],
            setup=f"python3 server.py {port} {{k}} 0 crash",
            ready=f"http://127.0.0.1:{port}/health",
            ready_timeout=60,
            run=f"python3 client.py {port}",
            metrics=["tok_s=$.tok_s"],
        )
        started = time.monotonic()
        out = sweeps.run(lg, "s", ready_interval=0.2)
        waited = time.monotonic() - started
        assert (out["runs"], out["failed"]) == (0, 1)
        item = next(i for i in lg.show()["items"] if i["content"] == "Benchmark k=16" and i["parent"])
        (receipt,) = [r for r in lg.receipts(item["id"])]
        assert receipt["result"] == "error"
        assert (
            "not ready after 2 s" in receipt["output"] and "loading weights for k=16..." in receipt["output"]
        )
        assert item["status"] == "in_progress" and item["verification"] == "failed"
        assert waited >= 2
        # A setup that exits is not waited for until the timeout.
        started = time.monotonic()
        out = sweeps.run(lg, "crash", ready_interval=0.2)
        assert time.monotonic() - started < 15 and out["failed"] == 1
        item = next(i for i in lg.show()["items"] if i["content"] == "Crash k=4" and i["parent"])
        (receipt,) = lg.receipts(item["id"])
        assert "the setup exited (status 3)" in receipt["output"]
        assert "loading weights for k=4..." in receipt["output"]
    (pid,) = {e["pid"] for e in events(scripts) if e["k"] == 16}
    assert not alive(pid)  # the server that never got ready was torn down


def test_sigkill_while_a_setup_runs_then_resume_tears_it_down_first(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        served(lg, port, run=f"python3 client.py {port} 0.3", repeat=2)
    proc = subprocess.Popen(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not [e for e in events(scripts) if e["event"] == "bench"] and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (first,) = {e["pid"] for e in events(scripts) if e["event"] == "start"}
    assert alive(first) and listening(port)  # the killed run's server outlives it, as a real one would
    with Ledger() as lg:
        (live,) = lg.sweep_live_setups("s")
        assert live["params"] == {"k": "16"}
    resumed = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    assert "tearing down the setup a killed run left" in lines[0]
    assert "teardown: the setup process group: ended (SIGTERM)" in lines[1]
    log = events(scripts)
    killed_term = next(n for n, e in enumerate(log) if e["pid"] == first and e["event"] == "sigterm")
    later_starts = [n for n, e in enumerate(log) if e["event"] == "start" and e["pid"] != first]
    assert later_starts and all(n > killed_term for n in later_starts)  # torn down before anything new
    assert not alive(first) and not listening(port)
    with Ledger() as lg:
        assert lg.sweep_live_setups("s") == []
        assert all(i["status"] == "completed" for i in lg.show()["items"])
        outcomes = [s["outcome"] for s in lg.sweep_results("s")["setups"]]
        assert outcomes[0] == "torn down on resume after a kill" and outcomes[1:] == ["done"] * 3
        assert lg.check() == []


def test_a_teardown_that_leaves_a_process_is_caught_by_the_clean_check(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        served(
            lg,
            port,
            repeat=1,
            keep=None,
            setup=f"python3 server.py {port} {{k}} 0.2 worker16",
            # Ends the main process only: the worker it forked in a session of its own stays.
            teardown="kill $(cat main-{k}.pid)",
            teardown_timeout=2,
            clean_timeout=2,
        )
    stopped = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=120,
    )
    worker = int((scripts / "worker.pid").read_text())
    assert stopped.returncode == 1
    last = stopped.stderr.strip().splitlines()[-1]
    # The teardown waits for the ready check's port; what still holds it stops the sweep, named.
    assert last.startswith(f"sweep s stopped after k=16: its teardown could not free port {port} within 2 s")
    assert f"(held by pid {worker}: " in last
    assert "server.py" in last
    assert not [e for e in events(scripts) if e["k"] != 16]  # the next configuration never started
    again = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 1 and "not started: its clean check" in again.stderr
    assert not [e for e in events(scripts) if e["k"] != 16]
    os.kill(worker, signal.SIGKILL)  # what a person does, told which process it is
    deadline = time.monotonic() + 10
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    done = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert {e["k"] for e in events(scripts) if e["event"] == "bench"} == {16, 8, 0}
    assert not listening(port)
    with Ledger() as lg:
        setups = lg.sweep_results("s")["setups"]
        assert setups[0]["outcome"] == f"done; port {port} still held"
        assert all(i["status"] == "completed" for i in lg.show()["items"])


def test_ctrl_c_tears_the_setup_down(ledger_env: Path, scripts: Path, port: int) -> None:
    with Ledger() as lg:
        served(lg, port, run=f"python3 client.py {port} 5", repeat=2, keep=None)
    proc = subprocess.Popen(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not [e for e in events(scripts) if e["event"] == "bench"] and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "was stopped (SIGINT)" in err and "setup torn down" in err
    assert not listening(port)
    (server,) = {e["pid"] for e in events(scripts)}
    assert not alive(server)
    with Ledger() as lg:
        (setup,) = lg.sweep_results("s")["setups"]
        assert setup["outcome"] == "interrupted (SIGINT)" and setup["ended_at"]
        assert lg.sweep_live_setups("s") == []


def test_order_is_grouped_interleaved_or_shuffled_by_seed(ledger_env: Path, scripts: Path) -> None:
    def order(kind: str, seed: int = 0) -> list[int]:
        s = core.define(
            "o",
            template="{k}",
            params=["k=1,2,3"],
            run="x {k}",
            metrics=["a=(1)"],
            repeat=3,
            order=kind,
            seed=seed,
        )
        return core.schedule(s, {0: 3, 1: 3, 2: 3}, 3)

    assert order("grouped") == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert order("interleaved") == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert order("shuffled", 7) == order("shuffled", 7) != order("shuffled", 8)
    assert sorted(order("shuffled", 7)) == order("grouped")
    # A resumed sweep keeps its order: what is left of a shuffled order is its tail.
    s = core.define(
        "o",
        template="{k}",
        params=["k=1,2,3"],
        run="x {k}",
        metrics=["a=(1)"],
        repeat=3,
        order="shuffled",
        seed=7,
    )
    full = core.schedule(s, {0: 3, 1: 3, 2: 3}, 3)
    for cut in range(len(full)):
        made = {i: full[:cut].count(i) for i in range(3)}
        assert core.schedule(s, {i: 3 - made[i] for i in range(3)}, 3) == full[cut:]
    # Real runs follow it, the same for the same seed in two sweeps.
    (scripts / "note.py").write_text(
        "import sys\nopen('order.log', 'a').write(sys.argv[1] + ' ' + sys.argv[2] + '\\n')\nprint('a=1')\n"
    )
    seen = []
    with Ledger() as lg:
        for name in ("first", "second"):
            lg.add_sweep(
                name,
                template="Note {k}",
                params=["k=1,2,3"],
                run=f"python3 note.py {name} {{k}}",
                metrics=["a=a=(1)"],
                repeat=3,
                order="shuffled",
                seed=7,
                plan=name,
            )
            sweeps.run(lg, name, plan=name)
            seen.append(
                [
                    line.split()[1]
                    for line in (scripts / "order.log").read_text().splitlines()
                    if line.startswith(name)
                ]
            )
    assert seen[0] == seen[1] == [str(i + 1) for i in full]


def test_interleaving_a_setup_is_asked_for_explicitly(ledger_env: Path, scripts: Path, port: int) -> None:
    with Ledger() as lg:
        with pytest.raises(LedgerError, match="--allow-restarts"):
            served(lg, port, order="interleaved")
        assert lg.show()["items"] == []
    proc = subprocess.run(
        [
            todoledger_bin(),
            "sweep",
            "add",
            "s",
            "--template",
            "k={k}",
            "--param",
            "k=16,8",
            "--setup",
            f"python3 server.py {port} {{k}} 0",
            "--run",
            f"python3 client.py {port}",
            "--metric",
            "tok_s=$.tok_s",
            "--repeat",
            "3",
            "--order",
            "interleaved",
            "--allow-restarts",
        ],
        env=person_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: --order interleaved with --setup: the setup starts 6 times" in proc.stderr


def test_an_agents_sweep_runs_only_once_a_person_approves_it(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    agent = subprocess_env(ledger_env, TODOLEDGER_AGENT="claude-code")
    agent.pop("TODOLEDGER_TOKEN", None)
    add = [
        todoledger_bin(),
        "sweep",
        "add",
        "s",
        "--template",
        "k={k}",
        "--param",
        "k=16",
        "--setup",
        f"python3 server.py {port} {{k}} 0",
        "--ready",
        f"http://127.0.0.1:{port}/health",
        "--run",
        f"python3 client.py {port}",
        "--metric",
        "tok_s=$.tok_s",
    ]
    made = subprocess.run(add, env=agent, capture_output=True, text=True, timeout=60, cwd=scripts)
    assert made.returncode == 0, made.stderr
    assert "nothing runs until a person approves it (todoledger sweep trust s)" in made.stderr
    refused = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=agent,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=scripts,
    )
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "written by agent-shell:claude-code, not a person" in line and "nothing was run" in line
    assert events(scripts) == []  # no server was started
    # A person running it does not make it theirs: it waits for an approval all the same.
    as_person = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=person_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=scripts,
    )
    assert as_person.returncode == 1 and "not a person" in as_person.stderr and events(scripts) == []
    # The agent cannot approve its own sweep.
    own = subprocess.run(
        [todoledger_bin(), "sweep", "trust", "s", "--yes"],
        env=agent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert own.returncode == 1 and "a person must run it" in own.stderr
    trusted = subprocess.run(
        [todoledger_bin(), "sweep", "trust", "s", "--yes"],
        env=person_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert trusted.returncode == 0, trusted.stderr
    assert f"setup: python3 server.py {port} 16 0" in trusted.stdout  # every command shown, filled in
    assert f"ready: http://127.0.0.1:{port}/health" in trusted.stdout
    assert "teardown: (the setup's process group is ended)" in trusted.stdout
    assert "approved sweep s (1 combinations) as cli:tester" in trusted.stdout
    ran = subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=agent,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=scripts,
    )
    assert ran.returncode == 0, ran.stderr
    with Ledger() as lg:
        shown = lg.sweep_definition("s")
        assert shown["created_by"] == "agent-shell:claude-code" and shown["approved_by"] == "cli:tester"
        child = next(i for i in lg.show()["items"] if i["content"] == "k=16" and i["parent"])
        assert child["verification"] == "verified"  # a person approved the command that measured it


def test_runs_go_stale_by_their_inputs_not_by_the_rest_of_the_tree(ledger_env: Path, tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "bench.py").write_text("import sys\nprint('tok_s', 60 + int(sys.argv[1]))\n")
    (tmp_path / "model.cfg").write_text("layers=2\n")
    (tmp_path / "unrelated.py").write_text("print('hello')\n")
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first")
    with Ledger() as lg:
        lg.add_sweep(
            "s",
            template="Run {n}",
            params=["n=1,2"],
            baseline=["n=0"],
            run="python3 bench.py {n}",
            metrics=[r"tok_s=tok_s (\d+)"],
            repeat=3,
            keep="tok_s>baseline",
            watch=["model.cfg"],
        )
        sweeps.run(lg, "s")
        env = lg.receipts()[0]["env"]
        assert len(env["git"]["commit"]) == 40 and env["git"]["dirty"] is False  # for display
        (tmp_path / "unrelated.py").write_text("print('changed')\n")  # the seeds' trial: a one-line edit
        fresh = lg.sweep_results("s")
        assert fresh["stale"] == 0 and all(r["n"] == 3 for r in fresh["rows"])
        assert all(i["verification"] == "verified" for i in lg.show()["items"] if i["parent"])
        assert fresh["inputs"] == ["bench.py", "model.cfg"]
        (tmp_path / "model.cfg").write_text("layers=4\n")  # a watched input changed
        stale = lg.sweep_results("s")
        assert stale["stale"] == 9
        from todoledger.web.sweeps_page import page

        board = str(page("main", [(lg.sweeps()[0], stale)]))  # the board says so under the table too
        assert "9 stale runs (their inputs changed since): left out" in board
        rows = {r["params"]["n"]: r for r in stale["rows"]}
        assert rows["1"]["n"] == 0 and rows["1"]["flags"] == ["not run", "3 stale runs left out"]
        assert rows["1"]["verdict"] is None  # no verdict on stale numbers
        counted = lg.sweep_results("s", include_stale=True)
        assert {r["params"]["n"]: r["n"] for r in counted["rows"]} == {"1": 3, "2": 3, "0": 3}
        assert counted["rows"][0]["flags"][-1] == "3 stale runs included"
        assert all(i["verification"] == "stale" for i in lg.show()["items"] if i["parent"])
        assert sweeps.run(lg, "s")["runs"] == 0  # completed: a plain run leaves them
        again = sweeps.run(lg, "s", stale=True)
        assert again["runs"] == 9
        after = lg.sweep_results("s")
        assert after["stale"] == 9 and all(r["n"] == 3 for r in after["rows"])  # the fresh ones count
        assert all(i["verification"] == "verified" for i in lg.show()["items"] if i["parent"])
    table = subprocess.run(
        [todoledger_bin(), "sweep", "results", "s"],
        env=subprocess_env(ledger_env),
        capture_output=True,
        text=True,
    ).stdout
    assert "9 stale runs (their inputs changed since): left out; --include-stale counts them" in table
    assert "inputs (fresh for these, by content): bench.py, model.cfg" in table
    assert "ran on: host " in table and "commit " in table


def test_a_verdict_on_too_few_runs_or_a_spread_wider_than_the_difference_is_inconclusive() -> None:
    s = core.define(
        "v",
        template="{k}",
        params=["k=16"],
        baseline=["k=0"],
        run="x {k}",
        metrics=["t=(1)"],
        repeat=3,
        keep="t>baseline",
    )

    def verdict(values: list[float], base: list[float]) -> tuple[str, list[str]]:
        runs: core.Runs = [
            ({"k": "16"}, False, {"t": [(v, True) for v in values]}),
            ({"k": "0"}, True, {"t": [(v, True) for v in base]}),
        ]
        row = core.results(s, runs)[0]
        return row["verdict"], row["flags"]

    assert verdict([60, 61, 59], [82, 81, 83]) == ("discard", [])
    assert verdict([90, 91, 92], [82, 81, 83]) == ("keep", [])
    assert verdict([60, 61], [82, 81, 83])[0] == "inconclusive"
    assert verdict([60, 61, 59], [82, 81])[1][0] == "too few runs (2 < 3)"
    # the seeds' noisy baseline: 82 vs 60 on the same setting
    wide = verdict([70, 71, 72], [60, 82, 75])
    assert wide[0] == "inconclusive" and wide[1][0] == "spread 22 > difference 4 to the baseline"


def test_compare_sets_two_sweeps_side_by_side(ledger_env: Path, tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("import sys\nprint('t', int(sys.argv[1]) * int(sys.argv[2]))\n")
    with Ledger() as lg:
        for name, factor in (("monday", 10), ("tuesday", 12)):
            lg.add_sweep(
                name,
                template="{n}",
                params=["n=1,2"],
                run=f"python3 b.py {{n}} {factor}",
                metrics=[r"t=t (\d+)"],
                repeat=3,
            )
            sweeps.run(lg, name)
    proc = subprocess.run(
        [todoledger_bin(), "sweep", "compare", "monday", "tuesday"],
        env=subprocess_env(ledger_env),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "params",
        "metric",
        "A",
        "n",
        "A",
        "median",
        "B",
        "n",
        "B",
        "median",
        "B/A",
        "change",
    ]
    assert lines[1].split() == ["n=1", "t", "3", "10", "3", "12", "1.20x", "differs"]
    assert lines[2].split() == ["n=2", "t", "3", "20", "3", "24", "1.20x", "differs"]
    assert lines[3].startswith("A = monday (plan main): host ")


def test_bad_lifecycle_definitions_change_nothing(ledger_env: Path) -> None:
    base: dict[str, Any] = {
        "template": "{k}",
        "params": ["k=1"],
        "run": "python3 x.py {k}",
        "metrics": ["t=(1)"],
    }
    cases = [
        ({"teardown": "kill it"}, "give --setup"),
        ({"setup": "  "}, "--setup must not be empty"),
        ({"ready": "gopher://x"}, "--ready: bad check"),
        ({"ready": "metric:t>1"}, "--ready: a metric: check"),
        ({"clean": "port:127.0.0.1:{nope}"}, "--clean:"),
        ({"setup": "serve {nope}"}, "{nope} is not a parameter"),
        ({"warmup": -1}, "--warmup must be"),
        ({"order": "random"}, "--order must be one of"),
        ({"ready": "http://127.0.0.1:1/h", "ready_timeout": 0}, "--ready-timeout"),
    ]
    with Ledger() as lg:
        for kw, says in cases:
            with pytest.raises(LedgerError) as err:
                lg.add_sweep("bad", **(base | kw))
            assert says in str(err.value) and "\n" not in str(err.value), (kw, str(err.value))
        assert lg.show()["items"] == [] and lg.history() == []


def test_completions_by_a_check_or_a_sweep_are_not_claims_without_progress(
    ledger_env: Path, tmp_path: Path
) -> None:
    from todoledger.ingest.report import load as load_report
    from todoledger.ledger import verify

    (tmp_path / "b.py").write_text("import sys\nprint('t', sys.argv[1])\n")
    (tmp_path / "up.txt").write_text("up\n")
    with Ledger() as lg:
        verify.assume(lg, "The server answers", check="file:up.txt")
        lg.verify(roles=("assumption",))
        lg.add_sweep(
            "s", template="Run {n}", params=["n=1,2"], run="python3 b.py {n}", metrics=[r"t=t (\d+)"]
        )
        sweeps.run(lg, "s")
        lg.write(
            '{"todos":[{"content":"Benchmark baseline","status":"completed","priority":"high"}]}',
            writer="opencode:ses1",
            dialect="opencode",
        )
        done = {i["content"]: i["status"] for i in lg.show()["items"]}
        assert done["The server answers"] == done["Run 1, 2"] == done["Benchmark baseline"] == "completed"
        report = load_report(lg, "main")
    flagged = [f.message for f in report.findings if f.code == "completed-without-progress"]
    assert flagged == ['"Benchmark baseline" was added already completed']


def test_a_closed_port_check_names_who_still_listens(port: int) -> None:
    from todoledger.checks import run as runner
    from todoledger.core.checkspec import parse

    check = parse(f"port:127.0.0.1:{port}", {"closed": True})
    assert check.describe() == f"nothing listens on 127.0.0.1:{port}" and check.options() == {"closed": True}
    with pytest.raises(LedgerError, match="closed applies to port: checks only"):
        parse("http://127.0.0.1:1/", {"closed": True})
    inputs = runner.Inputs(cwd=".")
    assert runner.run(check, inputs).result == "holds"
    with socket.socket() as held:
        held.bind(("127.0.0.1", port))
        held.listen()
        found = runner.run(check, inputs)
    assert found.result == "fails"
    assert f"a process still listens on 127.0.0.1:{port} (pid {os.getpid()}: " in found.output


def test_the_pre_tool_screen_denies_an_agent_its_own_sweeps_approval() -> None:
    from todoledger.screen import person_only_verb

    assert person_only_verb("todoledger sweep trust draft --yes") == "sweep trust"
    assert person_only_verb("env -u CLAUDECODE todoledger sweep trust draft") == "sweep trust"
    assert person_only_verb("todoledger sweep run draft") is None
    assert person_only_verb("todoledger sweep show draft") is None


def test_interleaved_order_with_a_setup_restarts_it_between_runs(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        served(lg, port, baseline=[], keep=None, repeat=2, warmup=1, order="interleaved", restarts=True)
        out = sweeps.run(lg, "s", ready_interval=0.1)
        assert (out["runs"], out["setups"], out["warmups"]) == (4, 4, 4)  # a warm-up after every start
    log = events(scripts)
    servers = [e["k"] for e in log if e["event"] == "start"]
    assert servers == [16, 8, 16, 8]
    # Each run was measured by a server of its own setting, one server at a time.
    benches = [(e["pid"], e["k"]) for e in log if e["event"] == "bench"]
    assert len(benches) == 8 and len({pid for pid, _ in benches}) == 4
    assert not listening(port)
