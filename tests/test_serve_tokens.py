"""`serve --tokens FILE`: each bearer token maps to a person or an agent, and
every write through the server carries that identity (a real uvicorn server
in a subprocess; on both backends, tests/conftest.py PG_MODULES)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.test_board_templates import Page
from todoledger import Ledger

from .conftest import hashed_tokens, person_env, subprocess_env, todoledger_bin
from .test_mcp import call, free_port, http

ANN = "ann-token-0123456789abcdef"
BOT = "bot-token-0123456789abcdef"


@pytest.fixture
def team_server(ledger_env: Path | str, tmp_path: Path) -> Iterator[str]:
    tokens = tmp_path / "tokens"
    hashed_tokens(tokens, f"# who may write\n{ANN} ann\n\n{BOT} agent:ci\n")
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=person_env(ledger_env),
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


def serve_once(tokens: Path, db: Path | str) -> subprocess.CompletedProcess[str]:
    """`serve --tokens FILE` by a person, where it stops before listening."""
    return subprocess.run(
        [todoledger_bin(), "serve", "--port", str(free_port()), "--tokens", str(tokens)],
        capture_output=True,
        text=True,
        env=person_env(db),
        timeout=60,
    )


def hash_file(tokens: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), "token", "hash-file", str(tokens)], capture_output=True, text=True, timeout=60
    )


def test_a_bad_tokens_file_is_one_line_without_the_token(tmp_path: Path, ledger_env: Path | str) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("short-secret ann\n")
    done = serve_once(tokens, ledger_env)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "a token in plain text" in done.stderr and "short-secret" not in done.stderr
    hashing = hash_file(tokens)
    assert hashing.returncode == 1 and hashing.stderr.count("\n") == 1
    assert "at least 16 characters" in hashing.stderr and "short-secret" not in hashing.stderr
    assert tokens.read_text() == "short-secret ann\n"  # nothing changed


def test_a_tokens_file_keeps_only_hashes_and_a_plain_one_names_the_command(
    tmp_path: Path, ledger_env: Path | str
) -> None:
    """Reading the tokens file gives nothing to log in with: `serve` refuses one with a
    token in plain text, naming the one command that hashes it in place; after it, the
    file holds no token and the same tokens log in (bearer and the board's /login)."""
    tokens = tmp_path / "tokens"
    plain = f"# who may write\n{ANN} ann person\n\n{BOT} agent:ci\n"
    tokens.write_text(plain)
    tokens.chmod(0o600)
    refused = serve_once(tokens, ledger_env)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"{tokens}:2: a token in plain text" in refused.stderr
    assert f"`todoledger token hash-file {tokens}`" in refused.stderr
    assert ANN not in refused.stderr and BOT not in refused.stderr
    hashed = hash_file(tokens)
    assert hashed.returncode == 0 and "2 token(s) hashed in place" in hashed.stdout, hashed.stderr
    text = tokens.read_text()
    assert ANN not in text and BOT not in text and oct(tokens.stat().st_mode & 0o777) == "0o600"
    assert text.splitlines()[0] == "# who may write" and text.splitlines()[2] == ""
    lines = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert [line[1:] for line in lines] == [["ann", "person"], ["agent:ci"]]
    assert all(re.fullmatch("sha256:[0-9a-f]{64}", line[0]) for line in lines)
    again = hash_file(tokens)
    assert again.returncode == 0 and "hashed already" in again.stdout and tokens.read_text() == text
    # The hashed file serves: the plain tokens log in, a line's hash itself does not.
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=person_env(ledger_env),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx2.get(f"{base}/login", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None
                time.sleep(0.05)
        login = httpx2.post(f"{base}/login", data={"token": ANN})
        assert login.status_code == 303 and login.cookies.get("todoledger_token") == ANN, login.text
        assert httpx2.post(f"{base}/login", data={"token": lines[0][0]}).status_code == 401
        assert (
            httpx2.post(f"{base}/login", data={"token": lines[0][0].removeprefix("sha256:")}).status_code
            == 401
        )
        page = httpx2.get(f"{base}/", headers={"Authorization": f"Bearer {BOT}", "Accept": "text/html"})
        assert page.status_code == 200
        forged = httpx2.get(f"{base}/", headers={"Authorization": f"Bearer {lines[1][0]}"})
        assert forged.status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)


# The board under tokens: who writes is the token's, never the page's `who` --------

BOSS = "boss-token-0123456789abcdef"


def _base(url: str) -> str:
    return url.removesuffix("/mcp")


def _csrf(base: str, token: str) -> str:
    """What scenario 2's agent did: read the page's CSRF token from GET /."""
    page = httpx2.get(f"{base}/", headers={"Authorization": f"Bearer {token}", "Accept": "text/html"})
    assert page.status_code == 200, page.text
    found = re.search(r'<meta name=csrf content="([^"]+)">', page.text)
    assert found is not None
    return found.group(1)


def _act(base: str, token: str, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(
        f"{base}/api/action",
        json=body,
        headers={"Authorization": f"Bearer {token}", "X-CSRF-Token": _csrf(base, token)},
    )


def _gated(db: Path | str) -> str:
    with Ledger(str(db)) as lg:
        return str(lg.add("Deploy to production", needs_approval=True, writer="cli:owner")["id"])


def test_an_agent_token_cannot_approve_on_the_board_as_anyone(
    team_server: str, ledger_env: Path | str
) -> None:
    """Scenario 2: agent:ci's token reads the CSRF token from GET / and posts
    /api/action as "who": "ann" (approve), "boss" (approve_plan): refused, and
    nothing is recorded as web:ann or web:boss; its claim stays refused."""
    base = _base(team_server)
    item = _gated(ledger_env)
    said = _act(base, BOT, {"action": "approve", "id": item, "who": "ann"})
    assert said.status_code == 403
    assert said.json()["error"] == (
        "agent:ci@web holds an agent's token: only a person can approve;"
        " a person must do it, under a person's token (log in at /login) or from a terminal"
    )
    plan = _act(base, BOT, {"action": "approve_plan", "who": "boss"})
    assert plan.status_code == 403 and "only a person can approve the plan" in plan.json()["error"]
    with Ledger(str(ledger_env)) as lg:
        assert lg.approvals("main")["waiting"] == [item]
        writers = {e["writer"] for e in lg.history()}
    assert writers == {"cli:owner"}

    async def claim() -> Any:
        async with http(team_server, name="codex", token=BOT) as bot:
            return await call(bot, "plan_next", {"claim": True})

    assert anyio.run(claim)["claimed"] is None


def test_an_agent_tokens_board_writes_are_the_agents_and_it_undoes_only_its_own(
    team_server: str, ledger_env: Path | str
) -> None:
    base = _base(team_server)
    # ann (a person's token) adds an item: hers, whatever `who` says.
    mine = _act(base, ANN, {"action": "add", "content": "Write the notes", "who": "boss"})
    assert mine.status_code == 200 and mine.json()["writer"] == "web:ann"
    # agent:ci posts as "ann": recorded as the agent.
    theirs = _act(base, BOT, {"action": "add", "content": "Bump the version", "who": "ann"})
    assert theirs.status_code == 200 and theirs.json()["writer"] == "agent:ci@web"
    # Its undo reverses its own change, never ann's.
    undone = _act(base, BOT, {"action": "undo", "who": "ann"})
    assert undone.status_code == 200 and undone.json()["writer"] == "agent:ci@web"
    again = _act(base, BOT, {"action": "undo", "who": "ann"})
    assert again.status_code == 400 and "nothing of agent:ci@web's to undo" in again.json()["error"]
    with Ledger(str(ledger_env)) as lg:
        live = [(it["content"], it["created_by"]) for it in lg.items("main")]
    assert live == [("Write the notes", "web:ann")]


def _refusals(db: Path | str) -> list[tuple[str, str]]:
    with Ledger(str(db)) as lg:
        return [(o["writer"], o["summary"]) for o in lg.ops("main") if o["kind"] == "refused"]


def _report(db: Path | str) -> str:
    done = subprocess.run(
        [todoledger_bin(), "report", "main"],
        capture_output=True,
        text=True,
        env=subprocess_env(db),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout[done.stdout.index("## Refused") :]


def test_an_agents_refused_approval_on_the_board_is_in_report_and_board(
    team_server: str, ledger_env: Path | str
) -> None:
    """Issue 31: a board action refused is a refusal event with its writer and reason, like
    every route's; nothing else changes; `todoledger report` and the board's plan page list it."""
    base = _base(team_server)
    item = _gated(ledger_env)
    with Ledger(str(ledger_env)) as lg:
        before = lg.items("main")
    said = _act(base, BOT, {"action": "approve", "id": item, "who": "ann"})
    assert said.status_code == 403
    reason = "agent:ci@web holds an agent's token: only a person can approve"
    assert _refusals(ledger_env) == [("agent:ci@web", f"board approve: {said.json()['error']}")]
    with Ledger(str(ledger_env)) as lg:
        assert lg.items("main") == before and lg.approvals("main")["waiting"] == [item]
    assert f"agent:ci@web: board approve: {reason}" in _report(ledger_env)
    page = httpx2.get(
        f"{base}/plan?plan=main", headers={"Authorization": f"Bearer {ANN}", "Accept": "text/html"}
    )
    text = " ".join(Page(page.text).text)
    refused = text[text.index("Refused") :]
    assert "1 write refused" in refused and f"agent:ci@web : board approve: {reason}" in refused


def test_a_lease_fence_on_the_board_is_recorded_with_its_writer(
    team_server: str, ledger_env: Path | str
) -> None:
    base = _base(team_server)
    with Ledger(str(ledger_env)) as lg:
        item = str(lg.add("Benchmark", writer="cli:owner")["id"])
        (claimed,) = lg.next("main", claim=True, writer="codex:t9")
        assert claimed["id"] == item
        before = lg.items("main")
    said = _act(base, BOT, {"action": "status", "id": item, "value": "completed"})
    assert said.status_code == 400 and "your change is refused" in said.json()["error"]
    ((writer, summary),) = _refusals(ledger_env)
    assert writer == "agent:ci@web" and summary == f"board status: {said.json()['error']}"
    with Ledger(str(ledger_env)) as lg:
        assert lg.items("main") == before
    assert "agent:ci@web: board status: " in _report(ledger_env)


def test_a_refused_board_action_in_a_plan_that_does_not_exist_records_nothing(
    team_server: str, ledger_env: Path | str
) -> None:
    base = _base(team_server)
    _gated(ledger_env)
    said = _act(base, BOT, {"action": "approve", "id": "zzzzzz", "plan": "nowhere"})
    assert said.status_code == 403
    with Ledger(str(ledger_env)) as lg:
        assert [p["plan"] for p in lg.plans()] == ["main"] and lg.ops("nowhere") == []


def test_a_person_tokens_approvals_carry_that_person(team_server: str, ledger_env: Path | str) -> None:
    base = _base(team_server)
    item = _gated(ledger_env)
    done = _act(base, ANN, {"action": "approve", "id": item, "who": "boss"})
    assert done.status_code == 200 and done.json()["writer"] == "web:ann"
    plan = _act(base, ANN, {"action": "approve_plan", "who": "boss"})
    assert plan.status_code == 200 and plan.json()["writer"] == "web:ann"
    with Ledger(str(ledger_env)) as lg:
        state = lg.approvals("main")
    assert state["waiting"] == [] and state["items"][item]["by"] == "web:ann"
    assert state["plan"]["by"] == "web:ann"


def test_the_page_says_who_the_token_makes_you(team_server: str) -> None:
    base = _base(team_server)
    html = {"Accept": "text/html"}
    agent = httpx2.get(f"{base}/", headers=html | {"Authorization": f"Bearer {BOT}"}).text
    person = httpx2.get(f"{base}/", headers=html | {"Authorization": f"Bearer {ANN}"}).text
    assert "you are agent:ci@web (an agent's token: approvals need a person's)" in agent
    assert "you are web:ann<" in person and "id=who " not in person and "id=who " not in agent


@pytest.fixture
def wide_server(ledger_env: Path | str) -> Iterator[tuple[str, str]]:
    """A single --token, bound to every interface: its holders are an agent."""
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--host", "0.0.0.0", "--port", str(port), "--token", BOSS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=person_env(ledger_env),
    )
    assert proc.stderr is not None
    lines = [proc.stderr.readline().decode(), proc.stderr.readline().decode()]
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.05)
        yield url, "".join(lines)
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_single_token_off_loopback_is_an_agents(
    wide_server: tuple[str, str], ledger_env: Path | str
) -> None:
    base, started = wide_server
    assert (
        "todoledger: on 0.0.0.0 the --token's holders write as agent:token, an agent:"
        " they cannot approve, trust or undo others' changes; give people their own tokens (--tokens FILE)"
    ) in started
    item = _gated(ledger_env)
    said = _act(base, BOSS, {"action": "approve", "id": item, "who": "boss"})
    assert said.status_code == 403 and said.json()["error"].startswith(
        "agent:token@web holds an agent's token"
    )
    added = _act(base, BOSS, {"action": "add", "content": "Rotate the keys", "who": "boss"})
    assert added.json()["writer"] == "agent:token@web"

    async def write() -> None:
        async with http(f"{base}/mcp", name="claude-code", token=BOSS) as c:
            await call(c, "todowrite", {"todos": [{"content": "Ship it", "status": "pending"}]})

    anyio.run(write)
    with Ledger(str(ledger_env)) as lg:
        writers = [e["writer"] for e in lg.history() if e["writer"] != "cli:owner"]
        assert lg.approvals("main")["waiting"] == [item]
    assert writers[0] == "agent:token@web" and writers[-1].startswith("agent:token@mcp:claude-code:")


def test_a_single_token_on_loopback_stays_the_persons(ledger_env: Path | str) -> None:
    from todoledger.mcp.http import shared_token_holder, shared_token_line

    assert shared_token_holder("127.0.0.1", BOSS) is None and shared_token_line("::1", BOSS) is None
    holder = shared_token_holder("0.0.0.0", BOSS)
    assert holder is not None and (holder.name, holder.person) == ("agent:token", False)
    assert shared_token_holder("192.0.2.1", None) is None  # no token: refused elsewhere (check_exposure)


# Elicitation over HTTP: the answer is the token's -----------------------------------


class _Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})


