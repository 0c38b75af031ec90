"""`todoledger mcp` answers its start and the agents' hot tools before it
imports the MCP SDK (src/todoledger/mcp/lean.py), and hands anything else on
to the SDK path. The SDK path is the reference: the same scripted session, in
both protocol eras, gets the same replies from both paths (a refused
duplicate-key write, a leased item, an oversize line and bad JSON included);
the snapshot the lean path answers from is what the SDK path says now; and with
the SDK made unimportable the start and the hot tools still work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, with_test_clock
from todoledger.mcp.snapshot import generate, load, modern_meta
from todoledger.mcp.tools import TOOLS

LEGACY_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "conformance", "version": "1"},
}
CLIENT = {"name": "conformance", "version": "1"}
# As the real Claude Code (2.1.332) opens a modern session: a list-change subscription right
# after discover. Answered on the SDK path, it kept Claude Code waiting for the SDK's import.
LISTEN = {
    "notifications": {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
}
SESSION = re.compile(r"mcp:conformance:[0-9a-f]{8}")
# What importing the SDK would bring: raised on import in the `unimportable` run.
SDK_MODULES = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "starlette", "uvicorn", "httpx")
UNIMPORTABLE = f"""
import sys
class NoSDK:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {SDK_MODULES!r}:
            raise ImportError("the SDK is unimportable in this test: " + name)
        return None
sys.meta_path.insert(0, NoSDK())
from todoledger.cli.entry import main
main(["mcp"])
"""


class Client:
    """Raw JSON-RPC lines to one `todoledger mcp` process, read reply by reply."""

    def __init__(
        self, db: Path | str, era: str, *, path: str | None, command: list[str] | None = None
    ) -> None:
        with_test_clock(db)  # TODOLEDGER_NOW fixes only a test-clock ledger's time (lease expiries alike)
        env = subprocess_env(db, TODOLEDGER_ID_SEED="conformance", TODOLEDGER_NOW="2026-12-01T10:00:00Z")
        env.pop("TODOLEDGER_PLAN", None)
        if path is not None:
            env["TODOLEDGER_MCP_PATH"] = path
        self.era = era
        self.proc = subprocess.Popen(
            command or [sys.executable, "-c", "from todoledger.cli.entry import main; main()", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.n = 0

    def send(self, text: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, self.proc.stderr.read().decode() if self.proc.stderr else ""
        found: dict[str, Any] = json.loads(SESSION.sub("mcp:conformance:SESSION", reply.decode()))
        return found

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = modern_meta(CLIENT)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params:
            message["params"] = params
        return self.send(json.dumps(message))

    def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def start(self) -> list[dict[str, Any]]:
        if self.era == "legacy":
            out = [self.request("initialize", LEGACY_INIT)]
            self.notify("notifications/initialized")
        else:  # the ack of the listen comes back in its place; a hand-on replays the listen
            out = [self.request("server/discover"), self.request("subscriptions/listen", LISTEN)]
        return out + [self.request(m) for m in ("tools/list", "prompts/list", "resources/list")]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


def listed(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools of the session's tools/list reply."""
    tools: list[dict[str, Any]] = next(
        r["result"]["tools"] for r in replies if "tools" in r.get("result", {})
    )
    return tools


def structured(reply: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = reply["result"].get("structuredContent") or {}
    return found


def script(c: Client) -> list[dict[str, Any]]:
    """One agent's session, with what goes wrong in real ones."""
    out = c.start()
    todos = [
        {"content": "Build the drafter", "status": "in_progress"},
        {"content": "Benchmark it", "status": "pending"},
        {"content": "Write it up", "status": "pending"},
    ]
    out.append(c.call("todowrite", {"todos": todos}))
    ids = structured(out[-1])["ids"]
    c.n += 1  # a write whose key repeats: refused whole, as the CLI refuses it
    out.append(
        c.send(
            f'{{"jsonrpc":"2.0","id":{c.n},"method":"tools/call","params":{{"name":"todowrite","arguments":'
            '{"todos":[{"content":"Benchmark it","status":"pending","status":"completed"}]}'
            + (f',"_meta":{json.dumps(modern_meta(CLIENT))}' if c.era == "modern" else "")
            + "}}"
        )
    )
    out.append(c.call("plan_next", {"claim": True, "lease_seconds": 600}))  # a leased item
    out.append(c.call("plan_update", {"id": ids[1], "status": "completed", "writer": "someone-else"}))
    out.append(c.call("plan_update", {"id": ids[0], "status": "completed", "evidence": "tests pass"}))
    out.append(c.call("todoread", {}))
    out.append(c.call("todoread", {"all": True}))
    out.append(c.call("plan_next", {}))
    out.append(c.call("plan_update", {"id": "nope", "status": "completed"}))
    out.append(
        c.call("todowrite", {"todos": [{"content": "x" * (3 << 20), "status": "pending"}]})
    )  # oversize
    out.append(c.send('{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"todo'))  # bad JSON
    out.append(c.request("tools/list"))  # after a hand-on, the SDK path's
    out.append(c.call("todoread", {}))
    out.append(c.call("plan_verify", {"id": ids[0]}))  # a tool the lean path leaves to the SDK
    assert c.close() == 0
    return out


@pytest.mark.sqlite_only  # each path on a fresh ledger of its own, the same ids drawn (TODOLEDGER_ID_SEED)
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_lean_path_answers_as_the_sdk_path_does(tmp_path: Path, era: str) -> None:
    replies = {
        path: script(Client(tmp_path / f"{path or 'lean'}.db", era, path=path)) for path in ("sdk", None)
    }
    sdk, lean = replies["sdk"], replies[None]
    assert len(sdk) == len(lean)
    for want, got in zip(sdk, lean, strict=True):
        assert got == want
    assert [t["name"] for t in listed(lean)] == list(TOOLS)
    if era == "modern":
        assert lean[1]["method"] == "notifications/subscriptions/acknowledged"
        assert lean[1]["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 2}
    assert "error" in lean[-4]  # the bad JSON line: the SDK path's own parse error


def test_the_snapshot_is_what_the_sdk_path_says() -> None:
    assert generate() == load(), "run: .venv/bin/python -m todoledger.mcp.snapshot --write"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_start_and_hot_tools_without_the_sdk(ledger_env: Path | str, era: str) -> None:
    c = Client(ledger_env, era, path=None, command=[sys.executable, "-c", UNIMPORTABLE])
    started = c.start()
    assert [t["name"] for t in listed(started)] == list(TOOLS)
    wrote = structured(c.call("todowrite", {"todos": [{"content": "Fix the loader", "status": "pending"}]}))
    assert wrote["changes"] == {"added": 1}
    claimed = structured(c.call("plan_next", {"claim": True}))
    item = wrote["ids"][0]
    assert json.dumps(claimed).count(item) >= 1
    done = c.call("plan_update", {"id": item, "status": "completed", "evidence": "loader test passes"})
    assert done["result"]["isError"] is False
    read = structured(c.call("todoread", {}))
    assert read["counts"] == {"completed": 1}
    assert c.close() == 0
    assert c.proc.stderr is not None
    assert b"Traceback" not in c.proc.stderr.read()
