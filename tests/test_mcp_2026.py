"""The server under the 2026-07-28 revision as the installed SDK serves it:
`server/discover`, stateless requests (raw HTTP, no session), results with
`structuredContent` matching each tool's `outputSchema`, tools in a fixed
order, and the writer that todowrite returns accepted back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest

from tests.test_mcp import CLAUDE, TOKEN, http, server, stdio  # noqa: F401  (server: a fixture)
from todoledger import Ledger
from todoledger.mcp.output import OUTPUT_SCHEMAS
from todoledger.mcp.tools import TOOLS

VERSION = "2026-07-28"
ORDER = ["todowrite", "todoread", "plan_next", "plan_update", "plan_verify", "plan_sweep"]


def rpc(url: str, method: str, params: dict[str, Any] | None = None, name: str | None = None) -> Any:
    """One stateless request: the protocol envelope in `_meta`, no session id anywhere."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
    }
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": meta}}
    reply = httpx2.post(url, json=body, headers=headers, timeout=30)
    assert reply.status_code == 200, reply.text
    assert "mcp-session-id" not in reply.headers
    text = reply.text
    if text.startswith(("event:", "data:")):  # an SSE answer: one message
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    assert "error" not in message, message
    return message["result"]


def test_discover_and_stateless_requests_over_raw_http(server: str, ledger_env: Path) -> None:  # noqa: F811
    found = rpc(server, "server/discover")
    assert VERSION in found["supportedVersions"]
    assert "tools" in found["capabilities"] and "todowrite" in found["instructions"]
    for _ in range(3):  # a fixed order, every time
        listed = rpc(server, "tools/list")
        assert [t["name"] for t in listed["tools"]] == ORDER
    for tool in listed["tools"]:
        assert tool["outputSchema"] == OUTPUT_SCHEMAS[tool["name"]]
        assert tool["inputSchema"] == TOOLS[tool["name"]]["inputSchema"]

    wrote = rpc(server, "tools/call", {"name": "todowrite", "arguments": {"todos": CLAUDE}}, name="todowrite")
    data = wrote["structuredContent"]
    assert json.loads(wrote["content"][0]["text"]) == data  # the same data as text, for text-only clients
    jsonschema.validate(data, OUTPUT_SCHEMAS["todowrite"])
    me = data["writer"]
    assert me.startswith("mcp:raw-http:req-")  # no session: this request's own writer, said back

    # The next request passes the writer back: the same view, so leaving an item out drops it.
    shorter = {"todos": CLAUDE[:2], "writer": me}
    again = rpc(server, "tools/call", {"name": "todowrite", "arguments": shorter}, name="todowrite")
    assert [d["content"] for d in again["structuredContent"]["dropped"]] == [CLAUDE[2]["content"]]
    # Without it, a new request is another writer: nothing of ours is dropped.
    other = {"todos": [{"content": "Another agent's task", "status": "pending"}]}
    third = rpc(server, "tools/call", {"name": "todowrite", "arguments": other}, name="todowrite")
    assert third["structuredContent"]["writer"] != me and "dropped" not in third["structuredContent"]
    with Ledger(ledger_env) as lg:
        assert {o["writer"] for o in lg.ops("main")} == {me, third["structuredContent"]["writer"]}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_every_result_matches_its_output_schema(transport: str, request: pytest.FixtureRequest) -> None:
    ledger_env = request.getfixturevalue("ledger_env")

    async def main() -> None:
        connect = (
            stdio(ledger_env)
            if transport == "stdio"
            else http(request.getfixturevalue("server"), name="schema")
        )
        async with connect as client:
            assert client.protocol_version == VERSION
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ORDER
            schemas = {t.name: t.output_schema for t in tools}
            calls: list[tuple[str, dict[str, Any]]] = [
                ("todoread", {}),
                ("todowrite", {"todos": CLAUDE}),
                ("todoread", {"all": True}),
                ("plan_next", {}),
                ("plan_next", {"claim": True}),
                ("plan_update", {"id": "<last>", "status": "completed", "evidence": "ok"}),
                ("plan_next", {"claim": True}),
            ]
            ids: list[str] = []
            me: str | None = None  # sessionless: the writer a reply returned, passed back (the tools say so)
            secret: str | None = None
            for tool, args in calls:
                if args.get("id") == "<last>":
                    args = {**args, "id": ids[-1]}
                if me is not None:
                    args = {**args, "writer": me}
                if secret is not None and tool == "plan_update":
                    args = {**args, "secret": secret}  # sessionless: the claim's proof, passed back
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content
                data = result.structured_content
                assert data == json.loads(result.content[0].text)  # type: ignore[union-attr]
                schema = schemas[tool]
                assert schema is not None
                jsonschema.validate(data, schema)
                ids += data.get("ids", [])
                me = data.get("writer", me)
                claimed = data.get("claimed") or {}
                secret = claimed.get("secret", secret)
            failed = await client.call_tool("plan_update", {"id": "nope", "status": "completed"})
            assert failed.is_error and failed.structured_content is None  # an error is one sentence only

    anyio.run(main)


