"""Benchmarks for the MCP server. Every figure is measured in this run, side by
side: absolute times on a shared machine are noise.

    .venv/bin/python bench/bench_mcp.py            # everything
    .venv/bin/python bench/bench_mcp.py --quick    # fewer samples
    .venv/bin/python bench/bench_mcp.py --no-peers # without installing the peers

1. `todowrite` of 20 items through the SDK client over stdio, warm, in 3
   rounds; in each, calls alternated between three servers: ours; a server on
   the same SDK that declares `todowrite` as ours and answers the same reply to
   the same call without doing anything (the SDK's own cost of the call); and
   ours with its commits not synced (synchronous=OFF, set here by the benchmark
   only: the product always syncs), whose difference from ours is the fsync's
   share. Targets, in each round: ours' p99 <= 2.5x the no-op server's p99, and
   ours' median <= 1.75x the no-op server's median; the `tools/list` round trip
   reported beside them;
2. start-up of `todoledger mcp` until `tools/list` answers, next to a minimal
   MCPServer (one tool) built with the same SDK and to `python -c pass`: at
   most 1.1x the one-tool server, on the wire (JSON-RPC lines, as the agents
   speak it); through the SDK's client beside it, which also builds its models
   of the answers (five tools' schemas against one). Where the start goes, each step measured as
   its own process: the interpreter, the SDK's import, the SDK's server made,
   todoledger's server made (its modules and tools beyond the SDK's), and the
   handshake until `tools/list` answers. The ledger is not opened at start: the
   first tool call opens it (doctor reads `todoledger://prime` to check it opens);
3. token footprint (characters / 4 of the `tools/list` JSON) of the default
   tools, next to the peers' own, measured here: Task Master installed from
   npm (its default tool set and TASK_MASTER_TOOLS=all) and beads-mcp from
   PyPI, each into a cache folder (~/.cache/todoledger-bench), started and
   asked for `tools/list`. A peer that cannot be installed or started is
   skipped with the reason: no figure stands in for it.
4. duplicate-key detection (mcp/duplicates.py): a 20-item `todowrite` round
   trip through our server, next to the same server with the detection taken
   out, calls alternated: at most 1.1x; beside it, in this process, the fast
   check of one such call and the strict parse it spares.

Figures that comments in the code point here for, measured when each choice
was made: the SDK's stdio through `anyio.wrap_file` (a dozen thread hops a
call) cost 0.7 ms of a warm round trip; on the event loop's own pipes,
side by side, `tools/list` went from 3.7 to 2.9 ms and a 20-item `todowrite`
from 7.0 to 6.3 ms with the SDK's client (mcp/stdio.py). Running `todowrite` and
`todoread` on the event loop instead of a worker thread (mcp/server.py,
INLINE_TOOLS): 3.19 -> 2.81 ms side by side; against the floor, on tmpfs,
1.52x -> 1.33x.
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

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import PEER_CACHE, measure_peers

BIN = Path(sys.executable).parent
TODOLEDGER = str(BIN / "todoledger") if (BIN / "todoledger").exists() else "todoledger"

MINIMAL_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


server.run()
'''

# The SDK's own cost of this call: a server on the same SDK whose `todowrite`
# is declared as ours (the same input and output schema: the SDK's client
# checks a reply against the output schema, at the client's cost) and answers
# the same reply (text and structured content, as ours) without doing anything.
FLOOR_SERVER = '''
import json
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

REPLY = json.loads(open(sys.argv[1], encoding="utf-8").read())
SCHEMAS = json.loads(open(sys.argv[2], encoding="utf-8").read())
TEXT = json.dumps(REPLY, ensure_ascii=False, separators=(",", ":"))
server = MCPServer("floor")


@server.tool(structured_output=False)
def todowrite(todos: list[dict[str, Any]]) -> CallToolResult:
    """Answer the recorded reply."""
    return CallToolResult(content=[TextContent(type="text", text=TEXT)], structured_content=REPLY)


tool = server._tool_manager.get_tool("todowrite")
tool.parameters = SCHEMAS["input"]
tool.fn_metadata.output_schema = SCHEMAS["output"]
server.run()
'''

# Ours with its commits not synced: only to measure the fsync's share of a call.
NO_FSYNC_SERVER = """
from todoledger.store import sqlite

