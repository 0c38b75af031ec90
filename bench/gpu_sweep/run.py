"""The seeds' draft-token sweep on a real GPU, through `todoledger sweep`.

    python3 bench/gpu_sweep/run.py --out "$OUT"          # from the repository's root

One server per configuration (`server.py`: a ~1.1B Llama-shaped decoder with
fixed random weights, assisted decoding with k = 16, 8, 4, 2 draft tokens
drafted by its own first two layers, and k = 0 without speculation, the
baseline), each started by the sweep's `--setup` on ONE port for every
configuration (as the seeds' servers were), polled by `--ready` on its
/health, measured by `client.py` (one timed generation a run, `--repeat` runs
after `--warmup` runs not counted), ended by the default teardown (the setup's
process group, then the port free again), and followed by a `--clean` check
(polled by the sweep) that asks `nvidia-smi --query-compute-apps` for
processes left on the GPU.

What the run goes through, each step checked and written to run.log as it goes:

1. The first server leaves a process on the GPU on purpose (`leftover.py`,
   1 GiB outside its process group): the clean check must stop the sweep after
   k = 16, naming it. The runner then ends it, as a person told its pid would.
2. The sweep is run again; while it runs, a second `sweep run` of the same
   sweep must refuse in one line (one runner per sweep) and touch nothing.
3. That running `sweep run` (the Python process itself) is killed with
   SIGKILL in the middle of a combination; its server is left behind.
4. A third `sweep run` resumes: it tears the left server down (its runner is
   provably dead: same host, pid gone) and completes every combination.

Without nvidia-smi (a CPU check of this runner, `--size tiny`) the clean
check is a stand-in, `leftovers.py`: this benchmark's own processes still
alive, by their command lines; the summary says so.

The operator is the person the sweep belongs to: the runner defines the sweep
through the Python API with an explicit person identity (`writer="cli:..."`,
the route docs/security.md gives scripts), so it runs as the person's own;
the `sweep run`s are plain commands (no token, no tokens file). Results land
in --out: summary.md, results.txt (the table), results.html, results.json,
show.txt (every command the sweep ran), run.log and the ledger itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAME = "gpu_draft"
PLAN = "gpu"
OPERATOR = "cli:operator"  # the person whose sweep this is (Python API, explicit person identity)
# Processes left on the GPU after a teardown; the sweep polls this check (--clean-timeout), so no loop here.
GPU_CLEAN = (
    "cmd:apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader)"
    ' || { echo "nvidia-smi failed"; exit 2; };'
    ' [ -z "$apps" ] && { echo "no process on the GPU"; exit 0; };'
    ' echo "left on the GPU (pid, name, memory):" $apps; exit 1'
)
STAND_IN_CLEAN = "cmd:python3 bench/gpu_sweep/leftovers.py"

LOG: list[str] = []  # run.log's path, once --out is known: written line by line, so a killed run keeps it


def say(line: str) -> None:
    print(line, flush=True)
    if LOG:
        with open(LOG[0], "a") as fh:
            fh.write(line + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu-sweep-out")
    ap.add_argument("--size", default=None, help="1b (default with a GPU) or tiny (default without)")
    ap.add_argument("--k", default="16,8,4,2")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--clean-timeout", type=float, default=15.0)
    ap.add_argument("--commit", default=os.environ.get("GIT_COMMIT", ""), help="the commit this runs")
    args = ap.parse_args()
    started = time.monotonic()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    LOG.append(os.path.join(out, "run.log"))
    if os.path.exists(LOG[0]):
        os.remove(LOG[0])
    work = tempfile.mkdtemp(prefix="gpu-sweep-")
    gpu = shutil.which("nvidia-smi") is not None
    size = args.size or ("1b" if gpu else "tiny")
    db = os.path.join(out, "ledger.db")
    for stale in (db, db + "-wal", db + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")])),
        TODOLEDGER_DB=db,
        TODOLEDGER_PLAN=PLAN,
        PYTHONUNBUFFERED="1",
    )
    tl = [sys.executable, "-c", "import sys; from todoledger.cli.entry import main; sys.exit(main())"]

    def todoledger(*words: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*tl, *words], cwd=ROOT, env=env, capture_output=True, text=True)
        for line in (proc.stdout + proc.stderr).rstrip().splitlines():
            say(f"    {line}")
        return proc

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    py = shlex.quote(sys.executable)
    clean = GPU_CLEAN if gpu else STAND_IN_CLEAN
    template = clean.replace("{", "{{").replace("}", "}}")  # a sweep's commands place {NAME}: braces doubled
    say(
        f"# gpu_sweep: {'nvidia-smi found' if gpu else 'no nvidia-smi: the clean check is the stand-in leftovers.py'}"
    )
    gpu_text = ""
    if gpu:
        gpu_text = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        say(f"# GPU: {gpu_text}")
    say(
        f"# model {size}, k = {args.k}, baseline k = 0, {args.repeat} runs after {args.warmup} warm-up,"
        f" {args.tokens} tokens a run, one port ({port}) for every configuration"
    )
    say(f"# the operator defines the sweep through the Python API as {OPERATOR} (a person's own sweep)")
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from todoledger.ledger import Ledger

    with Ledger(db) as lg:
        lg.add_sweep(
            NAME,
            plan=PLAN,
            writer=OPERATOR,
            template="Assisted decoding: k = {k}",
            params=[f"k={args.k}"],
            baseline=["k=0"],
            setup=f"{py} bench/gpu_sweep/server.py --port {port} --k {{k}} --size {size} --tokens {args.tokens}"
            f" --leftover-once-in {shlex.quote(work)}",
            ready=f"http://127.0.0.1:{port}/health",
            ready_options={"expect": "ok"},
            ready_timeout=300,
            clean=template,
            clean_timeout=args.clean_timeout,
            run=f"{py} bench/gpu_sweep/client.py {port}",
            metrics=["tok_s=$.tok_s", "accept_len=$.accept_len", "served_k=$.k"],
            repeat=args.repeat,
            warmup=args.warmup,
            keep="tok_s>baseline*1.1",
            watch=["bench/gpu_sweep/model.py"],
            timeout=600,
        )
    shown = todoledger("sweep", "show", NAME)
    with open(os.path.join(out, "show.txt"), "w") as fh:
        fh.write(shown.stdout)
    notes: list[str] = []
    ok = True

    # 1. the leftover -------------------------------------------------------------------------
    say(
        f"$ todoledger sweep run {NAME}        # must stop after k=16: its server leaves a process on purpose"
    )
    first = todoledger("sweep", "run", NAME)
    stop_line = next((ln for ln in first.stderr.splitlines() if " stopped after " in ln), None)
    leftover = _pid(os.path.join(work, "leftover.pid"))
    caught = (
        first.returncode == 1
        and stop_line is not None
        and leftover is not None
        and str(leftover) in stop_line
    )
    ok &= caught
    notes.append(
        f"The clean check caught the leftover (pid {leftover}) and stopped the sweep: `{stop_line}`"
        if caught
        else f"The clean check did NOT name the leftover (pid {leftover}); exit {first.returncode}; stop line: {stop_line}"
    )
    if leftover is not None:
        say(f"# ending the leftover, pid {leftover}, as the person told its pid would")
        try:
            os.kill(leftover, signal.SIGKILL)
        except OSError as exc:
            say(f"# could not end it: {exc}")
        _wait_clean(clean, env)

    # 2. and 3. a second runner refused, then the running one killed ----------------------------
    say(
        f"$ todoledger sweep run {NAME}        # resumed; a second run tries to start, then this one is SIGKILLed"
    )
    runner = subprocess.Popen(
        [*tl, "sweep", "run", NAME],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    moment = threading.Event()

    def follow() -> None:
        assert runner.stdout is not None
        for line in runner.stdout:
            seen.append(line.rstrip())
            say(f"    {line.rstrip()}")
            # In the middle of the second combination of this run: after its second counted run.
            if line.startswith("[2/") and " repeat 2/" in line:
                moment.set()
        moment.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    moment.wait()
    if runner.poll() is None:
        say(
            f"$ todoledger sweep run {NAME}        # a second runner while pid {runner.pid} runs: must refuse"
        )
        second = todoledger("sweep", "run", NAME)
        refusal = (second.stderr.strip().splitlines() or [""])[-1]
        refused = (
            second.returncode != 0 and "already being run by pid" in refusal and str(runner.pid) in refusal
        )
        ok &= refused
        notes.append(
            f"A second `sweep run` while pid {runner.pid} ran: exit {second.returncode}, `{refusal}`"
            + ("" if refused else " (NOT the expected refusal)")
        )
        say(f"# SIGKILL of the runner itself, pid {runner.pid} (the Python process, no shell around it)")
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        reader.join(timeout=5)
        notes.append(
            f"The runner (pid {runner.pid}) was killed with SIGKILL after `{seen[-1] if seen else ''}`."
        )
    else:
        ok = False
        notes.append(
            f"The resumed run ended (exit {runner.returncode}) before it could be killed mid-combination."
        )

    # 4. resume after the kill ----------------------------------------------------------------
    say(f"$ todoledger sweep run {NAME}        # resumed after the SIGKILL: tears the left server down first")
    last = todoledger("sweep", "run", NAME)
    torn = [ln.strip() for ln in last.stdout.splitlines() if "a killed run left" in ln]
    ok &= last.returncode == 0 and bool(torn)
    notes.append(
        f"The resume after the kill exited {last.returncode}: `{torn[0] if torn else 'no left setup torn down'}`."
    )

    results = todoledger("sweep", "results", NAME)
    with open(os.path.join(out, "results.txt"), "w") as fh:
        fh.write(results.stdout)
    found: dict[str, str] = {}
    for fmt, name in (("html", "results.html"), ("json", "results.json")):
        got = subprocess.run(
            [*tl, "sweep", "results", NAME, "--format", fmt],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        found[fmt] = got.stdout
        with open(os.path.join(out, name), "w") as fh:
            fh.write(got.stdout)
    data = json.loads(found["json"])
    short = [r for r in data["rows"] if (r.get("n") or 0) < args.repeat or r.get("verdict") == "failed"]
    ok &= not short
    notes.append(
        f"Every combination has its {args.repeat} runs, none failed."
        if not short
        else f"Rows short of {args.repeat} runs or failed: {[(r['params'], r['metric'], r['n']) for r in short]}"
    )
    teardowns = _teardowns(data)
    left = subprocess.run(["/bin/sh", "-c", clean[4:]], cwd=ROOT, capture_output=True, text=True)
    notes.append(
        f"After the sweep, the clean check: exit {left.returncode}: {left.stdout.strip().splitlines()[-1:]}"
    )
    elapsed = time.monotonic() - started
    runs = args.repeat + args.warmup
    k_count = len(args.k.split(",")) + 1
    summary = [
        "# GPU sweep through todoledger",
        "",
        f"- machine: {'GPU: ' + gpu_text if gpu else 'no nvidia-smi (CPU check; clean check = stand-in leftovers.py)'}",
        f"- commit: {args.commit or 'not given'}",
        f"- model: {size}; k = {args.k} draft tokens (drafted by the model's own first layers), baseline k = 0",
        f"- {args.repeat} runs per combination after {args.warmup} warm-up run(s), {args.tokens} new tokens a run,"
        f" one port ({port}) for every combination",
        f"- the budget (arithmetic, not a measurement): {k_count} combinations x {runs} runs x {args.tokens} tokens"
        f" = {k_count * runs * args.tokens} tokens; at the 11 tok/s an earlier run measured that is"
        f" {k_count * runs * args.tokens / 11:.0f} s of generation, plus a server start per setup",
        f"- wall time of the whole runner: {elapsed:.0f} s",
        *[f"- {n}" for n in notes],
        "",
        "## Teardowns (what each waited for)",
        "",
        *[f"- {t}" for t in teardowns],
        "",
        "## Results",
        "",
        "```",
        results.stdout.rstrip(),
        "```",
    ]
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write("\n".join(summary) + "\n")
    say("\n".join(summary))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def _teardowns(data: dict[str, object]) -> list[str]:
    """Each setup's end as the ledger recorded it: how, the port's wait, the clean check."""
    out = []
    for s in data.get("setups", []):  # type: ignore[union-attr]
        down = s.get("teardown") or {}
        port = down.get("port") or {}
        clean = s.get("clean") or {}
        wait = f", port {port['port']} free after {port['waited_s']:.2f} s" if port.get("free") else ""
        out.append(
            f"{s.get('item')} (pid {s.get('pid')}): {down.get('group')}{wait};"
            f" clean: {clean.get('result', 'not run')} ({clean.get('line', '')}); outcome: {s.get('outcome')}"
        )
    return out


def _pid(path: str) -> int | None:
    for _ in range(50):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            text = ""
        if text.isdigit():
            return int(text)
        time.sleep(0.1)
    return None


def _wait_clean(clean: str, env: dict[str, str]) -> None:
    """After the person ends the leftover: wait until the GPU lets it go, before the sweep resumes."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (
            subprocess.run(["/bin/sh", "-c", clean[4:]], cwd=ROOT, env=env, capture_output=True).returncode
            == 0
        ):
            return
        time.sleep(0.5)
    say("# the clean check still fails 60 s after the leftover was ended")


if __name__ == "__main__":
    sys.exit(main())