def test_a_sessionless_client_claims_and_completes_as_one_holder(server: str, ledger_env: Path) -> None:  # noqa: F811
    """Before: each request was a new writer, so the claim's own completion was
    refused (`token 6 on ... is ...req-a's, not ...req-b's`) or went in unchecked."""

    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        got = rpc(server, "tools/call", {"name": name, "arguments": arguments}, name=name)
        if got.get("isError"):
            return {"error": got["content"][0]["text"]}
        data: dict[str, Any] = got["structuredContent"]
        jsonschema.validate(data, OUTPUT_SCHEMAS[name])
        return data

    tool(
        "todowrite",
        {
            "todos": [
                *CLAUDE,
                {"content": "Ship it", "status": "pending"},
                {"content": "Tag it", "status": "pending"},
            ]
        },
    )
    first = tool("plan_next", {"claim": True})
    me, item = first["writer"], first["claimed"]["id"]
    assert me.startswith("mcp:raw-http:req-")  # the claim names its holder: the client passes it back
    # Another request, without the writer: another writer, refused while the lease lasts.
    other = tool("plan_update", {"id": item, "status": "completed", "evidence": "x"})
    assert f"{item} is leased to {me} until {first['claimed']['lease_expires']}" in other["error"]
    # The holder's name alone (it is in the history) proves nothing either: its secret does.
    named = tool("plan_update", {"id": item, "status": "completed", "evidence": "x", "writer": me})
    assert "secret was not shown" in named["error"], named
    proof = first["claimed"]["secret"]
    done = tool(
        "plan_update",
        {"id": item, "status": "completed", "evidence": "41 passed", "writer": me, "secret": proof},
    )
    assert done["item"]["status"] == "completed"
    # The lease's number alone (anyone reads it in the history) names no holder (issue 29);
    # the claim's secret, sent back to this client only, does.
    second = tool("plan_next", {"claim": True})
    token, secret = second["claimed"]["token"], second["claimed"]["secret"]
    replayed = tool(
        "plan_update",
        {"id": second["claimed"]["id"], "status": "completed", "evidence": "ok", "token": token},
    )
    assert "secret was not shown" in replayed["error"], replayed
    done = tool(
        "plan_update",
        {
            "id": second["claimed"]["id"],
            "status": "completed",
            "evidence": "ok",
            "token": token,
            "secret": secret,
        },
    )
    assert done["item"]["status"] == "completed"
    # Renewing a claim is the holder's too: the number alone is refused, its secret renews it.
    third = tool("plan_next", {"claim": True})["claimed"]
    assert third is not None
    asked = {"renew": third["id"], "token": third["token"]}
    assert "secret was not shown" in tool("plan_next", asked)["error"]
    assert tool("plan_next", asked | {"secret": third["secret"]})["renewed"] == third["id"]
    tool("plan_next", {"release": third["id"], "token": third["token"], "secret": third["secret"]})
    with Ledger(ledger_env) as lg:
        assert lg.leases("main") == []
        completed = [e for e in lg.history("main") if e["field"] == "status" and e["new"] == "completed"]
        assert [e["writer"] for e in completed[-2:]] == [me, second["writer"]]