synced = sqlite.SQLiteStore._pragmas


def unsynced(self, busy_ms):
    synced(self, busy_ms)
    self.conn.execute("PRAGMA synchronous=OFF")


sqlite.SQLiteStore._pragmas = unsynced
from todoledger.cli.entry import main

main(["mcp"])
"""
ROUNDS = 3


# Our server with the duplicate-key check taken out: the text is neither remembered
# nor checked, so the SDK's parse is all a call costs (the "without" of figure 4).
NO_CHECK_SERVER = """
import todoledger.mcp.server as server
import todoledger.mcp.stdio as stdio

server.lost_keys = lambda params: []
stdio.remember = lambda raw: None
server.run_stdio()
"""


def todos(n: int, step: int) -> list[dict[str, Any]]:
    """A 20-item Claude Code list that moves forward one item per step."""
    current = step % n
    return [
        {
            "content": f"Benchmark step {k}: run the suite with {k} workers",
            "status": "completed" if k < current else ("in_progress" if k == current else "pending"),
            "activeForm": f"Benchmarking step {k}",
        }
        for k in range(n)
    ]


def percentile(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(p * (len(sorted_values) - 1))))
    return sorted_values[index]


async def round_trips(work: Path, floor: Path, calls: int, warmup: int) -> list[dict[str, float]]:
    """ROUNDS rounds of `calls` todowrite calls to each of ours, ours without
    fsync and the no-op server, alternated call by call (noise hits them alike)."""
    reply = floor.with_suffix(".json")
    unsynced = work / "no_fsync_server.py"
    unsynced.write_text(NO_FSYNC_SERVER)
    info = Implementation(name="bench", version="1")

    def ours(db: str) -> StdioServerParameters:
        return StdioServerParameters(command=TODOLEDGER, args=["mcp"], env={"TODOLEDGER_DB": db})

    async def timed(client: Client, payload: dict[str, Any]) -> float:
        start = time.perf_counter()
        result = await client.call_tool("todowrite", payload)
        if result.is_error:
            raise SystemExit(f"todowrite failed: {result.content}")
        return time.perf_counter() - start

    from todoledger.mcp.output import OUTPUT_SCHEMAS
    from todoledger.mcp.tools import TOOLS

    schemas = floor.with_suffix(".schemas.json")
    schemas.write_text(
        json.dumps({"input": TOOLS["todowrite"]["inputSchema"], "output": OUTPUT_SCHEMAS["todowrite"]})
    )
    rounds = []
    for n in range(ROUNDS):
        async with Client(ours(str(work / f"trips{n}.db")), client_info=info) as client:
            first = await client.call_tool("todowrite", {"todos": todos(20, 0)})
            reply.write_text(json.dumps(first.structured_content))
            nofsync = StdioServerParameters(
                command=sys.executable,
                args=[str(unsynced)],
                env={"TODOLEDGER_DB": str(work / f"nofsync{n}.db")},
            )
            noop = StdioServerParameters(command=sys.executable, args=[str(floor), str(reply), str(schemas)])
            async with Client(nofsync, client_info=info) as loose, Client(noop, client_info=info) as bare:
                servers = {"ours": client, "no fsync": loose, "no-op": bare}
                for step in range(warmup):
                    for c in servers.values():
                        await c.call_tool("todowrite", {"todos": todos(20, step)})
                    await client.list_tools()
                times: dict[str, list[float]] = {name: [] for name in servers}
                listing: list[float] = []
                for step in range(calls):
                    payload = {"todos": todos(20, warmup + step)}
                    for name, c in servers.items():
                        times[name].append(await timed(c, payload))
                    if step % 5 == 0:
                        start = time.perf_counter()
                        await client.list_tools()
                        listing.append(time.perf_counter() - start)
        figures = {"tools_list_median_ms": statistics.median(listing) * 1000, "calls": float(calls)}
        for name, values in times.items():
            values.sort()
            figures[f"{name} median"] = statistics.median(values) * 1000
            figures[f"{name} p99"] = percentile(values, 0.99) * 1000
            figures[f"{name} max"] = values[-1] * 1000
        rounds.append(figures)
    return rounds


async def detection(db: Path, bare_db: Path, no_check: Path, calls: int, warmup: int) -> dict[str, float]:
    """Our server with and without the duplicate-key check, each through its own
    client in the same loop, calls alternated: their ratio."""
    info = Implementation(name="bench", version="1")
    checked = StdioServerParameters(command=TODOLEDGER, args=["mcp"], env={"TODOLEDGER_DB": str(db)})
    unchecked = StdioServerParameters(
        command=sys.executable, args=[str(no_check)], env={"TODOLEDGER_DB": str(bare_db)}
    )

    async def timed(client: Client, payload: dict[str, Any]) -> float:
        start = time.perf_counter()
        result = await client.call_tool("todowrite", payload)
        if result.is_error:
            raise SystemExit(f"todowrite failed: {result.content}")
        return time.perf_counter() - start

    async with Client(checked, client_info=info) as ours, Client(unchecked, client_info=info) as bare:
        for step in range(warmup):
            await ours.call_tool("todowrite", {"todos": todos(20, step)})
            await bare.call_tool("todowrite", {"todos": todos(20, step)})
        with_check: list[float] = []
        without: list[float] = []
        for step in range(calls):
            payload = {"todos": todos(20, warmup + step)}
            if step % 2:  # who goes first alternates too
                with_check.append(await timed(ours, payload))
                without.append(await timed(bare, payload))
            else:
                without.append(await timed(bare, payload))
                with_check.append(await timed(ours, payload))
    return {
        "with_ms": statistics.median(with_check) * 1000,
        "without_ms": statistics.median(without) * 1000,
        "ratio": statistics.median(with_check) / statistics.median(without),
    }


def check_costs(repeat: int = 2000) -> dict[str, float]:
    """In this process: the fast check of a 20-item todowrite message as the
    stdio server reads it, next to the strict parse that names a lost key."""
    from mcp_types import jsonrpc_message_adapter

    from todoledger.core.jsonload import load_checked
    from todoledger.mcp.duplicates import may_have_lost

    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "todowrite", "arguments": {"todos": todos(20, 3)}},
    }
    line = json.dumps(message, separators=(",", ":"))
    params = jsonrpc_message_adapter.validate_json(line).params  # type: ignore[union-attr]
    assert not may_have_lost(line, params)

    def per_call(fn: Any) -> float:
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        return (time.perf_counter() - start) / repeat * 1e6

    return {
        "fast_check_us": per_call(lambda: may_have_lost(line, params)),
        "strict_parse_us": per_call(lambda: load_checked(line)),
        "sdk_parse_us": per_call(lambda: jsonrpc_message_adapter.validate_json(line)),
    }


async def start_once(params: StdioServerParameters) -> tuple[float, str]:
    start = time.perf_counter()
    async with Client(params) as client:
        listed = await client.list_tools()
        elapsed = time.perf_counter() - start
    text = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools])
    return elapsed, text


WIRE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def wire_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Spawn to the `tools/list` answer on the wire, as an agent (or doctor) speaks it:
    JSON-RPC lines, no SDK client to turn the answers into models."""
    start = time.perf_counter()
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(WIRE[0]) + "\n").encode())
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in WIRE[1:]).encode())
        proc.stdin.flush()
        answer = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        proc.stdin.close()
        proc.wait()
    if b'"tools"' not in answer:
        raise SystemExit(f"{argv[0]} gave no tools/list answer")
    return elapsed


