"""The Claude Code hooks' cost, as ratios measured side by side in one run
(absolute times on a shared machine are noise; the load average is printed):

    .venv/bin/python bench/bench_hooks.py            # 1,000 and 100,000 items
    .venv/bin/python bench/bench_hooks.py --quick    # fewer samples, 1,000 and 20,000

1. SessionStart (the recovery text) on a plan of 100,000 items, most of them
   finished (as a long campaign leaves it), next to the same hook on a plan of
   1,000 items with the same open work (target <= 2x: the recovery text reads
   what it prints, ledger/reading.py `recovery_view`);
2. each hook (TodoWrite mirror, SessionStart, Stop) on the 1,000-item plan,
   next to `python -c pass` with bytecode compiled (target <= 2.5x), without
   and with Claude Code's task panel installed (`install claude-code --panel`:
   "hooks keep their budgets with the panel sync turned on"). The mirror sends
   the same three-item list each run: after the first run it changes nothing
   (no commit, no panel rows written); SessionStart syncs the panel (its rows
   already shown: nothing written after the first run);
3. `show --json` on a plan of 300 items each with a gate (a file check), next
   to the same plan without gates (target <= 1.2x: no import machinery per
   gate, core/checkspec.py).

Each sample is a fresh process of the console script, as Claude Code starts it,
the hooks and the baseline alternated run by run; the p50 of each is printed.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TODOLEDGER = str(BIN / "todoledger")
OPEN = 40  # the open work of both plans: the rest is finished or dropped


def plan_of(db: Path, n: int) -> None:
    from todoledger import Ledger

    lines = []
    for k in range(n):
        status = "pending" if k >= n - OPEN else ("completed" if k % 10 else "cancelled")
        lines.append(
            json.dumps({"id": f"t{k:06d}", "content": f"item {k}", "position": float(k), "status": status})
        )
    with Ledger(db) as lg:
        lg.import_jsonl(lines)


def gated_plan(db: Path, gated: bool) -> None:
    """300 items, each with a gate (a file check, completed and verified) or none."""
    from todoledger import Ledger

    db.parent.mkdir(parents=True, exist_ok=True)
    proof = db.parent / "proof.txt"
    proof.write_text("ok\n")
    lines = [
        json.dumps({"id": f"g{k:04d}", "content": f"item {k}", "position": float(k)}) for k in range(300)
    ]
    with Ledger(db) as lg:
        lg.import_jsonl(lines)
        if gated:
            for k in range(300):
                lg.add_check(f"g{k:04d}", f"file:{proof}", writer="cli:bench")


def event(name: str, cwd: str | None = None, **more: object) -> bytes:
    where = cwd or os.getcwd()
    return json.dumps({"session_id": "bench", "hook_event_name": name, "cwd": where, **more}).encode()


def panel_of(work: Path, db: Path) -> tuple[Path, str, dict[str, str]]:
    """A project (a git repository) with Claude Code's task panel installed for its plan,
    as `install claude-code --panel` sets it up; the hook's environment for it."""
    from todoledger.install import run
    from todoledger.panel import target

    project, home = work / "panel-project", work / "panel-home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    found = target(str(project), home)
    assert found is not None
    hook_env = {"HOME": str(home), "CLAUDE_CODE_TASK_LIST_ID": found.list_id, "TODOLEDGER_DB": str(db)}
    return project, found.folder, hook_env


def timed(cmd: list[str], env: dict[str, str], stdin: bytes | None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[:300]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--large", type=int, default=None)
    args = parser.parse_args()
    runs = 7 if args.quick else 15
    large = args.large or (20_000 if args.quick else 100_000)
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs; shared machine: ratios only)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        small_db, large_db = work / "small" / "ledger.db", work / "large" / "ledger.db"
        panel_db = work / "panel" / "ledger.db"
        small_db.parent.mkdir()
        large_db.parent.mkdir()
        panel_db.parent.mkdir()
        plan_of(small_db, 1_000)
        plan_of(large_db, large)
        plan_of(panel_db, 1_000)
        project, folder, panel_vars = panel_of(work, panel_db)
        # Bytecode compiled, as an installed package has it: a stale .pyc would be compiled per run.
        compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "src"), quiet=1)
        base = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["XDG_STATE_HOME"] = str(work / "state")
        small_env = base | {"TODOLEDGER_DB": str(small_db)}
        large_env = base | {"TODOLEDGER_DB": str(large_db)}
        hook = [TODOLEDGER, "hook", "claude-code"]
        start = event("SessionStart", source="startup")
        todos = {
            "todos": [
                {"content": f"item {k}", "status": "pending", "activeForm": f"item {k}"} for k in range(3)
            ]
        }
        mirror = event("PostToolUse", tool_name="TodoWrite", tool_input=todos, tool_response={})
        stop = event("Stop", stop_hook_active=False)
        panel_env = base | panel_vars
        panel_start = event("SessionStart", str(project), source="startup")
        panel_mirror = event(
            "PostToolUse", str(project), tool_name="TodoWrite", tool_input=todos, tool_response={}
        )
        panel_stop = event("Stop", str(project), stop_hook_active=False)
        gated_db, plain_db = work / "gated" / "ledger.db", work / "plain" / "ledger.db"
        gated_plan(gated_db, True)
        gated_plan(plain_db, False)
        show = [TODOLEDGER, "show", "--json"]
        cases: dict[str, tuple[list[str], dict[str, str], bytes | None]] = {
            "show --json, 300 gated items": (show, base | {"TODOLEDGER_DB": str(gated_db)}, None),
            "show --json, 300 items, no gates": (show, base | {"TODOLEDGER_DB": str(plain_db)}, None),
            "python -c pass": ([sys.executable, "-c", "pass"], base, None),
            "SessionStart, 1,000 items": (hook, small_env, start),
            f"SessionStart, {large:,} items": (hook, large_env, start),
            "TodoWrite mirror, 1,000 items": (hook, small_env, mirror),
            "Stop, 1,000 items": (hook, small_env, stop),
            "SessionStart, panel on": (hook, panel_env, panel_start),
            "TodoWrite mirror, panel on": (hook, panel_env, panel_mirror),
            "Stop, panel on": (hook, panel_env, panel_stop),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for cmd, env, stdin in cases.values():  # warm the page cache and bytecode
            timed(cmd, env, stdin)
        shown = [n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")]
        assert len(shown) == OPEN + 21, shown  # the open items, the 20 latest done, "... N more": synced
        for _ in range(runs):
            for name, (cmd, env, stdin) in cases.items():
                samples[name].append(timed(cmd, env, stdin))
    p50 = {name: statistics.median(v) for name, v in samples.items()}
    base_t = p50["python -c pass"]
    for name, t in p50.items():
        print(f"{name:34s} p50 {t * 1000:7.1f} ms  {t / base_t:5.2f}x python -c pass")
    ratio = p50[f"SessionStart, {large:,} items"] / p50["SessionStart, 1,000 items"]
    print(f"SessionStart {large:,} / 1,000 items: {ratio:.2f}x (target <= 2x)")
    gates = p50["show --json, 300 gated items"] / p50["show --json, 300 items, no gates"]
    print(f"show --json, 300 gated items / without gates: {gates:.2f}x (target <= 1.2x)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
