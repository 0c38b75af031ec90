"""`todoledger mcp` over raw pipes and files (src/todoledger/mcp/stdio.py):
JSON-RPC lines written by hand to a real server process, no SDK client."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.test_mcp import mcp_process
from tests.test_serve_sessions import initialize
from todoledger.ledger import Ledger

HANDSHAKE = [
    initialize("raw"),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def answers(out: bytes) -> dict[int, Any]:
    found = {}
    for text in out.decode().splitlines():
        message = json.loads(text)  # nothing but JSON-RPC on the wire
        if "id" in message:
            found[message["id"]] = message
    return found


def test_a_list_longer_than_asyncios_64_kib_line_arrives_whole(ledger_env: Path) -> None:
    todos = [{"content": f"Shard {n:03d}: " + "x" * 300, "status": "pending"} for n in range(400)]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "todowrite", "arguments": {"todos": todos}},
    }
    assert len(line(call)) > 2 * 65536
    proc = mcp_process(ledger_env)
    assert proc.stdin is not None and proc.stdout is not None
    for message in HANDSHAKE:
        proc.stdin.write(line(message))
    proc.stdin.write(line(call))
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())  # the handshake's answer
    assert reply["id"] == 1
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 2 and not reply["result"].get("isError"), reply
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    with Ledger(ledger_env) as lg:
        assert len(lg.items()) == 400


@pytest.mark.parametrize("path", ["sdk", "lean"])
def test_the_pipe_handed_back_blocks_again(
    ledger_env: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's stdin is a pipe whose read end this test keeps too: on the SDK path
    # asyncio set the shared description non-blocking, and the server must undo that on
    # exit; the lean path (mcp/lean.py) reads it as it is and never changes it.
    if path == "sdk":
        monkeypatch.setenv("TODOLEDGER_MCP_PATH", "sdk")
    read_end, write_end = os.pipe()
    keep = os.dup(read_end)
    try:
        proc = mcp_process(ledger_env, stdin=read_end)
        os.close(read_end)
        with os.fdopen(write_end, "wb") as wire:
            for message in HANDSHAKE:
                wire.write(line(message))
            wire.flush()
            assert proc.stdout is not None
            assert json.loads(proc.stdout.readline())["id"] == 1
            assert os.get_blocking(keep) is (
                path == "lean"
            )  # while it serves: the SDK path's loop's own pipe
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert os.get_blocking(keep)
    finally:
        os.close(keep)


STRAY = """
import os, sys, anyio
from todoledger.mcp.stdio import serve_stdio

async def main():
    async with serve_stdio() as (read_stream, write_stream):
        print("STRAY-PRINT", flush=True)
        os.write(1, b"STRAY-FD-1\\n")
        await write_stream.aclose()  # as the server does when the client leaves
        await read_stream.aclose()
    print("AFTER", flush=True)

