"""`todoledger demo --checks`: the seeds' assumptions as real checks, run
against local stand-ins this module starts, and the draft-token sweep run over
a stand-in benchmark script.

Nothing here is the campaign's machines, and every text says so:
- the disk: a temporary folder stands for /data. Its free space is whatever
  this machine has, so the check asks for that plus the seeds' shortfall
  (~5.4 TB estimated, 2.8 TB free: 2.6 TB short, seed 002), so it fails. It
  is the Verify item's own check, so nobody can complete that item by saying so.
- the server: a local HTTP server on 127.0.0.1 answers `/health` for SGLang.
  Its check, and the benchmark script's, are gates of the seeds' own "Verify ..."
  items (their notes keep the seed's words and say what stands in): a stand-in
  that holds proves nothing of the campaign's machines, so those items stay
  pending, with the receipt beside them;
- the agent's claims: the reviewer gates two items the seeds' agent marked
  completed (CLAIM_GATES), each citing its seed: one gate proves the claim
  against a stand-in written from the figure the seed reports, one refuses it
  because the seeds say the work it asks for was never done;
- the benchmark script: a stand-in that asks that server for `/health` and
  prints a SIMULATED tok/s: seeded noise around the figures of seed 001
  (82 tok/s without speculation, 60 tok/s with the from-scratch drafter). The
  seeds do not say which draft-token setting gave 60; the stand-in assumes the
  16 tokens that were running (seed 000). The seeds give no figures for 10 or
  5 draft tokens, so the sweep leaves them out;
- the draft-token sweep runs as the seeds ran it, one stand-in server per
  combination (SERVER: a local HTTP server started by the sweep's --setup, with
  a startup delay, serving the figures of its own setting) and the stand-in
  client (CLIENT) as its run. The first server leaves a process behind on
  purpose (a worker in a session of its own, still holding the port: the seeds'
  "zombie GPU processes"); the teardown, which waits until the port is free
  again, names it and the sweep stops before the baseline, whose ready check
  that leftover would have answered. The demo ends the leftover, as a person
  would, and resumes.
"""

from __future__ import annotations

import http.server
import os
import re
import shlex
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from todoledger.core.ids import seeded
from todoledger.demo import DEMO_PLAN, ID_SEED, KIMI, QWEN, REVIEWER, plan_names

if TYPE_CHECKING:
    from todoledger.ledger import Ledger

SWEEP = "draft_tokens_standin"  # the plain demo's sweep, `draft_tokens`, runs nothing
TB = 1024**4  # binary, as `df -h` and the checks' sizes
SHORTFALL = (5.4 - 2.8) * TB  # seed 002: ~5.4 TB estimated, 2.8 TB free
HEALTH_BODY = b"stand-in for the SGLang /health endpoint (todoledger demo --checks; a simulation)\n"
DISK_ITEM = "Verify /data has room for the hidden states"
SERVER_ITEM = "Verify the SGLang EAGLE3 server is still up"
SCRIPT_ITEM = "Verify benchmark_eagle3.py measures single-stream tok/s correctly"
SERVER_NOTE = (
    "Stand-in check (demo --checks): a local server on 127.0.0.1 answers /health for SGLang; it is not the"
    " campaign's server, so this item stays pending whatever the receipt says."
)
SCRIPT_NOTE = (
    "Stand-in check (demo --checks): a stand-in script (SIMULATED figures, not benchmark_eagle3.py) runs"
    " against the local server; this item stays pending whatever the receipt says."
)

BENCH = '''"""SIMULATION, not a measurement: a stand-in for benchmark_eagle3.py (seed 000, msg 4346).

Seed 001: 82 tok/s without speculation; 60 tok/s with the from-scratch drafter. The
seeds do not say which draft-token setting gave 60; this stand-in assumes 16, the
setting that was running (seed 000). They give no figure for other settings.
"""
import os, random, sys, urllib.request

tokens, url = int(sys.argv[1]), sys.argv[2]
with urllib.request.urlopen(url + "/health", timeout=10) as answer:
    answer.read()
FIGURES = {0: 82.0, 16: 60.0}
if tokens not in FIGURES:
    sys.exit(f"the seeds give no figure for {tokens} draft tokens")
counter = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"runs-{tokens}")
run = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
with open(counter, "w") as fh:
    fh.write(str(run))
value = FIGURES[tokens] * (1 + random.Random(f"{tokens}:{run}").gauss(0, 0.02))
print(f"SIMULATION draft_tokens={tokens} run={run} tok_s={value:.1f}")
'''


