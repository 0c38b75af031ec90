"""Approval asked from inside a tool call (elicitation): a real `todoledger mcp`
stdio process and the SDK's own client, with an elicitation callback that
accepts, one that declines, and a client that declares no elicitation; under
the 2026-07-28 revision (the question rides an InputRequiredResult and the
client's retry) and the handshake one (a request in the middle of the call)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult, Implementation

from tests.test_cli import run, run_json
from tests.test_mcp import TOKEN, refuse, server, stdio_params  # noqa: F401  (server: a fixture)

GATED = "Run the 4-GPU concurrency benchmark (37K samples)"


class Person:
    """The client's user: answers every approval prompt the same way, and remembers them."""

    def __init__(self, answer: str, approve: bool = True) -> None:
        self.answer, self.approve = answer, approve
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        assert params.requested_schema["properties"]["approve"]["type"] == "boolean"  # type: ignore[union-attr]
        content = {"approve": self.approve} if self.answer == "accept" else None
        return ElicitResult(action=self.answer, content=content)  # type: ignore[arg-type]


@asynccontextmanager
async def client(db: Path, person: Person | None, mode: str = "auto") -> AsyncIterator[Client]:
    async with Client(
        stdio_params(db),
        client_info=Implementation(name="asker", version="1"),
        elicitation_callback=person,
        mode=mode,  # type: ignore[arg-type]
    ) as c:
        yield c


def gated(db: Path) -> str:
    run(db, "add", GATED, "--needs-approval", "--estimate", "2h")
    (row,) = run_json(db, "show")["items"]
    return str(row["id"])


def approvals(db: Path, item: str) -> list[dict[str, Any]]:
    return [e for e in run_json(db, "history", item) if e["field"] == "approved"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_accepting_user_approves_from_inside_the_claim(ledger_env: Path, mode: str) -> None:
    item = gated(ledger_env)
    person = Person("accept")

    async def main() -> Any:
        async with client(ledger_env, person, mode) as c:
            # auto: the 2026 revision (an InputRequiredResult and a retry); legacy: a request mid-call
            assert (c.session.protocol_version == "2026-07-28") == (mode == "auto")
            result = await c.call_tool("plan_next", {"claim": True})
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)  # type: ignore[union-attr]

    got = anyio.run(main)
    assert got["claimed"]["id"] == item
    (asked,) = person.asked
    assert item in asked and GATED in asked and "claim" in asked and "approval" in asked
    (approval,) = approvals(ledger_env, item)
    assert approval["writer"].startswith("mcp-user:asker:")
    row = run_json(ledger_env, "show")["items"][0]
    assert row["status"] == "in_progress" and row["updated_by"].startswith("mcp:asker:")
    # The same session: the person's writer and the agent's differ only in the prefix.
    assert approval["writer"].removeprefix("mcp-user:") == row["updated_by"].removeprefix("mcp:")
    # The approval is a person's as the plan records it: nothing waits any more.
    state = run_json(ledger_env, "approve")
    assert state["waiting"] == [] and state["items"][item]["by"] == approval["writer"]


@pytest.mark.parametrize(("answer", "approve"), [("decline", True), ("cancel", True), ("accept", False)])
def test_a_declining_user_leaves_the_item_unapproved(ledger_env: Path, answer: str, approve: bool) -> None:
    item = gated(ledger_env)
    person = Person(answer, approve)

    async def main() -> str:
        async with client(ledger_env, person) as c:
            return await refuse(c, "plan_update", {"id": item, "status": "in_progress"})

    said = anyio.run(main)
    assert said == (
        f"cannot start {item}: it needs a person's approval first (todoledger approve, or the board);"
        " an agent cannot approve"
    )
    assert len(person.asked) == 1 and "start" in person.asked[0]
    assert approvals(ledger_env, item) == []
    assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"


def test_a_client_without_elicitation_gets_the_usual_refusal(ledger_env: Path) -> None:
    item = gated(ledger_env)

    async def main() -> tuple[str, Any]:
        async with client(ledger_env, None) as c:
            said = await refuse(c, "plan_update", {"id": item, "status": "completed"})
            claim = await c.call_tool("plan_next", {"claim": True})
            return said, json.loads(claim.content[0].text)  # type: ignore[union-attr]

    said, claim = anyio.run(main)
    assert said.startswith(f"cannot complete {item}: it needs a person's approval first")
    assert claim["claimed"] is None and claim["waiting_for_approval"] == [item]
    assert approvals(ledger_env, item) == []


def test_nothing_is_asked_when_nothing_waits_and_an_agent_cannot_name_a_person(ledger_env: Path) -> None:
    run(ledger_env, "add", "Plain work")
    item = run_json(ledger_env, "show")["items"][0]["id"]
    person = Person("accept")

    async def main() -> str:
        async with client(ledger_env, person) as c:
            result = await c.call_tool("plan_update", {"id": item, "status": "in_progress"})
            assert not result.is_error
            return await refuse(c, "plan_update", {"id": item, "status": "completed", "writer": "cli:me"})

    said = anyio.run(main)
    assert person.asked == []
    assert "names a person" in said
    assert run_json(ledger_env, "show")["items"][0]["status"] == "in_progress"


def test_over_stateless_http_the_question_rides_the_retry(server: str, ledger_env: Path) -> None:  # noqa: F811
    """`todoledger serve`, the 2026 revision over HTTP: no session, so the
    question comes back as an InputRequiredResult and the answer with the retry."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    item = gated(ledger_env)
    person = Person("accept")

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as hc,
            Client(
                streamable_http_client(server, http_client=hc),
                client_info=Implementation(name="web-agent", version="1"),
                elicitation_callback=person,
            ) as c,
        ):
            assert c.session.protocol_version == "2026-07-28"
            result = await c.call_tool("plan_update", {"id": item, "status": "in_progress"})
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)  # type: ignore[union-attr]

    got = anyio.run(main)
    assert got["item"]["status"] == "in_progress" and len(person.asked) == 1
    (approval,) = approvals(ledger_env, item)
    assert approval["writer"].startswith("mcp-user:web-agent:")
