"""The peers' MCP servers, installed and asked for `tools/list` (bench_mcp.py):
Task Master from npm, beads-mcp from PyPI. Each goes into a cache folder
of its own version, so a second run does not download it again; a peer
that cannot be installed or started is skipped with the reason, and no
figure stands in for it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

PEER_CACHE = Path(os.environ.get("TODOLEDGER_BENCH_CACHE") or Path.home() / ".cache" / "todoledger-bench")
# The versions measured; another with TODOLEDGER_BENCH_TASKMASTER / TODOLEDGER_BENCH_BEADS.
TASKMASTER = os.environ.get("TODOLEDGER_BENCH_TASKMASTER", "0.43.1")
BEADS = os.environ.get("TODOLEDGER_BENCH_BEADS", "1.3.2")
INSTALL_SECONDS = 600
START_SECONDS = 90


@dataclass
class Peer:
    name: str
    tools: int = 0
    tokens: int = 0
    how: str = ""
    skipped: str = ""


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    """None when `cmd` succeeded, else why not (its last line of output)."""
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cmd[0]}: {exc}"
    if done.returncode == 0:
        return None
    tail = (done.stderr or done.stdout).strip().splitlines()
    return f"`{' '.join(cmd[:3])} ...` exited {done.returncode}: {tail[-1] if tail else 'no output'}"


def install_taskmaster(cache: Path) -> tuple[Path | None, str]:
    """Task Master's MCP server from npm: its command, and how it came (or why not)."""
    folder = cache / f"task-master-ai-{TASKMASTER}"
    command = folder / "node_modules" / ".bin" / "task-master-ai"
    if command.exists():
        return command, f"task-master-ai {TASKMASTER} from npm, installed in an earlier run ({folder})"
    if shutil.which("npm") is None:
        return None, "npm not found"
    folder.mkdir(parents=True, exist_ok=True)
    why = _run(
        ["npm", "install", "--prefix", str(folder), f"task-master-ai@{TASKMASTER}", "--no-audit", "--no-fund"]
    )
    if why or not command.exists():
        shutil.rmtree(folder, ignore_errors=True)
        return None, why or "npm installed no task-master-ai command"
    return command, f"task-master-ai {TASKMASTER} installed from npm now ({folder})"


def install_beads(cache: Path) -> tuple[Path | None, str]:
    """beads-mcp from PyPI, in a virtual environment of its own."""
    folder = cache / f"beads-mcp-{BEADS}"
    command = folder / "bin" / "beads-mcp"
    if command.exists():
        return command, f"beads-mcp {BEADS} from PyPI, installed in an earlier run ({folder})"
    why = _run([sys.executable, "-m", "venv", str(folder)]) or _run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", f"beads-mcp=={BEADS}"]
    )
    if why or not command.exists():
        shutil.rmtree(folder, ignore_errors=True)
        return None, why or "pip installed no beads-mcp command"
    return command, f"beads-mcp {BEADS} installed from PyPI now ({folder})"


async def listed_tools(command: Path, env: dict[str, str], cwd: Path) -> tuple[int, int]:
    """(tools, tokens) of the server's `tools/list`, counted as ours is (JSON characters / 4)."""
    # The peer's own log (banners, validation noise) goes to a file beside it, not into the benchmark's output.
    log = cwd / f"{command.name}.log"
    params = StdioServerParameters(
        command="/bin/sh", args=["-c", 'exec "$0" 2>>"$1"', str(command), str(log)], env=env, cwd=str(cwd)
    )
    with anyio.fail_after(START_SECONDS):
        async with Client(params) as client:
            listed = await client.list_tools()
    text = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools])
    return len(listed.tools), (len(text) + 3) // 4


async def measure_peers(cache: Path) -> list[Peer]:
    out: list[Peer] = []
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        project = Path(tmp)
        command, how = install_taskmaster(cache)
        for label, extra in (
            ("Task Master (its default tools)", {}),
            ("Task Master (TASK_MASTER_TOOLS=all)", {"TASK_MASTER_TOOLS": "all"}),
        ):
            out.append(await _one(label, command, how, base | extra, project))
        command, how = install_beads(cache)
        out.append(await _one("beads-mcp", command, how, base, project))
    return out


async def _one(name: str, command: Path | None, how: str, env: dict[str, str], cwd: Path) -> Peer:
    if command is None:
        return Peer(name, skipped=f"could not be installed: {how}")
    try:
        tools, tokens = await listed_tools(command, env, cwd)
    except Exception as exc:  # a peer that does not start is skipped, with its reason
        return Peer(
            name, skipped=f"installed, but its server did not answer tools/list: {type(exc).__name__}: {exc}"
        )
    return Peer(name, tools, tokens, how)
