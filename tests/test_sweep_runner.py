"""Sweeps on a real machine (issue 28), with real processes: one runner per sweep,
a ready check that counts only the setup's own answer, a teardown that waits
until the setup is really gone (every thread, and its port free), a clean
check that is polled, a resume after a SIGKILL of the runner itself, and the
GPU runners (`bench/gpu_sweep/run.py`, and `run_task.py`: the sweep as an MCP
task) end to end on the CPU."""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import act_as_person, subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.store.checks import CheckRepo

ROOT = Path(__file__).resolve().parents[1]

# A stand-in server, one per combination, on the port the sweep names. Modes:
#  "": ends on SIGTERM at once;
#  "late": sleeps 1 s before it binds (another process may hold the port by then: it exits 1);
#  "thread": on SIGTERM its MAIN THREAD exits (the thread only, a raw exit system call) while a
#            worker thread keeps the listening socket 2 s more: Linux then shows the leader as a
#            zombie while the process still holds the port.
SERVER = r"""
import ctypes, http.server, json, os, platform, signal, sys, threading, time
port, k, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else ""
here = os.path.dirname(os.path.abspath(__file__))

def note(event):
    with open(os.path.join(here, "servers.log"), "a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "k": k, "event": event, "t": time.time()}) + "\n")

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = b"ok"
        else:
            note("bench")
            body = json.dumps({"tok_s": 60.0 + k, "k": k, "pid": os.getpid()}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

if mode == "late":
    time.sleep(1)
srv = http.server.HTTPServer(("127.0.0.1", port), H)
note("start")
if mode == "thread":
    exit_thread = {"x86_64": 60, "aarch64": 93}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)  # CDLL: the GIL is released around the call

    def keep_port():
        srv.serve_forever()

    def on_term(*_):
        note("sigterm")
        def linger():
            time.sleep(2)
            note("port closed")
            os._exit(0)
        threading.Thread(target=linger).start()
        libc.syscall(exit_thread, 0)  # this thread only: the process lives on in its others

    signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=keep_port, daemon=True).start()
    while True:
        time.sleep(1)
else:
    signal.signal(signal.SIGTERM, lambda *_: (note("sigterm"), os._exit(0)))
    srv.serve_forever()
"""

CLIENT = r"""
import json, sys, time, urllib.request
port, pause = int(sys.argv[1]), float(sys.argv[2])
with urllib.request.urlopen(f"http://127.0.0.1:{port}/bench", timeout=10) as answer:
    found = json.load(answer)
time.sleep(pause)
print(json.dumps(found))
"""

# Fails (with output) until the teardown of its combination (which writes down-K) is 3 s old.
SETTLING = r"""
import os, sys, time
k = sys.argv[1]
mark = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"down-{k}")
if not os.path.exists(mark):
    print("nothing was torn down yet")
    sys.exit(0)
age = time.time() - float(open(mark).read())
if age < 3:
    print(f"k={k}: the device still lists the server ({age:.1f} s after its teardown)")
    sys.exit(1)
print("nothing left")
"""


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    act_as_person(ledger_env, monkeypatch)


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "client.py").write_text(CLIENT)
    (tmp_path / "settling.py").write_text(SETTLING)
    return tmp_path


@pytest.fixture
def port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def define(lg: Ledger, port: int, **kw: Any) -> None:
    args: dict[str, Any] = {
        "template": "Benchmark k={k}",
        "params": ["k=16"],
        "baseline": ["k=0"],
        "setup": f"python3 server.py {port} {{k}}",
        "ready": f"http://127.0.0.1:{port}/health",
        "ready_options": {"expect": "ok"},
        "ready_timeout": 20,
        "run": f"python3 client.py {port} 0",
        "metrics": ["tok_s=$.tok_s", "served_k=$.k"],
        "repeat": 2,
    } | kw
    lg.add_sweep("s", **args)


def sweep_run(db: Path | str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(db),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_run(db: Path | str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(db),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], wanted: str, seen: list[str], timeout: float = 60) -> None:
    """Read the runner's output until a line holds `wanted` (the rest is kept in `seen`)."""
    assert proc.stdout is not None
    found = threading.Event()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if wanted in line:
                found.set()
        found.set()

    threading.Thread(target=follow, daemon=True).start()
    assert found.wait(timeout), f"no line with {wanted!r}: {seen}"
    assert any(wanted in line for line in seen), f"the runner ended first: {seen}"


