"""Duplicate keys in tool arguments over MCP (mcp/duplicates.py): seed 003's
call, raw JSON-RPC to real server processes over stdio (pipes and a regular
file) and HTTP (a session, and the sessionless 2026 revision), refused with
the CLI's own line; the fast check against what the SDK's parser keeps."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import JSONRPCRequest, jsonrpc_message_adapter

from tests.conftest import subprocess_env, todoledger_bin
from tests.mcp_wire import (
    INITIALIZED,
    HttpWire,
    Wire,
    call_line,
    cli_refusal,
    data_of,
    initialize,
    stdio_wire,
    text_of,
)
from tests.test_mcp import TOKEN, free_port, wait_for_port
from todoledger import Ledger
from todoledger.demo import CALLS
from todoledger.mcp.duplicates import may_have_lost

# Seed 003, msg 4329, exactly as the seed prints it: the fourth item's "priority" twice, no status.
SEED_003 = next(c.payload for c in CALLS if c.seed == "003")
DUP = '"priority":"pending","priority":"high"'
# The same call with a status: before, the SDK's parse kept "high" and the call went through.
WITH_STATUS = SEED_003.replace(DUP, '"status":"pending",' + DUP)


def items(db: Path | str) -> list[dict[str, Any]]:
    with Ledger(db) as lg:
        return lg.items() if lg.exists else []


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


def routes(db: Path | str, url: str) -> Iterator[tuple[str, Wire]]:
    with stdio_wire(db) as wire:
        yield "stdio", wire
    session = HttpWire(url, TOKEN)
    yield "http", session
    session.close()
    modern = HttpWire(url, TOKEN, modern=True)
    yield "http 2026", modern
    modern.close()


def test_seed_003s_call_is_refused_on_every_route_with_the_clis_line(
    ledger_env: Path, serve: str, tmp_path: Path
) -> None:
    cli_db = tmp_path / "cli.db"
    expected = cli_refusal(cli_db, SEED_003)
    assert expected == (
        'rejected: todos[3]: duplicate key "priority" (values "pending", "high"); the first was lost'
        " (and 1 more: `todoledger lint` lists them)"
    )
    with_status = cli_refusal(cli_db, WITH_STATUS)
    assert (
        with_status
        == 'rejected: todos[3]: duplicate key "priority" (values "pending", "high"); the first was lost'
    )
    for route, wire in routes(ledger_env, serve):
        refused = wire.call("todowrite", SEED_003)
        assert refused.get("isError") and text_of(refused) == expected, (route, refused)
        # Before: accepted silently, the "pending" in the priority slot gone.
        refused = wire.call("todowrite", WITH_STATUS)
        assert refused.get("isError") and text_of(refused) == with_status, (route, refused)
    assert items(ledger_env) == []  # nothing of either call was applied


def test_every_tool_refuses_a_repeated_key_and_the_envelope_is_not_its_business(
    ledger_env: Path, serve: str
) -> None:
    for route, wire in routes(ledger_env, serve):
        wrote = data_of(
            wire.call("todowrite", {"todos": [{"content": f"Task on {route}", "status": "pending"}]})
        )
        item = wrote["ids"][0]
        refused = wire.call("plan_update", f'{{"id":"{item}","status":"completed","status":"pending"}}')
        assert text_of(refused) == (
            'rejected: $: duplicate key "status" (values "completed", "pending"); the first was lost'
        ), route
        refused = wire.call("todoread", '{"all":true,"all":false}')
        assert 'duplicate key "all"' in text_of(refused), route
        # A key repeated in the request's _meta is the client library's, not the agent's arguments.
        read = wire.call("todoread", "{}", meta='{"progressToken":1,"progressToken":2}')
        assert not read.get("isError"), (route, read)
        # Spaced JSON is read strictly too (the fast count of `":` would miss `"k" :`).
        spaced = f'{{ "id" : "{item}", "status" : "in_progress" , "status" : "pending" }}'
        refused = wire.call("plan_update", spaced)
        assert 'duplicate key "status" (values "in_progress", "pending")' in text_of(refused), route
    assert {it["status"] for it in items(ledger_env)} == {"pending"}


def test_a_regular_file_on_stdin_is_checked_too(ledger_env: Path, tmp_path: Path) -> None:
    # A file cannot be read by the event loop: the SDK's threads read it, through our check.
    requests = tmp_path / "requests.jsonl"
    lines = [initialize("file"), INITIALIZED, call_line(1, "todowrite", SEED_003)]
    requests.write_text("".join(line + "\n" for line in lines))
    with requests.open("rb") as stdin:
        proc = subprocess.run(
            [todoledger_bin(), "mcp"],
            stdin=stdin,
            capture_output=True,
            env=subprocess_env(ledger_env),
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    answers = {m["id"]: m for m in map(json.loads, proc.stdout.decode().splitlines()) if "id" in m}
    assert answers[1]["result"]["isError"]
    assert 'duplicate key "priority" (values "pending", "high")' in answers[1]["result"]["content"][0]["text"]
    assert items(ledger_env) == []


def _as_sent(arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> str:
    """A tools/call as the SDK's client writes it on the wire."""
    params: dict[str, Any] = {"name": "todowrite", "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    request = JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params=params)
    return request.model_dump_json(by_alias=True, exclude_unset=True)


def _kept(line: str | bytes) -> Any:
    parsed = jsonrpc_message_adapter.validate_json(line, by_name=False)
    assert isinstance(parsed, JSONRPCRequest) and parsed.params is not None
    return parsed.params


def test_the_fast_check_parses_again_only_when_a_key_may_be_lost() -> None:
    todos = [
        {"content": f"Benchmark with {n} draft tokens", "status": "pending", "priority": "high"}
        for n in (16, 10, 5)
    ]
    common = _as_sent({"todos": todos}, {"progressToken": 7})
    assert not may_have_lost(common, _kept(common))  # the common call: parsed once, by the SDK
    assert not may_have_lost(common.encode(), _kept(common))  # an HTTP body
    # A key lost to the parse is always seen, wherever it sits.
    for lost in (
        common.replace('"status":"pending"', '"status":"completed","status":"pending"', 1),
        common.replace('{"todos":', '{"todos":[],"todos":', 1),
        common.replace('"progressToken":7', '"progressToken":7,"progressToken":8'),
        common.replace('"status":"pending"', '"status" :"completed","status":"pending"', 1),
    ):
        assert may_have_lost(lost, _kept(lost)), lost
    # A string holding `":` or a quote before a space only costs the strict parse.
    quoted = _as_sent({"todos": [{"content": 'Set "key": 1 in the config', "status": "pending"}]})
    assert may_have_lost(quoted, _kept(quoted))