# Where a start goes, in one process, step after step: the SDK's import, the
# SDK's own server made (MCPServer: logging, rich), and todoledger's beyond it
# (its modules, its tools, PlanTools). The interpreter's start is `python -c pass`.
PHASES = """
import json, time
t0 = time.perf_counter()
import mcp.server.mcpserver
t1 = time.perf_counter()
mcp.server.mcpserver.MCPServer("minimal")
t2 = time.perf_counter()
from todoledger.mcp.server import build_server
build_server()
t3 = time.perf_counter()
print(json.dumps({"sdk_import": t1 - t0, "sdk_server": t2 - t1, "ours": t3 - t2}), flush=True)
"""


def phases_once() -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", PHASES], capture_output=True, text=True, check=True)
    found: dict[str, float] = json.loads(out.stdout)
    return found


def python_once() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


async def startups(db: Path, minimal: Path, runs: int) -> tuple[dict[str, float], str]:
    ours = StdioServerParameters(command=TODOLEDGER, args=["mcp"], env={"TODOLEDGER_DB": str(db)})
    base = StdioServerParameters(command=sys.executable, args=[str(minimal)])
    keys = ("sdk_import", "sdk_server", "ours")
    samples: dict[str, list[float]] = {
        "wire todoledger": [],
        "wire minimal": [],
        "todoledger": [],
        "minimal": [],
        "python -c pass": [],
        **{k: [] for k in keys},
    }
    listed = ""
    await start_once(ours)  # page cache, .pyc files
    await start_once(base)
    phases_once()
    for _ in range(runs):  # alternate, so that machine noise hits all alike
        elapsed, listed = await start_once(ours)
        samples["todoledger"].append(elapsed)
        samples["minimal"].append((await start_once(base))[0])
        samples["wire todoledger"].append(wire_once([TODOLEDGER, "mcp"], {"TODOLEDGER_DB": str(db)}))
        samples["wire minimal"].append(wire_once([sys.executable, str(minimal)]))
        samples["python -c pass"].append(python_once())
        for key, value in phases_once().items():
            samples[key].append(value)
    medians = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    medians["ratio"] = medians["todoledger"] / medians["minimal"]
    medians["ratio_wire"] = medians["wire todoledger"] / medians["wire minimal"]
    medians["ratio_python"] = medians["todoledger"] / medians["python -c pass"]
    return medians, listed