# The sweep's stand-in server, one per combination (its --setup). Seeded figures, labelled stand-in.
SERVER = '''"""STAND-IN, not SGLang: one server per draft-token setting (todoledger demo --checks).

It answers /health after a startup delay and /generate with the SIMULATED tok/s of its
own setting: seeded noise around seed 001's figures (82 tok/s without speculation, 60
with the from-scratch drafter, assumed to be the 16 draft tokens that were running).
--leftover-once: the first server started with it leaves a worker behind on purpose,
in a session of its own and holding the port, and writes the worker's pid to
leftover.pid beside this file: a process that ending the server's process group does
not end.
"""
import http.server, json, os, random, sys, time

leftover = "--leftover-once" in sys.argv
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
port, tokens = int(args["--port"]), int(args["--draft-tokens"])
FIGURES = {0: 82.0, 16: 60.0}
print(f"stand-in server for draft_tokens={tokens}: starting (a simulated {args['--startup-delay']} s load)", flush=True)
time.sleep(float(args["--startup-delay"]))
served = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body, status = b"ok\\n", 200
        elif self.path == "/generate" and tokens in FIGURES:
            served[0] += 1
            value = FIGURES[tokens] * (1 + random.Random(f"{tokens}:{served[0]}").gauss(0, 0.02))
            answer = {"draft_tokens": tokens, "request": served[0], "tok_s": round(value, 1), "stand_in": True}
            body, status = json.dumps(answer).encode(), 200
        else:
            body, status = b"the seeds give no figure for this setting\\n", 404
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Handler)
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "leftover.pid")
if leftover and not os.path.exists(marker):
    parent = os.getpid()
    if os.fork() == 0:  # the worker: a session of its own, the listening socket kept
        os.setsid()
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        while os.getppid() == parent:  # it takes over once the server is gone, as a zombie worker would
            time.sleep(0.05)
        server.serve_forever()
        os._exit(0)
print(f"stand-in server for draft_tokens={tokens}: ready on 127.0.0.1:{port}", flush=True)
server.serve_forever()
'''

# The sweep's run: asks the combination's stand-in server for one generation's figures.
CLIENT = '''"""STAND-IN client, not benchmark_eagle3.py: prints the stand-in server's SIMULATED tok/s."""
import json, sys, urllib.request

with urllib.request.urlopen(sys.argv[1] + "/generate", timeout=10) as answer:
    found = json.load(answer)
print(f"STAND-IN draft_tokens={found['draft_tokens']} request={found['request']} tok_s={found['tok_s']}")
'''
STARTUP_DELAY = 1.5  # seconds the stand-in server "loads" before it answers (seed 000: ~15 minutes)


# The reviewer's gates on what the seeds' agent claimed completed: (plan, item, gate kind,
# the reviewer's note). The gates are the reviewer's; their targets are stand-ins.
PHASE_02 = "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)"
QWEN_BASELINE = "Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)"
CLAIM_GATES: list[tuple[str, str, str, str]] = [
    (
        KIMI,
        PHASE_02,
        "config",
        "Reviewer's gate on the agent's claim (seed 001, msgs 4944-4949: max_position_embeddings"
        " 131072 -> 262144): the drafter's config.json says 262144. Stand-in: a config.json the demo"
        " writes with the figure the seed reports, not the campaign's file.",
    ),
    (
        QWEN,
        QWEN_BASELINE,
        "repeats",
        "Reviewer's gate on the agent's claim (seed 004, msg 6000: one run per concurrency level, no"
        " variance): the results of repeated runs after a warm-up. The seeds show none; in this demo a"
        " file in the stand-in folder that nothing writes, so the gate fails and the claim stays unproven.",
    ),
]
CONFIG_CHECK = "import json, sys; sys.exit(json.load(open(sys.argv[1]))['max_position_embeddings'] != 262144)"


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path.split("?")[0] == "/health"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(HEALTH_BODY if found else b"not found\n")

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the demo prints its own lines
        pass