def served(folder: Path) -> list[dict[str, Any]]:
    path = folder / "servers.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def measured(lg: Ledger) -> dict[str, list[float]]:
    """served_k per combination, as the sweep recorded its runs."""
    out: dict[str, list[float]] = {}
    for row in lg.sweep_results("s")["rows"]:
        if row["metric"] == "served_k":
            out[" ".join(f"{k}={v}" for k, v in row["params"].items())] = [row["min"], row["max"], row["n"]]
    return out


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_a_second_sweep_run_refuses_in_one_line_and_the_first_completes(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        define(lg, port, run=f"python3 client.py {port} 0.4", repeat=3)
    first = start_run(ledger_env, scripts)
    seen: list[str] = []
    wait_for_line(first, "repeat 1/3", seen)
    second = sweep_run(ledger_env, scripts)
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 1 and len(lines) == 1, second.stderr
    assert lines[0].startswith(
        f"Error: sweep s is already being run by pid {first.pid} on {socket.gethostname()} since"
    )
    assert "on k=16 (1 of 2)" in lines[0] and "`todoledger sweep show s`" in lines[0]
    assert "tearing down" not in second.stdout + second.stderr
    shown = subprocess.run(
        [todoledger_bin(), "sweep", "show", "s"],
        env=subprocess_env(ledger_env),
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"runner: pid {first.pid} on {socket.gethostname()}" in shown.stdout
    assert first.wait(timeout=120) == 0, "".join(seen) + (first.stderr.read() if first.stderr else "")
    assert not [e for e in served(scripts) if e["event"] == "sigterm" and e["k"] == 16][1:]
    with Ledger() as lg:
        assert measured(lg) == {"k=16": [16, 16, 3], "k=0": [0, 0, 3]}
        assert lg.sweep_definition("s")["runner"] is None  # released when it ended
    assert sweep_run(ledger_env, scripts).returncode == 0  # and the sweep is free to run again


def test_a_ready_check_answered_by_another_process_never_holds(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    # Another process (here, this test's own) answers the sweep's URL before the setup binds.
    other = HTTPServer(("127.0.0.1", port), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        with Ledger() as lg:
            # Short waits: the other process holds the port to the end, so the teardown's wait
            # for it to be free runs out whatever its length (60 s by default).
            define(
                lg,
                port,
                setup=f"python3 server.py {port} {{k}} late",
                params=["k=16"],
                baseline=[],
                ready_timeout=5,
                teardown_timeout=3,
            )
        got = sweep_run(ledger_env, scripts)
    finally:
        other.shutdown()
        other.server_close()
    assert got.returncode == 1
    assert "held after" not in got.stdout
    assert (
        f"port {port} is answered by pid {os.getpid()}" in got.stdout + got.stderr
        or "setup exited" in got.stdout
    )
    with Ledger() as lg:
        rows = lg.sweep_results("s")["rows"]
        assert all(r["n"] == 0 for r in rows)  # no run was measured
    assert not [e for e in served(scripts) if e["event"] == "bench"]


def test_a_second_listener_on_the_port_at_another_address_is_not_the_setups(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    """Adversarial review: ownership was judged by the port alone. A server left on
    [::1]:PORT (another configuration's, here this test's own) answered the ready URL and
    every run, while the setup listened on 127.0.0.1:PORT: "ours", and the sweep
    recorded the other server's numbers as the combination's."""

    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"ok" if self.path == "/health" else json.dumps({"tok_s": 999.0, "k": 999}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    class V6(HTTPServer):
        address_family = socket.AF_INET6

    other = V6(("::1", port), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    (scripts / "client6.py").write_text(CLIENT.replace("http://127.0.0.1:", "http://[::1]:"))
    try:
        with Ledger() as lg:
            define(
                lg,
                port,
                params=["k=16"],
                baseline=[],
                ready=f"http://[::1]:{port}/health",
                run=f"python3 client6.py {port} 0",
                ready_timeout=5,
                teardown_timeout=3,
            )
        got = sweep_run(ledger_env, scripts)
    finally:
        other.shutdown()
        other.server_close()
    with Ledger() as lg:
        assert 999 not in [r["max"] for r in lg.sweep_results("s")["rows"] if r["n"]], got.stdout
    assert got.returncode == 1
    assert f"port {port} is answered by pid {os.getpid()}" in got.stdout + got.stderr


def test_a_server_whose_main_thread_exits_first_is_waited_for_on_one_port(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.fail(f"the stand-in's thread exit needs its system call number on {platform.machine()}")
    with Ledger() as lg:
        define(lg, port, setup=f"python3 server.py {port} {{k}} thread", params=["k=16"], repeat=2)
    got = sweep_run(ledger_env, scripts)
    assert got.returncode == 0, got.stdout + got.stderr
    with Ledger() as lg:
        assert measured(lg) == {"k=16": [16, 16, 2], "k=0": [0, 0, 2]}  # each on its own server
        setups = lg.sweep_results("s")["setups"]
    first = setups[0]["teardown"]
    assert first["group"] == "ended (SIGTERM)" and first["port"]["free"] is True
    # The lingering thread held the port ~2 s: the teardown waited for it, then said so.
    closed = [e["t"] for e in served(scripts) if e["event"] == "port closed" and e["k"] == 16]
    started = [e["t"] for e in served(scripts) if e["event"] == "start" and e["k"] == 0]
    assert closed and started and started[0] > closed[0]
    assert f"ended (SIGTERM), port {port} free after" in got.stdout


def test_a_clean_check_that_fails_for_3_s_then_holds_lets_the_sweep_go_on(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        define(
            lg,
            port,
            teardown='python3 -c \'import time; open("down-{k}", "w").write(str(time.time()))\'',
            clean="cmd:python3 settling.py {k}",
            repeat=1,
        )
    got = sweep_run(ledger_env, scripts)
    assert got.returncode == 0, got.stdout + got.stderr
    with Ledger() as lg:
        assert measured(lg) == {"k=16": [16, 16, 1], "k=0": [0, 0, 1]}
        cleans = [s["clean"] for s in lg.sweep_results("s")["setups"]]
    assert all(c["result"] == "holds" and c["polls"] >= 3 for c in cleans), cleans


@pytest.mark.parametrize(
    ("clean", "reason"),
    [
        (
            "cmd:test ! -e down-{k} || {{ echo 'left on the GPU: 4242, python3, 1024 MiB'; exit 1; }}",
            "left on the GPU: 4242, python3, 1024 MiB",
        ),
        ("cmd:test ! -e down-{k} || exit 3", "exit 3, no output: cmd:test ! -e down-16 || exit 3"),
    ],
)
def test_a_clean_check_that_never_holds_stops_with_its_last_output(
    ledger_env: Path, scripts: Path, port: int, clean: str, reason: str
) -> None:
    with Ledger() as lg:
        # Holds before the first setup; after a teardown (which leaves down-K) it never does.
        define(lg, port, teardown="touch down-{k}", clean=clean, clean_timeout=2, repeat=1)
    got = sweep_run(ledger_env, scripts)
    assert got.returncode == 1
    last = got.stderr.strip().splitlines()[-1]
    assert last.startswith("sweep s stopped after k=16: its clean check")
    assert f"fails after the teardown: {reason} (still after " in last
    assert not [e for e in served(scripts) if e["k"] == 0]  # nothing measured beside what was left


def test_sigkill_of_the_runner_then_a_resume_tears_down_what_it_left(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        define(lg, port, run=f"python3 client.py {port} 0.3", repeat=3)
    first = start_run(ledger_env, scripts)
    seen: list[str] = []
    wait_for_line(first, "repeat 1/3", seen)
    os.kill(first.pid, signal.SIGKILL)  # the runner itself, the Python process
    first.wait(timeout=10)
    left = [e["pid"] for e in served(scripts) if e["event"] == "start"]
    assert len(left) == 1 and not gone(left[0])  # its server outlives it, in a session of its own
    again = sweep_run(ledger_env, scripts)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "k=16 tearing down the setup a killed run left (pid " in again.stdout
    assert gone(left[0])  # the server itself (a child of the setup's shell, in its group)
    with Ledger() as lg:
        assert measured(lg) == {"k=16": [16, 16, 3], "k=0": [0, 0, 3]}


def test_a_live_runner_on_another_host_refuses_until_its_heartbeat_lapses(
    ledger_env: Path | str, scripts: Path, port: int
) -> None:
    with Ledger() as lg:
        define(lg, port)
        repo = CheckRepo(lg.store)
        with lg.store.write():
            repo.set_runner(
                "main",
                "s",
                host="gpu-node-7",
                pid=4242,
                ticks="1",
                writer="cli:tester",
                at="2026-12-06T10:00:00.000Z",
                beat=time.time(),
            )
    got = sweep_run(ledger_env, scripts)
    assert got.returncode == 1
    assert "already being run by pid 4242 on gpu-node-7 since 2026-12-06T10:00:00.000Z" in got.stderr
    assert not served(scripts)
    with Ledger() as lg, lg.store.write():
        CheckRepo(lg.store).beat_runner("main", "s", "gpu-node-7", 4242, time.time() - 31, None)
    got = sweep_run(ledger_env, scripts)
    assert got.returncode == 0, got.stdout + got.stderr


def test_a_runner_killed_but_not_yet_reaped_does_not_hold_the_sweep(
    ledger_env: Path | str, scripts: Path, port: int
) -> None:
    """A runner killed with SIGKILL whose parent has not reaped it yet (a zombie) is not
    alive: a task worker whose stdio server died first is reparented to an init that may
    reap it late, and the new worker that `tasks/get` started was refused by the dead
    one's lease (found by bench/gpu_sweep/run_task.py on the CPU)."""
    from todoledger.checks import lifecycle

    with Ledger() as lg:
        define(lg, port)
    dead = subprocess.Popen(["sleep", "60"])  # this process's child: a zombie until it is waited for
    os.kill(dead.pid, signal.SIGKILL)
    try:
        deadline = time.monotonic() + 30
        while not gone(dead.pid):
            assert time.monotonic() < deadline, "the killed process never ended"
            time.sleep(0.01)
        ticks = lifecycle.start_ticks(dead.pid)
        assert ticks is not None  # still in /proc, as the zombie it is
        with Ledger() as lg:
            with lg.store.write():
                CheckRepo(lg.store).set_runner(
                    "main",
                    "s",
                    host=lifecycle.host(),
                    pid=dead.pid,
                    ticks=ticks,
                    writer="cli:tester",
                    at="2026-12-06T10:00:00.000Z",
                    beat=time.time(),
                )
            view = lg.sweep_definition("s")["runner"]
        assert view["alive"] is False and view["how"] == f"pid {dead.pid} has ended (not yet reaped)"
        got = sweep_run(ledger_env, scripts)
    finally:
        dead.wait()
    assert got.returncode == 0, got.stdout + got.stderr
    with Ledger() as lg:
        assert measured(lg) == {"k=16": [16, 16, 2], "k=0": [0, 0, 2]}


@pytest.mark.slow
@pytest.mark.sqlite_only  # the runner makes a ledger of its own: the backend parameter would run it twice
def test_the_gpu_runner_runs_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    """bench/gpu_sweep/run.py with the tiny model (real PyTorch on the CPU, installed
    by .ci/run) and the stand-in clean check: the leftover caught, a second runner
    refused, the runner SIGKILLed and resumed, every combination measured."""
    import torch  # noqa: F401  (.ci/run installs the CPU build: no skip, the runner must not rot)

    env = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
    got = subprocess.run(
        [
            sys.executable,
            "bench/gpu_sweep/run.py",
            "--out",
            str(tmp_path),
            "--k",
            "4,2",
            "--repeat",
            "2",
            "--tokens",
            "16",
            "--clean-timeout",
            "3",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "The clean check caught the leftover" in summary
    assert "already being run by pid" in summary
    assert "tearing down the setup a killed run left" in summary
    assert "Every combination has its 2 runs, none failed." in summary
    for name in ("results.txt", "results.html", "results.json", "run.log", "show.txt"):
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.sqlite_only  # the runner makes a ledger of its own: the backend parameter would run it twice
def test_the_gpu_task_runner_runs_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    """bench/gpu_sweep/run_task.py with the tiny model: the sweep as an agent's plan_sweep
    MCP task, its stdio server SIGKILLed and a new one polled, then its worker SIGKILLed
    in the middle of a combination and resumed by the next tasks/get. The runner checks
    every step itself (exit 1 if one fails); here, what it wrote."""
    import torch  # noqa: F401  (.ci/run installs the CPU build: no skip, the runner must not rot)

    env = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
    # Two combinations (k=2, the baseline k=0): three server starts, the slow part on a CPU.
    # Four runs each: the worker is killed between the baseline's first and last.
    words = ["--k", "2", "--repeat", "4", "--tokens", "16", "--clean-timeout", "3", "--limit", "300"]
    got = subprocess.run(
        [sys.executable, "bench/gpu_sweep/run_task.py", "--out", str(tmp_path), *words],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert got.returncode == 0, got.stdout[-6000:] + got.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "- result: every step held" in summary and "FAILED" not in summary, summary
    assert "no nvidia-smi (CPU check; clean check = stand-in leftovers.py)" in summary
    assert "killed with SIGKILL (exit -9); the worker (pid " in summary
    assert "with no todoledger mcp running, the worker recorded runs: 1 -> " in summary
    assert "was killed in the middle of k=0 (" in summary
    assert "started a new worker: working: `resumed: worker 2 started (its worker (pid " in summary
    assert "- k=2: 4\n- k=0: 4\n" in summary  # the recorded runs: none more than the repeats
    assert "outcome: torn down on resume after a kill" in summary
    assert "- statuses: working -> completed" in summary
    polled = (tmp_path / "tasks.log").read_text().splitlines()
    line = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z \+ *\d+\.\d\d s  server ([AB])  (working|completed)  .+")
    found = [line.fullmatch(p) for p in polled]
    assert all(found), polled
    assert [m.group(1) for m in found if m] == sorted(m.group(1) for m in found if m)  # A, then B
    assert {m.group(1) for m in found if m} == {"A", "B"} and polled[-1].endswith(
        "  completed  plan_sweep finished"
    )
    for name in ("results.txt", "results.html", "results.json", "run.log", "ledger.db"):
        assert (tmp_path / name).stat().st_size > 0
