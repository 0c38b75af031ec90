"""The lean MCP start and the hot tools on it (issue 30), as ratios measured side
by side in one run (absolute times on a shared machine are noise; the load
average is printed at the start and the end):

    .venv/bin/python bench/bench_mcp_lean.py            # 15 starts, 300 calls a server
    .venv/bin/python bench/bench_mcp_lean.py --quick    # 7 starts, 100 calls

1. `todoledger mcp` from spawn until its `tools/list` answer, on the wire
   (JSON-RPC lines, as the agents speak it), next to a one-tool MCPServer on the
   same SDK and to `python -c pass`, each a fresh process, alternated run by run.
   Targets: <= 0.25x the one-tool server, <= 3x `python -c pass`.
2. `todowrite` of 20 items, warm, through a raw JSON-RPC client (lines on the
   pipes; no SDK client), p50, next to the SDK's no-op server that declares
   `todowrite` as ours and answers the same reply (bench_mcp.py FLOOR_SERVER),
   calls alternated between the two; ours keeps its commit's fsync. On the
   temporary folder's disk and on tmpfs (/dev/shm) beside it. Target: <= 1.3x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mcp import FLOOR_SERVER, MINIMAL_SERVER, WIRE, todos, wire_once

BIN = Path(sys.executable).parent
TODOLEDGER = str(BIN / "todoledger")


def python_once() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def starts(db: Path, minimal: Path, runs: int) -> dict[str, float]:
    ours = ([TODOLEDGER, "mcp"], {"TODOLEDGER_DB": str(db)})
    one = ([sys.executable, str(minimal)], {})
    wire_once(*ours)  # page cache, .pyc files
    wire_once(*one)
    samples: dict[str, list[float]] = {"todoledger mcp": [], "one-tool server": [], "python -c pass": []}
    for _ in range(runs):
        samples["todoledger mcp"].append(wire_once(*ours))
        samples["one-tool server"].append(wire_once(*one))
        samples["python -c pass"].append(python_once())
    return {name: statistics.median(v) * 1000 for name, v in samples.items()}


class Raw:
    """One server process spoken to in JSON-RPC lines."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.n = 10
        self.send(WIRE[0])
        self.send(WIRE[1], answer=False)

    def send(self, message: dict[str, Any], answer: bool = True) -> dict[str, Any] | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        if not answer:
            return None
        found: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return found

    def call(self, payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        self.n += 1
        message = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call"}
        message["params"] = {"name": "todowrite", "arguments": payload}
        start = time.perf_counter()
        reply = self.send(message)
        elapsed = time.perf_counter() - start
        assert reply is not None
        if reply.get("error") or reply["result"].get("isError"):
            raise SystemExit(f"todowrite failed: {reply}")
        return elapsed, reply

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def writes(folder: Path, floor: Path, calls: int, warmup: int) -> dict[str, float]:
    from todoledger.mcp.output import OUTPUT_SCHEMAS
    from todoledger.mcp.tools import TOOLS

    folder.mkdir(parents=True, exist_ok=True)
    ours = Raw([TODOLEDGER, "mcp"], {"TODOLEDGER_DB": str(folder / "ledger.db")})
    _, first = ours.call({"todos": todos(20, 0)})
    reply, schemas = folder / "reply.json", folder / "schemas.json"
    reply.write_text(json.dumps(first["result"]["structuredContent"]))
    schemas.write_text(
        json.dumps({"input": TOOLS["todowrite"]["inputSchema"], "output": OUTPUT_SCHEMAS["todowrite"]})
    )
    noop = Raw([sys.executable, str(floor), str(reply), str(schemas)], {})
    times: dict[str, list[float]] = {"ours": [], "no-op": []}
    for step in range(warmup + calls):
        payload = {"todos": todos(20, step + 1)}
        pair = [("ours", ours), ("no-op", noop)] if step % 2 else [("no-op", noop), ("ours", ours)]
        for name, server in pair:
            elapsed, _ = server.call(payload)
            if step >= warmup:
                times[name].append(elapsed)
    ours.close()
    noop.close()
    return {name: statistics.median(v) * 1000 for name, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, calls, warmup = (7, 100, 10) if args.quick else (15, 300, 30)
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs; shared machine: ratios only)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-mcp-lean-") as tmp:
        work = Path(tmp)
        minimal, floor = work / "minimal_server.py", work / "floor_server.py"
        minimal.write_text(MINIMAL_SERVER)
        floor.write_text(FLOOR_SERVER)
        start = starts(work / "start.db", minimal, runs)
        on_disk = writes(work / "disk", floor, calls, warmup)
        with tempfile.TemporaryDirectory(prefix="bench-mcp-lean-", dir="/dev/shm") as shm:
            on_tmpfs = writes(Path(shm), floor, calls, warmup)
    vs_one = start["todoledger mcp"] / start["one-tool server"]
    vs_python = start["todoledger mcp"] / start["python -c pass"]
    print(f"1. start to the tools/list answer, on the wire (median of {runs}, fresh processes, alternated):")
    print(
        f"   todoledger mcp {start['todoledger mcp']:.0f} ms, one-tool server {start['one-tool server']:.0f} ms,"
        f" python -c pass {start['python -c pass']:.0f} ms"
    )
    print(
        f"   todoledger mcp / one-tool server: {vs_one:.2f}x (target <= 0.25x: {'ok' if vs_one <= 0.25 else 'MISSED'})"
    )
    print(
        f"   todoledger mcp / python -c pass:  {vs_python:.2f}x (target <= 3x: {'ok' if vs_python <= 3 else 'MISSED'})"
    )
    print(f"2. todowrite, 20 items, raw JSON-RPC client, p50 of {calls} calls each, alternated:")
    for where, found in (("disk", on_disk), ("tmpfs", on_tmpfs)):
        ratio = found["ours"] / found["no-op"]
        print(
            f"   {where:5s}: ours {found['ours']:.2f} ms, SDK no-op server {found['no-op']:.2f} ms:"
            f" {ratio:.2f}x (target <= 1.3x: {'ok' if ratio <= 1.3 else 'MISSED'})"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
