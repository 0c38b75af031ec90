"""`todoledger serve` under a flood of `initialize` requests: one
client cannot fill the session table, others still get in, idle sessions
expire, and SIGTERM ends the server promptly."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.conftest import person_env, todoledger_bin
from tests.test_mcp import TOKEN, call, free_port, http, wait_for_port
from todoledger.mcp.sessions import SESSIONS_PER_CLIENT

HEADERS = {"accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}


def initialize(name: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": name, "version": "1"},
        },
    }


@pytest.fixture
def serving(ledger_env: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--token", TOKEN],
        env=person_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(proc, port)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_flood_of_initialize_leaves_room_for_other_clients_and_sigterm_ends_it(
    serving: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, proc = serving
    flood = 3 * SESSIONS_PER_CLIENT
    with httpx2.Client(timeout=30) as hc:
        statuses = Counter(
            hc.post(url, json=initialize("looping-agent"), headers=HEADERS).status_code for _ in range(flood)
        )
        refused = hc.post(url, json=initialize("looping-agent"), headers=HEADERS)
    # The looping client holds its share of sessions, no more; the rest is refused with a reason.
    assert statuses == {200: SESSIONS_PER_CLIENT, 429: flood - SESSIONS_PER_CLIENT}
    assert refused.status_code == 429 and "open sessions" in refused.json()["error"]

    async def newcomer() -> None:
        async with http(url, name="another-agent") as client:
            assert (await call(client, "todoread", {}))["counts"] == {}
        async with http(url, name="another-agent") as client:  # its closed session freed its place
            await client.list_tools()

    anyio.run(newcomer)

    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)  # a generous bound: the reported server ignored SIGTERM for 12 s
    except subprocess.TimeoutExpired:
        pytest.fail("serve did not stop within 10 s of SIGTERM")


def test_a_client_gets_its_place_back_when_its_sessions_idle_out(ledger_env: Path) -> None:
    """The quota forgets sessions the SDK expires (idle); a clock stands in for minutes of waiting."""
    from todoledger.mcp.duplicates import RememberBody
    from todoledger.mcp.http import create_app
    from todoledger.mcp.sessions import ClientQuota

    app, _ = create_app(token=TOKEN)
    quota = app.app  # type: ignore[attr-defined]
    assert isinstance(quota, ClientQuota)
    now = [1000.0]
    quota.clock = lambda: now[0]

    async def main() -> list[int]:
        transport = httpx2.ASGITransport(app=app)
        codes = []
        remembered = quota.app  # the raw-body layer of the duplicate-key check
        assert isinstance(remembered, RememberBody)
        starlette = remembered.app  # the SDK's app: its lifespan runs the session manager
        async with (
            httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as hc,
            starlette.router.lifespan_context(starlette),  # type: ignore[attr-defined]
        ):
            for _ in range(SESSIONS_PER_CLIENT + 1):
                codes.append((await hc.post("/mcp", json=initialize("a"), headers=HEADERS)).status_code)
            now[0] += quota.idle_seconds + 1
            codes.append((await hc.post("/mcp", json=initialize("a"), headers=HEADERS)).status_code)
        return codes

    codes = anyio.run(main)
    assert codes == [200] * SESSIONS_PER_CLIENT + [429, 200]
