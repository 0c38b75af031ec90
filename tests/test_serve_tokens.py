"""`serve --tokens FILE`: each bearer token maps to a person or an agent, and
every write through the server carries that identity (a real uvicorn server
in a subprocess; on both backends, tests/conftest.py PG_MODULES)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from todoledger import Ledger

from .conftest import subprocess_env, todoledger_bin
from .test_mcp import call, free_port, http

ANN = "ann-token-0123456789abcdef"
BOT = "bot-token-0123456789abcdef"


@pytest.fixture
def team_server(ledger_env: Path | str, tmp_path: Path) -> Iterator[str]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# who may write\n{ANN} ann\n\n{BOT} agent:ci\n")
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=subprocess_env(ledger_env),
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_every_write_carries_the_identity_of_its_token(team_server: str, ledger_env: Path | str) -> None:
    async def main() -> None:
        async with http(team_server, name="claude-code", token=ANN) as ann:
            await call(ann, "todowrite", {"todos": [{"content": "Review the patch", "status": "pending"}]})
        async with http(team_server, name="codex", token=BOT) as bot:
            # A self-declared writer cannot shed the token's identity.
            await call(bot, "plan_next", {"claim": True, "writer": "ann"})

    anyio.run(main)
    with Ledger(str(ledger_env)) as lg:
        writers = [e["writer"] for e in lg.history()]
    assert writers[0].startswith("ann@mcp:claude-code:")
    assert writers[1:] == ["agent:ci@ann", "agent:ci@ann"]  # the claim's status and its `claimed` note


def test_an_unknown_token_or_a_forged_identity_header_gets_nothing(
    team_server: str, ledger_env: Path | str
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream", "x-todoledger-identity": "ann"}
    refused = httpx2.post(
        team_server, json=body, headers=accept | {"Authorization": "Bearer not-a-known-token"}
    )
    assert refused.status_code == 401 and "wrong bearer token" in refused.json()["error"]
    assert "not-a-known-token" not in refused.text


def test_a_bad_tokens_file_is_one_line_without_the_token(tmp_path: Path, ledger_env: Path | str) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("short-secret ann\n")
    done = subprocess.run(
        [todoledger_bin(), "serve", "--port", str(free_port()), "--tokens", str(tokens)],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "at least 16 characters" in done.stderr and "short-secret" not in done.stderr