async def _claim_with_prompt(url: str, token: str, person: _Person, item: str) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as hc,
        Client(
            streamable_http_client(url, http_client=hc),
            client_info=Implementation(name="sneaky", version="1"),
            elicitation_callback=person,
        ) as c,
    ):
        return await c.call_tool("plan_update", {"id": item, "status": "in_progress"})


def test_an_agent_token_cannot_answer_its_own_approval_prompt(
    team_server: str, ledger_env: Path | str
) -> None:
    """Scenario 3: a client holding agent:ci's token is not asked, and no
    answer of its approves: one line, nothing written."""
    item = _gated(ledger_env)
    person = _Person()
    result = anyio.run(_claim_with_prompt, team_server, BOT, person, item)
    assert result.is_error and person.asked == []
    assert result.content[0].text == (
        f"cannot start {item}: it needs a person's approval, and no answer under agent:ci's token counts"
        " as one (an agent's token); a person approves it under a person's token, on the board or from a"
        " terminal"
    )
    with Ledger(str(ledger_env)) as lg:
        assert lg.approvals("main")["waiting"] == [item]
        assert lg.items("main")[0]["status"] == "pending"


def test_a_person_tokens_answer_approves_as_that_person(team_server: str, ledger_env: Path | str) -> None:
    from todoledger.core.approval import is_person, principal

    item = _gated(ledger_env)
    person = _Person()
    result = anyio.run(_claim_with_prompt, team_server, ANN, person, item)
    assert not result.is_error and len(person.asked) == 1
    with Ledger(str(ledger_env)) as lg:
        by = lg.approvals("main")["items"][item]["by"]
        row = lg.items("main")[0]
    assert by.startswith("mcp-user:ann@sneaky:") and is_person(by) and principal(by).startswith("person:")
    assert row["status"] == "in_progress" and row["updated_by"].startswith("ann@mcp:sneaky:")


