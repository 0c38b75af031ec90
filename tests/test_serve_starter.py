"""Who started `serve` decides whether a person is behind it (issue 17, scenario
2's loopback route): a server started from an agent's shell, or without a
terminal, has no person on it but the holders of tokens a person registered in
the ledger. Real `todoledger serve` in a subprocess, real HTTP; both backends."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.conftest import TESTER_TOKEN, hashed_tokens, person_env, subprocess_env, todoledger_bin
from tests.test_mcp import call, free_port, http
from tests.test_serve_tokens import _act, _gated
from todoledger import Ledger
from todoledger.core.approval import is_person

SHELL = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}


def approvers(db: Path | str, item: str) -> list[str]:
    with Ledger(str(db)) as lg:
        return [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]


@pytest.fixture
def agents_server(ledger_env: Path | str) -> Iterator[tuple[str, str]]:
    """`todoledger serve` on loopback, no token, from the agent's marked shell."""
    person_env(ledger_env)  # the tester's token is registered in the ledger (by a person)
    port = free_port()
    env = subprocess_env(ledger_env, **SHELL)
    env.pop("TODOLEDGER_TOKEN", None)
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stderr is not None
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                httpx2.get(base + "/", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None
                time.sleep(0.05)
        yield base, proc.stderr.readline().decode() + proc.stderr.readline().decode()
    finally:
        proc.terminate()
        proc.wait(10)


def _page_csrf(base: str, headers: dict[str, str]) -> tuple[str, str]:
    import re

    page = httpx2.get(base + "/", headers={"Accept": "text/html", **headers}, timeout=10)
    found = re.search(r'csrf content="([^"]+)"', page.text)
    assert found is not None, page.text
    return page.text, found.group(1)


def test_an_agents_server_says_so_and_its_board_is_no_person(
    agents_server: tuple[str, str], ledger_env: Path | str
) -> None:
    base, started = agents_server
    assert "started by agent-shell:claude-code:s1, not a person" in started
    item = _gated(ledger_env)
    page, csrf = _page_csrf(base, {})
    assert "this server was started by agent-shell:claude-code:s1, not a person" in page
    said = httpx2.post(
        base + "/api/action",
        json={"action": "approve", "id": item, "who": "boss"},
        headers={"x-csrf-token": csrf, "Origin": base},
        timeout=10,
    )
    assert said.status_code == 403 and "only a person can approve" in said.json()["error"]
    assert "started by agent-shell:claude-code:s1, not a person" in said.json()["error"]
    added = httpx2.post(
        base + "/api/action",
        json={"action": "add", "content": "From the page", "who": "boss"},
        headers={"x-csrf-token": csrf, "Origin": base},
        timeout=10,
    )
    assert added.json()["writer"] == "agent-shell:claude-code:s1@web"
    assert approvers(ledger_env, item) == []


def test_on_an_agents_server_a_persons_registered_token_is_that_person(
    agents_server: tuple[str, str], ledger_env: Path | str
) -> None:
    base, _ = agents_server
    item = _gated(ledger_env)
    done = _act(base, TESTER_TOKEN, {"action": "approve", "id": item, "who": "boss"})
    assert done.status_code == 200, done.text
    assert approvers(ledger_env, item) == ["web:tester"]


def test_an_agents_server_asks_no_approval_prompt_as_a_person(
    agents_server: tuple[str, str], ledger_env: Path | str
) -> None:
    from mcp import Client

    from tests.test_mcp_approval_prompt import Person

    base, _ = agents_server
    item = _gated(ledger_env)

    async def main() -> str:
        async with Client(f"{base}/mcp", elicitation_callback=Person("accept")) as c:
            result = await c.call_tool("plan_next", {"claim": True})
            return str(result.content[0].text)  # type: ignore[union-attr]

    said = anyio.run(main)
    assert "started by agent-shell:claude-code:s1, not a person" in said, said
    assert not any(is_person(w) for w in approvers(ledger_env, item))


def test_an_agents_server_refuses_a_tokens_file_of_its_own(ledger_env: Path | str, tmp_path: Path) -> None:
    tokens = tmp_path / "mine"
    hashed_tokens(tokens, "mine-token-0123456789abc boss person\nbot-token-0123456789abcd agent:ci\n")
    env = subprocess_env(ledger_env, **SHELL)
    env.pop("TODOLEDGER_TOKEN", None)
    done = subprocess.run(
        [todoledger_bin(), "serve", "--port", str(free_port()), "--tokens", str(tokens)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "started by agent-shell:claude-code:s1, not a person" in done.stderr
    assert "mine-token" not in done.stderr


def test_an_agents_server_gives_its_single_token_no_identity_that_proves(
    ledger_env: Path | str,
) -> None:
    """Off loopback a single --token's holders are `agent:token`, a principal a token
    shows. On a server the agent started, they are the agent itself: a check written
    through it does not prove the agent's claim from its shell."""
    with Ledger(str(ledger_env)) as lg:
        item = str(lg.add("Server restarts cleanly", writer="cli:owner")["id"])
    port = free_port()
    env = subprocess_env(ledger_env, **SHELL)
    env.pop("TODOLEDGER_TOKEN", None)
    proc = subprocess.Popen(
        [
            todoledger_bin(),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--token",
            "wide-token-0123456789abcdef",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    try:
        for _ in range(400):
            try:
                httpx2.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.05)

        async def main() -> None:
            async with http(
                f"http://127.0.0.1:{port}/mcp", name="ci", token="wide-token-0123456789abcdef"
            ) as c:
                await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(10)
    with Ledger(str(ledger_env)) as lg:
        (row,) = lg.checks([item])
        assert row.created_by.startswith("agent-shell:claude-code:s1@"), row.created_by
    done = subprocess.run(
        [todoledger_bin(), "done", item, "--evidence", "ok"],
        env=subprocess_env(ledger_env, **SHELL),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    with Ledger(str(ledger_env)) as lg:
        (shown,) = [i for i in lg.show()["items"] if i["id"] == item]
    assert shown["verification"] != "verified", (shown, done.stderr)


def test_a_person_started_server_stays_the_persons(ledger_env: Path | str) -> None:
    """A person's registered token in TODOLEDGER_TOKEN says who starts the server:
    its tokenless board is that person's (`web:<who>`), as before."""
    item = _gated(ledger_env)
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--name", "tester"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=person_env(ledger_env),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                httpx2.get(base + "/", timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.05)
        _, csrf = _page_csrf(base, {})
        said = httpx2.post(
            base + "/api/action",
            json={"action": "approve", "id": item},
            headers={"x-csrf-token": csrf, "Origin": base},
            timeout=10,
        )
        assert said.status_code == 200, said.text
    finally:
        proc.terminate()
        proc.wait(10)
    assert approvers(ledger_env, item) == ["web:tester"]