anyio.run(main)
"""


def test_stray_output_while_serving_misses_the_wire() -> None:
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", STRAY], input=b"", capture_output=True, timeout=60, check=True
    )
    assert proc.stdout == b"AFTER\n"  # fd 1 is the wire again once serving ends
    assert b"STRAY-PRINT" in proc.stderr and b"STRAY-FD-1" in proc.stderr


def test_requests_from_a_file_are_served_by_the_sdks_own_stdio(ledger_env: Path, tmp_path: Path) -> None:
    # A regular file cannot be read by the event loop: the SDK's threaded stdio serves it.
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        b"".join(line(m) for m in [*HANDSHAKE, {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
    )
    with requests.open("rb") as stdin:
        proc = mcp_process(ledger_env, stdin=stdin.fileno())
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    got = answers(out)
    assert got[1]["result"]["serverInfo"]["name"] == "todoledger"


def test_a_client_that_closes_stdin_at_once_still_hears_every_answer(ledger_env: Path) -> None:
    # `printf ... | todoledger mcp`: the SDK alone ends the session at end of input and
    # drops the answers in flight, so the client would never hear that its write landed.
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "todowrite", "arguments": {"todos": [{"content": "A", "status": "completed"}]}},
    }
    proc = mcp_process(ledger_env)
    out, err = proc.communicate(b"".join(line(m) for m in [*HANDSHAKE, call]), timeout=60)
    assert proc.returncode == 0, err
    got = answers(out)
    assert set(got) == {1, 2}
    assert json.loads(got[2]["result"]["content"][0]["text"])["todos"][0]["status"] == "completed"
    with Ledger(ledger_env) as lg:
        assert [i["status"] for i in lg.items()] == ["completed"]


@pytest.mark.parametrize("args", [["--plan", "side"], ["--plan=side"], []])
def test_the_servers_fast_start_keeps_the_plan_option(ledger_env: Path, args: list[str]) -> None:
    """`todoledger mcp` starts the server without the command group; `--plan`
    (and TODOLEDGER_PLAN) still name the default plan, and anything else goes to click."""
    from tests.conftest import subprocess_env, todoledger_bin

    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "todowrite", "arguments": {"todos": [{"content": "A", "status": "pending"}]}},
    }
    env = {**subprocess_env(ledger_env), **({} if args else {"TODOLEDGER_PLAN": "side"})}
    proc = subprocess.run(
        [todoledger_bin(), "mcp", *args],
        input=b"".join(line(m) for m in [*HANDSHAKE, call]),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    with Ledger(ledger_env) as lg:
        assert [i["content"] for i in lg.items("side")] == ["A"]
    wrong = subprocess.run([todoledger_bin(), "mcp", "--plna", "x"], capture_output=True, env=env, timeout=60)
    assert wrong.returncode == 2 and b"No such option '--plna'" in wrong.stderr


DEEP = b"[" * 5000 + b"\n"
# A lone surrogate, as the JSON escape an agent's client may send: the SDK's parser refuses it.
SURROGATE = (
    b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"todowrite",'
    b'"arguments":{"todos":[{"content":"Fix \\ud800","status":"pending"}]}}}\n'
)
PING = {"jsonrpc": "2.0", "id": 4, "method": "ping"}


@pytest.mark.parametrize(
    ("bad", "ident", "why"), [(DEEP, None, "nested too deeply"), (SURROGATE, 3, "U+D800")]
)
def test_a_line_the_parser_refuses_gets_an_error_reply_and_the_server_goes_on(
    ledger_env: Path, bad: bytes, ident: int | None, why: str
) -> None:
    # Before: 5,000 `[` raised RecursionError and the server exited; the lone
    # surrogate got no reply at all, and the client waited for ever.
    proc = mcp_process(ledger_env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line(m) for m in HANDSHAKE))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    proc.stdin.write(bad)
    proc.stdin.flush()
    refused = json.loads(proc.stdout.readline())
    assert refused["id"] == ident and refused["error"]["code"] == -32700, refused
    assert why in refused["error"]["message"] and "\n" not in refused["error"]["message"]
    proc.stdin.write(line(PING))  # still serving
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    with Ledger(ledger_env) as lg:
        assert lg.items() == []


def test_refused_lines_from_a_file_are_answered_too(ledger_env: Path, tmp_path: Path) -> None:
    # The SDK's threaded stdio (a regular file on stdin) screens lines the same way.
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b"".join(line(m) for m in HANDSHAKE) + DEEP + SURROGATE + line(PING))
    with requests.open("rb") as stdin:
        proc = mcp_process(ledger_env, stdin=stdin.fileno())
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    replies = [json.loads(text) for text in out.decode().splitlines()]
    assert sorted(r["id"] for r in replies if "result" in r) == [1, 4]
    assert {r["id"] for r in replies if "error" in r} == {None, 3} and len(replies) == 4
    with Ledger(ledger_env) as lg:
        assert lg.items() == []
