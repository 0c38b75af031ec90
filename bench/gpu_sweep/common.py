"""What the GPU sweep's runners share (`run.py`: `todoledger sweep run`; `run_task.py`:
`plan_sweep` as an MCP task): the sweep itself, defined the same way for both, the
machine it runs on and its clean check, the environment todoledger runs in (from
`src/`, nothing installed), the log written as it goes, and the results.

Nothing here runs the sweep: each runner does that its own way.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from typing import Any

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
STAND_IN = "bench/gpu_sweep/leftovers.py"
# todoledger from src/, run by this Python: nothing installed, no `todoledger` on the PATH needed.
TL = [sys.executable, "-c", "import sys; from todoledger.cli.entry import main; sys.exit(main())"]

LOG: list[str] = []  # run.log's path, once --out is known: written line by line, so a killed run keeps it


def say(line: str) -> None:
    print(line, flush=True)
    if LOG:
        with open(LOG[0], "a") as fh:
            fh.write(line + "\n")


def prepare(out: str) -> tuple[str, str]:
    """--out made (absolute), run.log started afresh, an earlier ledger there removed:
    (out, the ledger's path)."""
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    LOG[:] = [os.path.join(out, "run.log")]
    if os.path.exists(LOG[0]):
        os.remove(LOG[0])
    db = os.path.join(out, "ledger.db")
    for stale in (db, db + "-wal", db + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    return out, db


def environment(db: str) -> dict[str, str]:
    """This process's environment for todoledger's commands: none of the caller's
    TODOLEDGER_ settings, todoledger from src/, this ledger and plan."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")])),
        TODOLEDGER_DB=db,
        TODOLEDGER_PLAN=PLAN,
        PYTHONUNBUFFERED="1",
    )
    return env


def todoledger(env: dict[str, str], *words: str, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    """A todoledger command from the repository's root; its output goes to the log (unless `quiet`)."""
    proc = subprocess.run([*TL, *words], cwd=ROOT, env=env, capture_output=True, text=True)
    if not quiet:
        for line in (proc.stdout + proc.stderr).rstrip().splitlines():
            say(f"    {line}")
    return proc


def machine() -> tuple[bool, str]:
    """(nvidia-smi found, the GPU's name, driver and memory as it says them)."""
    if shutil.which("nvidia-smi") is None:
        return False, ""
    found = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    )
    return True, found.stdout.strip()


def machine_line(gpu: bool, gpu_text: str) -> str:
    return f"- machine: {'GPU: ' + gpu_text if gpu else 'no nvidia-smi (CPU check; clean check = stand-in leftovers.py)'}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def clean_check(gpu: bool, *mine: str) -> str:
    """The sweep's clean check: nvidia-smi's compute processes, or without it the stand-in,
    this benchmark's processes still alive whose command lines hold one of `mine` (this
    runner's port, its folder), so that another runner on the same machine is not counted."""
    if gpu:
        return GPU_CLEAN
    return "cmd:" + shlex.join(["python3", STAND_IN, *mine])


def clean_now(clean: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The clean check run once, here."""
    return subprocess.run(["/bin/sh", "-c", clean[4:]], cwd=ROOT, env=env, capture_output=True, text=True)


def wait_clean(clean: str, env: dict[str, str], what: str, limit: float = 60.0) -> bool:
    """Poll the clean check until it holds (the GPU let a process go), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if clean_now(clean, env).returncode == 0:
            return True
        time.sleep(0.5)
    say(f"# the clean check still fails {limit:.0f} s after {what}")
    return False


def define(
    db: str,
    *,
    k: str,
    size: str,
    tokens: int,
    port: int,
    clean: str,
    clean_timeout: float,
    repeat: int,
    warmup: int,
    setup_extra: str = "",
) -> None:
    """The sweep, defined through the Python API as the person OPERATOR (their own sweep):
    a server per k on one port, its /health polled, `client.py` a run, the default
    teardown, the clean check after each. `setup_extra`: more words for server.py."""
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from todoledger.ledger import Ledger

    py = shlex.quote(sys.executable)
    template = clean.replace("{", "{{").replace("}", "}}")  # a sweep's commands place {NAME}: braces doubled
    with Ledger(db) as lg:
        lg.add_sweep(
            NAME,
            plan=PLAN,
            writer=OPERATOR,
            template="Assisted decoding: k = {k}",
            params=[f"k={k}"],
            baseline=["k=0"],
            setup=f"{py} bench/gpu_sweep/server.py --port {port} --k {{k}} --size {size} --tokens {tokens}"
            + (f" {setup_extra}" if setup_extra else ""),
            ready=f"http://127.0.0.1:{port}/health",
            ready_options={"expect": "ok"},
            ready_timeout=300,
            clean=template,
            clean_timeout=clean_timeout,
            run=f"{py} bench/gpu_sweep/client.py {port}",
            metrics=["tok_s=$.tok_s", "accept_len=$.accept_len", "served_k=$.k"],
            repeat=repeat,
            warmup=warmup,
            keep="tok_s>baseline*1.1",
            watch=["bench/gpu_sweep/model.py"],
            timeout=600,
        )


def plan_lines(
    *, size: str, k: str, repeat: int, warmup: int, tokens: int, port: int, commit: str
) -> list[str]:
    """The summary's lines on what was run: commit, model, runs, and the budget."""
    runs = repeat + warmup
    k_count = len(k.split(",")) + 1
    return [
        f"- commit: {commit or 'not given'}",
        f"- model: {size}; k = {k} draft tokens (drafted by the model's own first layers), baseline k = 0",
        f"- {repeat} runs per combination after {warmup} warm-up run(s), {tokens} new tokens a run,"
        f" one port ({port}) for every combination",
        f"- the budget (arithmetic, not a measurement): {k_count} combinations x {runs} runs x {tokens} tokens"
        f" = {k_count * runs * tokens} tokens; at the 11 tok/s an earlier run measured that is"
        f" {k_count * runs * tokens / 11:.0f} s of generation, plus a server start per setup",
    ]


def results(out: str, env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """results.txt, results.html and results.json in --out: (the table, the JSON)."""
    table = todoledger(env, "sweep", "results", NAME)
    with open(os.path.join(out, "results.txt"), "w") as fh:
        fh.write(table.stdout)
    found: dict[str, str] = {}
    for fmt, name in (("html", "results.html"), ("json", "results.json")):
        got = todoledger(env, "sweep", "results", NAME, "--format", fmt, quiet=True)
        found[fmt] = got.stdout
        with open(os.path.join(out, name), "w") as fh:
            fh.write(got.stdout)
    return table.stdout, json.loads(found["json"])


def short_rows(data: dict[str, Any], repeat: int) -> list[tuple[Any, Any, Any]]:
    """The results' rows short of `repeat` runs, or failed."""
    return [
        (r["params"], r["metric"], r["n"])
        for r in data["rows"]
        if (r.get("n") or 0) < repeat or r.get("verdict") == "failed"
    ]


def teardowns(data: dict[str, Any]) -> list[str]:
    """Each setup's end as the ledger recorded it: how, the port's wait, the clean check."""
    out = []
    for s in data.get("setups", []):
        down = s.get("teardown") or {}
        port = down.get("port") or {}
        clean = s.get("clean") or {}
        wait = f", port {port['port']} free after {port['waited_s']:.2f} s" if port.get("free") else ""
        out.append(
            f"{s.get('item')} (pid {s.get('pid')}): {down.get('group')}{wait};"
            f" clean: {clean.get('result', 'not run')} ({clean.get('line', '')}); outcome: {s.get('outcome')}"
        )
    return out


def read_pid(path: str) -> int | None:
    """The pid a process wrote to `path`, waiting up to 5 s for it."""
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