def spread(values: list[float], unit: str = "x") -> str:
    return f"min {min(values):.2f}{unit}, median {statistics.median(values):.2f}{unit}, max {max(values):.2f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--no-peers", action="store_true", help="do not install or measure the peers")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON document too")
    args = parser.parse_args()
    calls, warmup, runs = (100, 10, 5) if args.quick else (500, 30, 15)

    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        work = Path(tmp)
        os.chdir(work)
        minimal = work / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        floor = work / "floor_server.py"
        floor.write_text(FLOOR_SERVER)
        rounds = anyio.run(round_trips, work, floor, calls, warmup)
        no_check = work / "no_check_server.py"
        no_check.write_text(NO_CHECK_SERVER)
        dup = anyio.run(detection, work / "checked.db", work / "unchecked.db", no_check, calls, warmup)
        start, listed = anyio.run(startups, work / "start.db", minimal, runs)
        peers = [] if args.no_peers else anyio.run(measure_peers, PEER_CACHE)

    tokens = (len(listed) + 3) // 4
    ok_start = start["ratio_wire"] <= 1.1
    print(
        f"1. todowrite, 20 items, SDK client over stdio, warm: {ROUNDS} rounds of {calls} calls to each server, alternated:"
    )
    p99_ratios, median_ratios, shares, p99_shares = [], [], [], []
    for n, r in enumerate(rounds, 1):
        p99_ratio = r["ours p99"] / r["no-op p99"]
        median_ratio = r["ours median"] / r["no-op median"]
        share = max(0.0, r["ours median"] - r["no fsync median"]) / r["ours median"]
        p99_share = max(0.0, r["ours p99"] - r["no fsync p99"]) / r["ours p99"]
        p99_ratios.append(p99_ratio)
        median_ratios.append(median_ratio)
        shares.append(share)
        p99_shares.append(p99_share)
        print(
            f"   round {n}: ours median {r['ours median']:.2f} ms, p99 {r['ours p99']:.2f} ms (max {r['ours max']:.1f});"
            f" no-op median {r['no-op median']:.2f} ms, p99 {r['no-op p99']:.2f} ms;"
            f" ours without fsync median {r['no fsync median']:.2f} ms, p99 {r['no fsync p99']:.2f} ms;"
            f" tools/list {r['tools_list_median_ms']:.2f} ms"
        )
        print(
            f"            p99 ours / no-op {p99_ratio:.2f}x (target <= 2.5x: {'ok' if p99_ratio <= 2.5 else 'MISSED'}),"
            f" median {median_ratio:.2f}x (target <= 1.75x: {'ok' if median_ratio <= 1.75 else 'MISSED'});"
            f" the fsync's share of ours: {share:.0%} of the median, {p99_share:.0%} of the p99"
        )
    print(f"   p99 ours / no-op: {spread(p99_ratios)}; medians: {spread(median_ratios)}")
    print(
        f"   the fsync's share of ours: median {statistics.median(shares):.0%} (min {min(shares):.0%}, max {max(shares):.0%}),"
        f" of the p99 {statistics.median(p99_shares):.0%} (min {min(p99_shares):.0%}, max {max(p99_shares):.0%})"
    )
    ok_write = max(p99_ratios) <= 2.5 and max(median_ratios) <= 1.75
    print(f"2. start-up until tools/list answers (median of {runs}, alternated):")
    print(
        f"   on the wire (JSON-RPC lines, as the agents and doctor speak it): todoledger mcp "
        f"{start['wire todoledger']:.0f} ms, one-tool server {start['wire minimal']:.0f} ms: "
        f"{start['ratio_wire']:.2f}x (target <= 1.1x: {'ok' if ok_start else 'MISSED'})"
    )
    print(
        f"   through the SDK's client (which also validates the answers into its models: five tools' "
        f"schemas here, one there): {start['todoledger']:.0f} ms vs {start['minimal']:.0f} ms, {start['ratio']:.2f}x"
    )
    print(
        f"   python -c pass   {start['python -c pass']:.0f} ms: todoledger mcp is "
        f"{start['wire todoledger'] / start['python -c pass']:.1f}x it"
    )
    steps = start["python -c pass"] + start["sdk_import"] + start["sdk_server"] + start["ours"]
    rest = start["wire todoledger"] - steps
    print("   where it goes (medians; the steps measured one after another in one process):")
    print(f"     the interpreter              {start['python -c pass']:5.0f} ms (python -c pass)")
    print(f"     the SDK's import             {start['sdk_import']:5.0f} ms")
    print(
        f"     the SDK's server made        {start['sdk_server']:5.0f} ms (MCPServer's own start: logging, rich)"
    )
    print(f"     todoledger's beyond that     {start['ours']:5.0f} ms (its modules, its tools, PlanTools)")
    # Not a measured step: the wire figure less the sum of the steps, each a median of its own
    # runs in its own process, so it can come out negative (issue 30); labelled as derived.
    print(
        f"     derived, not measured: wire start less the steps above {rest:5.0f} ms"
        " (medians of separate runs: a difference, not a step; it can be negative)"
    )
    print("3. token footprint of the default tools (tools/list JSON, characters / 4), each measured here:")
    from todoledger.mcp.tools import TOOLS

    print(f"   {'todoledger':<34} {len(TOOLS):>3} tools {tokens:>7,} tokens")
    if args.no_peers:
        print("   peers: not measured (--no-peers)")
    for peer in peers:
        if peer.skipped:
            print(f"   {peer.name:<34} skipped: {peer.skipped}")
        else:
            print(
                f"   {peer.name:<34} {peer.tools:>3} tools {peer.tokens:>7,} tokens"
                f" ({peer.tokens / tokens:.1f}x ours; {peer.how})"
            )
    costs = check_costs()
    ok_dup = dup["ratio"] <= 1.1
    print(f"4. duplicate-key detection, todowrite of 20 items over stdio ({calls} calls each, alternated):")
    print(
        f"   with it {dup['with_ms']:.2f} ms, without it {dup['without_ms']:.2f} ms:"
        f" {dup['ratio']:.3f}x (target <= 1.1: {'ok' if ok_dup else 'MISSED'})"
    )
    print(
        f"   in process, per call: the fast check {costs['fast_check_us']:.1f} us; the strict parse it"
        f" spares {costs['strict_parse_us']:.1f} us; the SDK's own parse {costs['sdk_parse_us']:.1f} us"
    )
    if args.json:
        print(
            json.dumps(
                {"round_trips": rounds, "startup_ms": start, "tokens": tokens, "duplicates": dup | costs}
            )
        )
    if not (ok_write and ok_start and tokens <= 1500 and ok_dup):
        sys.exit(1)


if __name__ == "__main__":
    main()