@contextmanager
def stand_ins() -> Iterator[tuple[str, str]]:
    """(url of the stand-in server, the stand-ins' folder) while the block runs.
    The server stops with the block (its liveness receipts then age out); the
    folder stays in `.todoledger/demo-stand-ins/`, made anew each run, since the
    receipts of checks on its files hold only while those files are as they were."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    folder = os.path.join(os.getcwd(), ".todoledger", "demo-stand-ins")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Ran:
    receipts: list[dict[str, Any]]
    sweep: dict[str, Any]
    claims: list[dict[str, Any]] = field(default_factory=list)  # the reviewer's gates on the agent's claims
    story: list[str] = field(default_factory=list)  # what the sweep's lifecycle did, for people


def gate_claims(lg: Ledger, plan: str, folder: str) -> list[dict[str, Any]]:
    """The reviewer's gates on the agent's completed items (CLAIM_GATES), run once:
    their receipts, each with the item's text."""
    names = plan_names(plan)
    config = os.path.join(folder, "drafter", "config.json")
    os.makedirs(os.path.dirname(config))
    with open(config, "w", encoding="utf-8") as fh:
        fh.write('{"max_position_embeddings": 262144}\n')  # the figure msgs 4944-4949 report
    specs = {
        "config": f"cmd:{shlex.quote(sys.executable)} -c {shlex.quote(CONFIG_CHECK)} {shlex.quote(config)}",
        "repeats": f"file:{os.path.join(folder, 'qwen-baseline-repeats.json')}",
    }
    out: list[dict[str, Any]] = []
    for key, text, kind, note in CLAIM_GATES:
        name = names[key]
        item = next(i for i in lg.show(name)["items"] if i["content"] == text)
        # Its input is a file the demo itself wrote: it cannot prove a claim about the seeds.
        lg.add_check(item["id"], specs[kind], plan=name, writer=REVIEWER, stand_in=True)
        notes = "\n".join(filter(None, [item.get("notes"), note]))
        lg.update(item["id"], plan=name, writer=REVIEWER, notes=notes)
        for r in lg.verify([item["id"]], plan=name, writer=REVIEWER)["receipts"]:
            out.append({**r, "plan": name, "content": text})
    return out


def _note(lg: Ledger, item: str, plan: str, note: str) -> None:
    """The stand-in's note after the seed's own, which stays."""
    notes = lg.get(item, plan).get("notes")
    lg.update(item, plan=plan, writer=REVIEWER, notes="\n".join(filter(None, [notes, note])))