def test_no_writer_poses_as_a_tokens_identity(team_server: str, ledger_env: Path | str) -> None:
    """`<identity>@` leads a writer only behind that token: over stdio a writer
    `boss@...` (whose principal would read as the person boss) is refused, and
    a client's name loses its `@`; behind agent:ci's token only agent:ci@ passes."""
    from todoledger.core.approval import principal

    from .test_mcp import refuse, stdio

    assert principal("boss@mcp:x:1") == "person:boss"  # why it must never be self-declared

    async def main() -> tuple[str, str]:
        async with stdio(ledger_env, name="ev@il") as c:  # type: ignore[arg-type]  # a URL works too
            local = await refuse(
                c, "todowrite", {"todos": [{"content": "x", "status": "pending"}], "writer": "boss@mcp:x:1"}
            )
            await call(c, "todowrite", {"todos": [{"content": "Mine", "status": "pending"}]})
        async with http(team_server, name="codex", token=BOT) as bot:
            remote = await refuse(bot, "plan_next", {"claim": True, "writer": "ann@mcp:x:1"})
            await call(bot, "todoread", {"writer": "agent:ci@mcp:codex:req-1"})  # its own mark passes
        return local, remote

    local, remote = anyio.run(main)
    assert (
        local == "writer 'boss@mcp:x:1' has an '@': only a token's identity leads a writer (serve --tokens)"
    )
    assert remote.startswith("writer 'ann@mcp:x:1' has an '@'")
    with Ledger(str(ledger_env)) as lg:
        writers = {e["writer"] for e in lg.history()}
    assert writers and all(w.startswith("mcp:ev-il:") for w in writers), writers
