"""The seeds' quoted todo calls (todoledger.demo.CALLS: msgs 2871, 4329, 4350,
4950 and 6000, as the seeds print them), replayed in order over the MCP
server (stdio and HTTP, raw JSON-RPC: the texts go on the wire as the agent's
model wrote them) give the same refusals, warnings, drops and notices as the
same calls through the command line."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.mcp_wire import HttpWire, StdioWire, Wire, text_of
from tests.test_mcp import TOKEN, free_port, wait_for_port
from todoledger.demo import CALLS

_ID = re.compile(r"\(([a-z0-9]{6})\)")


def same_ids(texts: list[str]) -> list[str]:
    """Notices with each ledger's own item ids taken out (the two ledgers mint their own)."""
    return [_ID.sub("(ID)", t) for t in texts]


def over_cli(db: Path, payload: str, plan: str) -> dict[str, Any]:
    proc = subprocess.run(
        [todoledger_bin(), "write", "--dialect", "opencode", "--plan", plan, "--json", "-"],
        input=payload.encode(),
        capture_output=True,
        env=subprocess_env(db),
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        return {"refused": proc.stderr.decode().strip().removeprefix("Error: ")}
    reply = json.loads(proc.stdout)
    return {
        "warnings": [f"{w['level']}: {w['where']}: {w['message']}" for w in reply["warnings"]],
        "notices": same_ids(reply["notices"]),
        "dropped": sorted(c["content"] for c in reply["changes"] if c["kind"] == "dropped"),
    }


def over_mcp(wire: Wire, payload: str, plan: str) -> dict[str, Any]:
    arguments = payload[:-1] + f',"plan":{json.dumps(plan)}}}'  # the text as sent, the plan beside it
    result = wire.call("todowrite", arguments)
    if result.get("isError"):
        return {"refused": text_of(result)}
    reply = json.loads(text_of(result))
    return {
        "warnings": reply.get("warnings", []),
        "notices": same_ids(reply.get("notices", [])),
        "dropped": sorted(d["content"] for d in reply.get("dropped", [])),
    }


@pytest.fixture
def serve(ledger_env: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--token", TOKEN],
        env=subprocess_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_port(proc, port)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def test_the_seeds_calls_in_order_get_the_same_answers_over_mcp_as_over_the_cli(
    ledger_env: Path, serve: str, tmp_path: Path
) -> None:
    cli_db = tmp_path / "cli.db"
    expected = [over_cli(cli_db, call.payload, call.plan) for call in CALLS]
    # What the CLI says, for the record: seed 003's call refused for its repeated key, the
    # truncated texts warned about, and the lists that leave items out name each drop.
    by_msg = {call.msg: answer for call, answer in zip(CALLS, expected, strict=True)}
    assert by_msg[4329]["refused"].startswith('rejected: todos[3]: duplicate key "priority"')
    assert by_msg[2871]["warnings"] == [
        "warning: todos[3].content: content ends with an ellipsis; it looks truncated"
    ]
    assert "Wait for vLLM server to finish loading" in by_msg[4350]["dropped"]
    stdio = StdioWire(ledger_env, "opencode")
    session = HttpWire(serve, TOKEN, "opencode")
    modern = HttpWire(serve, TOKEN, "opencode", modern=True)
    try:
        for route, wire in (("stdio", stdio), ("http", session)):
            got = [over_mcp(wire, call.payload, f"{route}-{call.plan}") for call in CALLS]
            assert got == expected, route
        # Sessionless (2026): each request is its own writer, so no list drops another's items;
        # the refusal and the warnings are the same.
        got = [over_mcp(modern, call.payload, f"modern-{call.plan}") for call in CALLS]
        assert [g.get("refused") for g in got] == [e.get("refused") for e in expected]
        assert [g.get("warnings") for g in got] == [e.get("warnings") for e in expected]
    finally:
        stdio.close()
        session.close()
        modern.close()
