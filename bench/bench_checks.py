"""Benchmarks for checks. Prints ratios measured side by side in one
run: absolute times on a shared machine are noise.

    .venv/bin/python bench/bench_checks.py

1. `todoledger verify` of 50 checks against a local server that answers after
   200 ms, vs the same command with one check: target wall <= 2x one + 100 ms
   (they run in parallel);
2. `todoledger done` with a passing `file:` gate vs `python -c pass`: target <= 4x;
3. `sweep run` overhead per run beyond the command's own time (the same command
   run directly, one after another): target <= 20 ms;
4. a sweep with a lifecycle (a real local server per combination as its
   setup, an HTTP ready check, the default teardown, a `port:` clean check):
   the overhead per combination beyond the setup, ready and run commands
   (the wall time less the ready wait, which includes the server's start,
   and less the run's own time): target <= 50 ms.

Figures that comments in the code point here for, measured when each choice
was made: importing `hashlib` (OpenSSL) cost a gated `done` a tenth of its
start-up (core/checkspec.py `sha256`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BIN = Path(sys.executable).parent
TODOLEDGER = str(BIN / "todoledger")
DELAY = 0.2
PERSON = "cli:bench"  # the person running the bench: a sweep runs only as a person's, or once one approved it


class Slow(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(DELAY)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # 50 connections at once


def cli(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([TODOLEDGER, *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"todoledger {' '.join(args)} failed: {proc.stderr[:300]}")
    return proc.stdout


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[:300]}")
    return elapsed


def ledger_with_checks(folder: Path, name: str, url: str, count: int) -> dict[str, str]:
    env = dict(os.environ, TODOLEDGER_DB=str(folder / f"{name}.db"))
    for n in range(count):
        item = cli(env, "add", f"Server answers ({n})", "--json")
        item_id = item.split('"id":"', 1)[1].split('"', 1)[0]
        cli(env, "gate", "add", item_id, url)
    return env


def bench_verify(folder: Path, runs: int = 7) -> None:
    server = Server(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    one = ledger_with_checks(folder, "one", url, 1)
    fifty = ledger_with_checks(folder, "fifty", url, 50)
    samples: dict[str, list[float]] = {"one": [], "fifty": []}
    for _ in range(runs):
        samples["one"].append(timed([TODOLEDGER, "verify"], one, str(folder)))
        samples["fifty"].append(timed([TODOLEDGER, "verify"], fifty, str(folder)))
    server.shutdown()
    a, b = (statistics.median(samples[k]) * 1000 for k in ("one", "fifty"))
    print(f"verify, server answering after {DELAY * 1000:.0f} ms: 1 check {a:.0f} ms; 50 checks {b:.0f} ms")
    print(f"  50 checks / (2 x one + 100 ms) = {b / (2 * a + 100):.2f} (target <= 1)")


def bench_done(folder: Path, runs: int = 15) -> None:
    env = dict(os.environ, TODOLEDGER_DB=str(folder / "done.db"))
    # Measure what users run: with the bytecode cache (a shell that sets
    # PYTHONDONTWRITEBYTECODE would recompile every edited module on each start).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (folder / "results.json").write_text("{}")
    ids, plain = [], []
    for n in range(runs):
        item = cli(env, "add", f"Benchmark run {n}", "--done-when", "file:results.json", "--json")
        ids.append(item.split('"id":"', 1)[1].split('"', 1)[0])
        item = cli(env, "add", f"Ungated {n}", "--json")
        plain.append(item.split('"id":"', 1)[1].split('"', 1)[0])
    warm = cli(env, "add", "Warm-up", "--done-when", "file:results.json", "--json")
    timed(
        [TODOLEDGER, "done", warm.split('"id":"', 1)[1].split('"', 1)[0]], env, str(folder)
    )  # caches its modules
    done: list[float] = []
    ungated: list[float] = []
    bare: list[float] = []
    show: list[float] = []
    for item_id, other in zip(ids, plain, strict=True):
        bare.append(timed([sys.executable, "-c", "pass"], env, str(folder)))
        done.append(timed([TODOLEDGER, "done", item_id], env, str(folder)))
        ungated.append(timed([TODOLEDGER, "done", other], env, str(folder)))
        show.append(timed([TODOLEDGER, "show", "--json"], env, str(folder)))
    d, u, p, s = (statistics.median(x) * 1000 for x in (done, ungated, bare, show))
    print(f"done with a passing file: gate: {d:.1f} ms; python -c pass: {p:.1f} ms")
    print(f"  ratio done / python -c pass = {d / p:.2f}x (target <= 4x)")
    print(f"  the gate's own share: done without a gate = {u:.1f} ms, {u / p:.2f}x python -c pass")
    # The same start-up without any check, for scale: the load of a shared machine inflates both.
    print(f"  for scale: show --json (lean path, no check) = {s:.1f} ms, {s / p:.2f}x python -c pass")


def bench_sweep(folder: Path, runs: int = 40) -> None:
    """In process: the wall time of `sweep run` minus the runs' own durations (their receipts)."""
    from todoledger import Ledger
    from todoledger.ledger import sweeps

    os.chdir(folder)
    with Ledger(folder / "sweep.db") as lg:
        lg.add_sweep(
            "overhead",
            template="Run {n}",
            params=[f"n={','.join(str(n) for n in range(runs))}"],
            run="echo tok_s {n} | cat",  # a stand-in benchmark (a bare echo is refused: it cannot fail)
            metrics=[r"tok_s=tok_s (\d+)"],
            writer=PERSON,
        )
        start = time.perf_counter()
        sweeps.run(lg, "overhead", writer=PERSON)
        wall = (time.perf_counter() - start) * 1000
        own = sum(r["duration_ms"] for r in lg.receipts())
    print(f"sweep run of {runs} runs: {wall:.0f} ms; the commands' own time (receipts): {own} ms")
    print(f"  overhead per run = {(wall - own) / runs:.1f} ms (target <= 20 ms)")


SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/health" else b"tok_s 60"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
CLIENT = """
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/bench", timeout=10).read().decode())
"""


def bench_lifecycle(folder: Path, combinations: int = 10) -> None:
    """In process: per combination, the wall time of `sweep run` less the ready
    wait (the server's own start included) and the run's own time."""
    import socket

    from todoledger import Ledger
    from todoledger.ledger import sweeps

    os.chdir(folder)
    (folder / "server.py").write_text(SERVER)
    (folder / "client.py").write_text(CLIENT)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Ledger(folder / "lifecycle.db") as lg:
        lg.add_sweep(
            "lifecycle",
            template="Server {n}",
            params=[f"n={','.join(str(n) for n in range(combinations))}"],
            setup=f"{sys.executable} server.py {port}",
            ready=f"http://127.0.0.1:{port}/health",
            clean=f"port:127.0.0.1:{port}",
            run=f"{sys.executable} client.py {port}",
            metrics=[r"tok_s=tok_s (\d+)"],
            writer=PERSON,
        )
        start = time.perf_counter()
        out = sweeps.run(lg, "lifecycle", writer=PERSON, ready_interval=0.05)
        wall = (time.perf_counter() - start) * 1000
        own = sum(r["duration_ms"] for r in lg.receipts())
    assert out["runs"] == combinations and out["stopped"] is None, out
    beyond = wall - out["ready_ms"] - own - out["teardown_ms"]
    print(
        f"sweep run of {combinations} combinations, each a server (setup), an HTTP ready check, one run,"
        f" teardown and a port clean check: {wall:.0f} ms; ready wait {out['ready_ms']} ms; runs' own {own} ms;"
        f" the teardowns' own waits (the group's end, the port free) {out['teardown_ms']} ms"
        f" (load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"  overhead per combination beyond setup, ready, run and the teardown's own wait"
        f" (derived: wall less those) = {beyond / combinations:.1f} ms (target <= 50 ms);"
        f" teardown wait per combination {out['teardown_ms'] / combinations:.1f} ms"
    )


def main() -> None:
    chosen = set(sys.argv[1:]) or {"verify", "done", "sweep", "lifecycle"}  # e.g. `bench_checks.py done`
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "verify" in chosen:
            bench_verify(folder)
        if "done" in chosen:
            bench_done(folder)
        if "sweep" in chosen:
            bench_sweep(folder)
        if "lifecycle" in chosen:
            bench_lifecycle(folder)


if __name__ == "__main__":
    main()
