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
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from common import (  # type: ignore[import-not-found]
    NAME,
    OPERATOR,
    ROOT,
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
    read_pid,
    results,
    say,
    short_rows,
    teardowns,
    todoledger,
    wait_clean,
)


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
    out, db = prepare(args.out)
    work = tempfile.mkdtemp(prefix="gpu-sweep-")
    gpu, gpu_text = machine()
    size = args.size or ("1b" if gpu else "tiny")
    env = environment(db)
    port = free_port()
    clean = clean_check(gpu, str(port), work)
    say(
        f"# gpu_sweep: {'nvidia-smi found' if gpu else 'no nvidia-smi: the clean check is the stand-in leftovers.py'}"
    )
    if gpu:
        say(f"# GPU: {gpu_text}")
    say(
        f"# model {size}, k = {args.k}, baseline k = 0, {args.repeat} runs after {args.warmup} warm-up,"
        f" {args.tokens} tokens a run, one port ({port}) for every configuration"
    )
    say(f"# the operator defines the sweep through the Python API as {OPERATOR} (a person's own sweep)")
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
        setup_extra=f"--leftover-once-in {shlex.quote(work)}",
    )
    shown = todoledger(env, "sweep", "show", NAME)
    with open(os.path.join(out, "show.txt"), "w") as fh:
        fh.write(shown.stdout)
    notes: list[str] = []
    ok = True
    # 1. the leftover -------------------------------------------------------------------------
    say(
        f"$ todoledger sweep run {NAME}        # must stop after k=16: its server leaves a process on purpose"
    )
    first = todoledger(env, "sweep", "run", NAME)
    stop_line = next((ln for ln in first.stderr.splitlines() if " stopped after " in ln), None)
    leftover = read_pid(os.path.join(work, "leftover.pid"))
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
        wait_clean(clean, env, "the leftover was ended")

    # 2. and 3. a second runner refused, then the running one killed ----------------------------
    say(
        f"$ todoledger sweep run {NAME}        # resumed; a second run tries to start, then this one is SIGKILLed"
    )
    runner = subprocess.Popen(
        [*TL, "sweep", "run", NAME],
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
        second = todoledger(env, "sweep", "run", NAME)
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
    last = todoledger(env, "sweep", "run", NAME)
    torn = [ln.strip() for ln in last.stdout.splitlines() if "a killed run left" in ln]
    ok &= last.returncode == 0 and bool(torn)
    notes.append(
        f"The resume after the kill exited {last.returncode}: `{torn[0] if torn else 'no left setup torn down'}`."
    )

    table, data = results(out, env)
    short = short_rows(data, args.repeat)
    ok &= not short
    notes.append(
        f"Every combination has its {args.repeat} runs, none failed."
        if not short
        else f"Rows short of {args.repeat} runs or failed: {short}"
    )
    left = clean_now(clean)
    notes.append(
        f"After the sweep, the clean check: exit {left.returncode}: {left.stdout.strip().splitlines()[-1:]}"
    )
    elapsed = time.monotonic() - started
    summary = [
        "# GPU sweep through todoledger",
        "",
        machine_line(gpu, gpu_text),
        *plan_lines(
            size=size,
            k=args.k,
            repeat=args.repeat,
            warmup=args.warmup,
            tokens=args.tokens,
            port=port,
            commit=args.commit,
        ),
        f"- wall time of the whole runner: {elapsed:.0f} s",
        *[f"- {n}" for n in notes],
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
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write("\n".join(summary) + "\n")
    say("\n".join(summary))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
