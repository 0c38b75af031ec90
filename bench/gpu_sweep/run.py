"""The seeds' draft-token sweep on a real GPU, through `todoledger sweep`.

    python3 bench/gpu_sweep/run.py --out "$OUT"          # from the repository's root

One server per configuration (`server.py`: a ~1.1B Llama-shaped decoder with
fixed random weights, assisted decoding with k = 16, 8, 4, 2 draft tokens
drafted by its own first two layers, and k = 0 without speculation, the
baseline), each started by the sweep's `--setup`, polled by `--ready` on its
/health, measured by `client.py` (one timed generation a run, `--repeat` runs
after `--warmup` runs not counted), ended by the default teardown (the setup's
process group), and followed by a `--clean` check that asks `nvidia-smi
--query-compute-apps` for processes left on the GPU. The first server leaves
one on purpose (`leftover.py`, 1 GiB held outside its process group): the
clean check must stop the sweep after k = 16. The runner then ends that
process, as the person told its pid would, and resumes the sweep.

Without nvidia-smi (a CPU check of this runner) the clean check is a
stand-in, `leftovers.py`: this benchmark's own processes still alive, by
their command lines; the summary says so. The model is then `--size tiny`.

Nothing is installed: todoledger runs from `src/` (it needs click and rich,
which the GPU machine's image has). The operator is the person the sweep
belongs to: with no terminal there, the runner gives them a person's token in
a tokens file of its own (the route a script has to a person's identity, as
docs/security.md says), so the sweep runs as theirs. Results land in --out:
summary.md, results.txt (the table), results.html, results.json, show.txt
(every command the sweep ran), run.log and the ledger itself.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAME = "gpu_draft"
TOKEN = "gpu-sweep-operator-0123456789"
# Processes left on the GPU after a teardown: wait up to 10 s for the driver to let go, then name them.
GPU_CLEAN = (
    "cmd:for i in 1 2 3 4 5 6 7 8 9 10; do"
    " apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader)"
    ' || { echo "nvidia-smi failed"; exit 2; };'
    ' [ -z "$apps" ] && { echo "no process on the GPU"; exit 0; }; sleep 1; done;'
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
    ap.add_argument("--tokens", type=int, default=256)
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
    tokens_file = os.path.join(work, "tokens")
    with open(tokens_file, "w") as fh:
        fh.write(f"{TOKEN} lead person\n")
    db = os.path.join(out, "ledger.db")
    for stale in (db, db + "-wal", db + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")])),
        TODOLEDGER_DB=db,
        TODOLEDGER_TOKENS=tokens_file,
        TODOLEDGER_TOKEN=TOKEN,
        TODOLEDGER_PLAN="gpu",
        PYTHONUNBUFFERED="1",
    )
    tl = [sys.executable, "-c", "import sys; from todoledger.cli.entry import main; sys.exit(main())"]

    def todoledger(*words: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*tl, *words], cwd=ROOT, env=env, capture_output=True, text=True)
        for line in (proc.stdout + proc.stderr).rstrip().splitlines():
            say(f"    {line}")
        if check and proc.returncode != 0:
            raise SystemExit(
                f"todoledger {words[0]} {words[1] if len(words) > 1 else ''} failed ({proc.returncode})"
            )
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
        f"# model {size}, k = {args.k}, baseline k = 0, {args.repeat} runs after {args.warmup} warm-up, {args.tokens} tokens a run"
    )
    say("$ todoledger sweep add ...")
    todoledger(
        "sweep",
        "add",
        NAME,
        "--template",
        "Assisted decoding: k = {k}",
        "--param",
        f"k={args.k}",
        "--baseline",
        "k=0",
        "--setup",
        f"{py} bench/gpu_sweep/server.py --port {port} --k {{k}} --size {size} --tokens {args.tokens}"
        f" --leftover-once-in {shlex.quote(work)}",
        "--ready",
        f"http://127.0.0.1:{port}/health",
        "--ready-expect",
        "ok",
        "--ready-timeout",
        "300",
        "--clean",
        template,
        "--run",
        f"{py} bench/gpu_sweep/client.py {port}",
        "--metric",
        "tok_s=$.tok_s",
        "--metric",
        "accept_len=$.accept_len",
        "--metric",
        "served_k=$.k",
        "--repeat",
        str(args.repeat),
        "--warmup",
        str(args.warmup),
        "--keep",
        "tok_s>baseline*1.1",
        "--watch",
        "bench/gpu_sweep/model.py",
        "--timeout",
        "600",
    )
    shown = todoledger("sweep", "show", NAME)
    with open(os.path.join(out, "show.txt"), "w") as fh:
        fh.write(shown.stdout)

    say(
        f"$ todoledger sweep run {NAME}        # expected to stop after k=16: its server leaves a process on purpose"
    )
    first = todoledger("sweep", "run", NAME, check=False)
    stop_line = next((ln for ln in first.stderr.splitlines() if " stopped after " in ln), None)
    leftover = _pid(os.path.join(work, "leftover.pid"))
    caught = (
        first.returncode == 1
        and stop_line is not None
        and leftover is not None
        and str(leftover) in stop_line
    )
    notes = []
    if caught:
        notes.append(
            f"The clean check caught the leftover (pid {leftover}) and stopped the sweep: {stop_line}"
        )
    else:
        notes.append(
            f"The clean check did NOT name the leftover (pid {leftover}); exit {first.returncode}; stop line: {stop_line}"
        )
    if leftover is not None:
        say(f"# ending the leftover, pid {leftover}, as the person told its pid would")
        try:
            os.kill(leftover, 9)
        except OSError as exc:
            say(f"# could not end it: {exc}")
        _wait_clean(clean, env)
    say(f"$ todoledger sweep run {NAME}        # resumed")
    second = todoledger("sweep", "run", NAME, check=False)
    notes.append(f"The resumed run exited {second.returncode}.")

    results = todoledger("sweep", "results", NAME)
    with open(os.path.join(out, "results.txt"), "w") as fh:
        fh.write(results.stdout)
    for fmt, name in (("html", "results.html"), ("json", "results.json")):
        got = subprocess.run(
            [*tl, "sweep", "results", NAME, "--format", fmt],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        with open(os.path.join(out, name), "w") as fh:
            fh.write(got.stdout)
    left = subprocess.run(["/bin/sh", "-c", clean[4:]], cwd=ROOT, capture_output=True, text=True)
    notes.append(
        f"After the sweep, the clean check: exit {left.returncode}: {left.stdout.strip().splitlines()[-1:]}"
    )
    elapsed = time.monotonic() - started
    summary = [
        "# GPU sweep through todoledger",
        "",
        f"- machine: {'GPU: ' + gpu_text if gpu else 'no nvidia-smi (CPU check; clean check = stand-in leftovers.py)'}",
        f"- model: {size}; k = {args.k} draft tokens (drafted by the model's own first layers), baseline k = 0",
        f"- {args.repeat} runs per combination after {args.warmup} warm-up run(s), {args.tokens} new tokens a run",
        f"- wall time of the whole runner: {elapsed:.0f} s",
        *[f"- {n}" for n in notes],
        "",
        "```",
        results.stdout.rstrip(),
        "```",
    ]
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write("\n".join(summary) + "\n")
    say("\n".join(summary))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if caught and second.returncode == 0 else 1


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