def run_checks(lg: Ledger, *, plan: str = DEMO_PLAN) -> Ran:
    """Attach the checks, run them and the sweep against fresh stand-ins."""
    from todoledger.core.model import LedgerError

    if any(c.role != "run" for c in lg.checks(plan=plan)) or lg.sweep_exists(SWEEP, plan=plan):
        raise LedgerError(
            f"the demo's checks already ran in plan {plan!r} and their stand-ins are gone;"
            " load a fresh copy: todoledger demo --checks --plan NEW"
        )
    with stand_ins() as (url, folder):
        data = os.path.join(folder, "data")
        os.makedirs(data)
        script = os.path.join(folder, "bench_standin.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(BENCH)
        run = f"{shlex.quote(sys.executable)} {shlex.quote(script)}"
        free = shutil.disk_usage(data).free
        need = free + SHORTFALL
        items = {i["content"]: i["id"] for i in lg.show(plan)["items"]}
        disk, server, script_item = (
            next(i for text, i in items.items() if text.startswith(start))
            for start in (DISK_ITEM, SERVER_ITEM, SCRIPT_ITEM)
        )
        with seeded(ID_SEED + "-checks"):
            lg.add_check(
                disk,
                f"disk:{data}>={need / TB:.4f}T",
                plan=plan,
                writer=REVIEWER,
                role="assumption",
                stand_in=True,
            )
            _note(
                lg,
                disk,
                plan,
                f"Stand-in check (demo --checks): {data} stands for /data; it asks for its free space plus the"
                " shortfall of seed 002's estimate (~5.4 TB needed, 2.8 TB free: 2.6 TB), so it fails.",
            )
            lg.add_check(server, f"{url}/health", plan=plan, writer=REVIEWER, stand_in=True)
            _note(lg, server, plan, SERVER_NOTE)
            lg.add_check(
                script_item,
                f"cmd:{run} 16 {url}",
                {"expect": r"tok_s=\d"},
                plan=plan,
                writer=REVIEWER,
                stand_in=True,
            )
            _note(lg, script_item, plan, SCRIPT_NOTE)
            verified = lg.verify([disk, server, script_item], plan=plan, writer=REVIEWER)
            claims = gate_claims(lg, plan, folder)
            story = draft_token_sweep(lg, plan, folder)
        return Ran(verified["receipts"], lg.sweep_results(SWEEP, plan=plan), claims, story)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def draft_token_sweep(lg: Ledger, plan: str, folder: str) -> list[str]:
    """The seeds' sweep with a stand-in server per combination: readiness,
    a teardown that waits for the port and catches the leftover the first
    server leaves on purpose, and a clean check; then the leftover is ended
    and the sweep resumed.
    Returns what happened, a line each, for people."""
    import signal

    from todoledger.ledger import sweeps

    server, client = os.path.join(folder, "standin_server.py"), os.path.join(folder, "standin_client.py")
    for path, text in ((server, SERVER), (client, CLIENT)):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    port, marker = _free_port(), os.path.join(folder, "leftover.pid")
    py = shlex.quote(sys.executable)
    lg.add_sweep(
        SWEEP,
        template="Benchmark {draft_tokens} draft tokens (stand-in server, SIMULATED figures)",
        params=["draft_tokens=16"],
        baseline=["draft_tokens=0"],
        setup=f"{py} {shlex.quote(server)} --port {port} --draft-tokens {{draft_tokens}}"
        f" --startup-delay {STARTUP_DELAY:g} --leftover-once",
        ready=f"http://127.0.0.1:{port}/health",
        ready_options={"expect": "ok"},
        ready_timeout=60,
        teardown_timeout=3,
        clean=f"port:127.0.0.1:{port}",
        clean_timeout=3,
        run=f"{py} {shlex.quote(client)} http://127.0.0.1:{port}",
        metrics=[r"tok_s=tok_s=([0-9.]+)"],
        repeat=3,
        warmup=1,
        keep="tok_s>baseline",
        timeout=60,
        plan=plan,
        writer=REVIEWER,
        stand_in=True,
    )
    story: list[str] = []

    def told(p: dict[str, Any]) -> None:
        params = " ".join(f"{k}={v}" for k, v in p["params"].items())
        line = p["line"]
        if p.get("phase") == "run":
            line = f"run {p['repeat']}/{p['repeats']} {p['result']}: " + " ".join(
                f"{k}={v:g}" for k, v in p["values"].items()
            )
        elif p.get("phase") == "ready" and line.startswith("ready:"):
            line = line.split(" held after ")[0] + " held"  # how many polls depends on the machine's load
        elif p.get("phase") == "teardown":
            line = re.sub(r" free after [0-9.]+ s", " free", line)  # how long depends on the machine's load
        elif p.get("phase") == "clean" and not line.endswith(": holds"):
            return  # the line that stops the sweep says it
        elif p.get("phase") not in ("warmup", "teardown", "clean", "ready"):
            return
        story.append(f"{params}: {line}")

    first = sweeps.run(lg, SWEEP, plan=plan, writer=REVIEWER, cwd=folder, on_progress=told)
    if first["stopped"]:
        story.append(first["stopped"])
    left = _read_pid(marker)
    if left is not None:
        story.append(
            "The leftover holds the port: the teardown waited for it to be free, named it and stopped the"
            " sweep, so the baseline was never measured beside it (its ready check would have been answered"
            f" by the 16-token worker). The demo ends it (pid {left}), as a person would, and resumes."
        )
        with suppress(OSError):
            os.kill(left, signal.SIGKILL)
        _gone(port)
    second = sweeps.run(lg, SWEEP, plan=plan, writer=REVIEWER, cwd=folder, on_progress=told)
    if second["stopped"]:
        story.append(second["stopped"])
    return story


def _read_pid(path: str) -> int | None:
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().strip()
            if text.isdigit():
                return int(text)
        except OSError:
            pass
        time.sleep(0.05)
    return None


def _gone(port: int) -> None:
    """Wait (a few seconds at most) until nothing listens on the port any more."""
    import socket
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            return
        time.sleep(0.05)
