"""Refusals and pathological inputs must stay cheap. These timings were wall-clock
asserts in tests/ (flaky on a busy CI machine); here each is printed
beside a reference measured in the same run, with its target.

    .venv/bin/python bench/bench_limits.py

1. a 10 MB payload is refused before parsing: refusal / json.loads of the same text;
2. 100,000 items are refused: refusal / json.loads of the same text;
3. `lint` refuses both the same way: lint / json.loads;
4. a 2,000-item list rewritten with all new items / the first write of 2,000 items;
5. an 8 MB transcript line read in 1 KB blocks / in the default blocks (linear join);
(`report` of a 2,000-call session: bench_ingest.py; its growth: bench_report.py)
6. the hook against a ledger another process holds: its time / the agents' 5 s kill limit;
7. the Stop gate over an 80 MB transcript (the real e2e transcripts repeated: it reads the
   last 64 MB for todoledger's MCP replies), per agent: its time against Gemini's 5 s kill
   limit, and beside the same hook given no transcript (all repeats printed).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent


def seconds(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def refused(fn: Callable[[], Any]) -> Callable[[], None]:
    from todoledger.core.model import LimitError

    def run() -> None:
        try:
            fn()
        except LimitError:
            return
        raise AssertionError("not refused")

    return run


def line(label: str, value: float, target: float, unit: str = "x") -> bool:
    ok = value <= target
    print(f"{label:<58} {value:8.3f}{unit}  (target <= {target:g}{unit}) {'ok' if ok else 'MISSED'}")
    return ok


def main() -> None:
    from todoledger.dialects import lint_payload, parse
    from todoledger.ledger import Ledger

    results = []
    big = json.dumps({"todos": [{"content": "x" * (10 * 1024 * 1024), "status": "pending"}]})
    many = json.dumps({"todos": [{"content": f"t{i}", "status": "pending"} for i in range(100_000)]})
    load_big, load_many = seconds(lambda: json.loads(big)), seconds(lambda: json.loads(many))
    results.append(
        line("refuse a 10 MB payload / json.loads it", seconds(refused(lambda: parse(big))) / load_big, 0.5)
    )
    results.append(
        line("refuse 100,000 items / json.loads them", seconds(refused(lambda: parse(many))) / load_many, 0.5)
    )
    results.append(
        line(
            "lint refuses 10 MB / json.loads it", seconds(refused(lambda: lint_payload(big))) / load_big, 0.5
        )
    )

    with tempfile.TemporaryDirectory(prefix="todoledger-bench-") as tmp:
        first = [{"content": f"old step {k} alpha", "status": "pending"} for k in range(2000)]
        second = [{"content": f"new task {k} beta", "status": "pending"} for k in range(2000)]
        with Ledger(Path(tmp) / "rewrite.db") as lg:
            start = time.perf_counter()
            lg.write({"todos": first}, writer="w")
            first_s = time.perf_counter() - start
            start = time.perf_counter()
            lg.write({"todos": second}, writer="w")
            second_s = time.perf_counter() - start
        results.append(
            line("rewrite 2,000 items with new ones / first write of 2,000", second_s / first_s, 3.0)
        )

        results.append(line("8 MB line in 1 KB blocks / in default blocks", _long_line(Path(tmp)), 10.0))
        results.append(line("hook with the ledger held by another process", _busy_hook(Path(tmp)), 5.0, " s"))
        for agent, event, sample in STOP_GATE_SAMPLES:
            big, bare = _stop_gate(Path(tmp), agent, event, sample)
            spread = f"  (runs {', '.join(f'{b:.2f}' for b in big)} s; no transcript {', '.join(f'{b:.2f}' for b in bare)} s)"
            results.append(line(f"Stop gate {agent}, 80 MB transcript", max(big), 2.5, " s"))
            print(f"{'':<58} {min(big) / min(bare):8.3f}x  of the hook without one" + spread)
    sys.exit(0 if all(results) else 1)


def _long_line(tmp: Path) -> float:
    from todoledger.ingest import lines as lines_mod
    from todoledger.ingest.calls import Skipped
    from todoledger.ingest.sources import discover, read_calls

    payload = {"todos": [{"content": "x" * (8 << 20), "status": "pending", "activeForm": "x"}]}
    row = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s",
        "type": "assistant",
        "timestamp": "2025-07-01T10:00:00.000Z",
        "message": {
            "id": "m",
            "content": [{"type": "tool_use", "id": "t", "name": "TodoWrite", "input": payload}],
        },
    }
    path = tmp / "long.jsonl"
    path.write_text(json.dumps(row) + "\n")

    def read() -> None:
        skipped = Skipped()
        found = [c for s in discover([str(path)], skipped) for c in read_calls(s, skipped)]
        assert len(found) == 1

    default = seconds(read, 1)
    saved = lines_mod.BLOCK_BYTES
    lines_mod.BLOCK_BYTES = 1024
    try:
        small = seconds(read, 1)
    finally:
        lines_mod.BLOCK_BYTES = saved
    return small / default


def _busy_hook(tmp: Path) -> float:
    db = tmp / "busy" / ".todoledger" / "ledger.db"
    env = dict(os.environ, TODOLEDGER_DB=str(db))
    event = {
        "session_id": "s1",
        "cwd": str(tmp),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": "A", "status": "pending", "activeForm": "A"}]},
    }
    hook = [str(BIN / "todoledger"), "hook", "claude-code"]
    subprocess.run(hook, input=json.dumps(event), text=True, env=env, check=True, capture_output=True)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        start = time.perf_counter()
        subprocess.run(hook, input=json.dumps(event), text=True, env=env, check=True, capture_output=True)
        return time.perf_counter() - start
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts"
STOP_GATE_SAMPLES = [
    ("claude-code", "Stop", "claude-code-2.1.332-mcp-stop-gate.jsonl"),
    ("codex", "Stop", "codex-0.171.0-rollout-mcp-stop-gate.jsonl"),
    ("gemini", "AfterAgent", "gemini-0.61.0-chat-mcp-after-agent.jsonl"),
]


def _stop_gate(
    tmp: Path, agent: str, event_name: str, sample: str, repeat: int = 3
) -> tuple[list[float], list[float]]:
    """Seconds of `todoledger hook AGENT --gate-stop` with an 80 MB transcript and
    without one, measured alternately (the ledger holds one gated item)."""
    from todoledger.ledger import Ledger

    db = tmp / f"gate-{agent}" / ".todoledger" / "ledger.db"
    db.parent.mkdir(parents=True)
    with Ledger(db) as lg:
        item = lg.add("Verify disk", writer="setup")["id"]
        lg.add_check(item, "cmd:false")
    real = (TRANSCRIPTS / sample).read_bytes()
    path = tmp / f"{agent}.jsonl"
    with path.open("wb") as fh:
        for _ in range((80 << 20) // len(real) + 1):
            fh.write(real)
    env = dict(os.environ, TODOLEDGER_DB=str(db))
    hook = [str(BIN / "todoledger"), "hook", agent, "--gate-stop"]
    base = {"session_id": "s1", "cwd": str(tmp), "hook_event_name": event_name, "stop_hook_active": False}
    big: list[float] = []
    bare: list[float] = []
    for _ in range(repeat):
        for event, into in (({**base, "transcript_path": str(path)}, big), (base, bare)):
            start = time.perf_counter()
            subprocess.run(hook, input=json.dumps(event), text=True, env=env, check=True, capture_output=True)
            into.append(time.perf_counter() - start)
    return big, bare


if __name__ == "__main__":
    main()
