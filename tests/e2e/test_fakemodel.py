"""The fake model itself, over real HTTP on loopback: the agent tests rely on
it answering each wire format the way the agents' clients parse it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.fakemodel import FakeModel, Step

TODOS = {"todos": [{"content": "One", "status": "pending"}]}


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    model = FakeModel([Step("ToolSearch", {"query": "q"}), Step(("todoledger", "todowrite"), TODOS)])
    model.start()
    yield model
    model.stop()


def post(fake: FakeModel, path: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        fake.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_anthropic_script_follows_the_conversation(fake: FakeModel) -> None:
    tools = [{"name": "ToolSearch"}, {"name": "mcp__todoledger__todowrite"}]
    first = {"model": "m", "stream": True, "tools": tools, "messages": [{"role": "user", "content": "go"}]}
    status, text = post(fake, "/v1/messages", first)
    assert status == 200
    events = sse(text)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1]["content_block"]["name"] == "ToolSearch"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"

    called = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}],
    }
    second = {**first, "messages": [*first["messages"], called, {"role": "user", "content": "ok"}]}
    events = sse(post(fake, "/v1/messages", second)[1])
    block = events[1]["content_block"]
    assert block["name"] == "mcp__todoledger__todowrite"
    assert json.loads(events[2]["delta"]["partial_json"]) == TODOS

    again = {
        **second,
        "messages": [*second["messages"], {**called, "content": [{**called["content"][0], "id": "t2"}]}],
    }
    status, text = post(fake, "/v1/messages", {**again, "stream": False})
    assert json.loads(text)["content"] == [{"type": "text", "text": "All done."}]
    assert [r.answered for r in fake.requests] == ["ToolSearch", "mcp__todoledger__todowrite", "text"]


def test_a_request_without_the_tool_gets_text(fake: FakeModel) -> None:
    """Side requests (titles, quota probes) must not consume the script."""
    events = sse(post(fake, "/v1/messages", {"stream": True, "messages": []})[1])
    assert events[2]["delta"] == {"type": "text_delta", "text": "All done."}
    assert fake.agent_requests() == []


def test_responses_namespace_tool_and_tool_search() -> None:
    model = FakeModel([Step("tool_search", {"query": "q"}), Step(("todoledger", "todowrite"), TODOS)])
    model.start()
    try:
        body: dict[str, Any] = {"model": "m", "tools": [{"type": "tool_search"}], "input": []}
        item = sse(post(model, "/v1/responses", body)[1])[-1]["response"]["output"][0]
        assert item["type"] == "tool_search_call"
        found = {
            "type": "tool_search_output",
            "tools": [{"type": "namespace", "name": "mcp__todoledger", "tools": [{"name": "todowrite"}]}],
        }
        body["input"] = [item, found]
        events = sse(post(model, "/v1/responses", body)[1])
        done = events[-1]
        assert done["type"] == "response.completed"
        call = done["response"]["output"][0]
        assert (call["type"], call["namespace"], call["name"]) == (
            "function_call",
            "mcp__todoledger",
            "todowrite",
        )
        assert json.loads(call["arguments"]) == TODOS
    finally:
        model.stop()


def test_gemini_stream_and_count() -> None:
    model = FakeModel([Step("write_todos", {"todos": []})])
    model.start()
    try:
        body = {"contents": [], "tools": [{"functionDeclarations": [{"name": "write_todos"}]}]}
        chunk = sse(post(model, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)[1])[0]
        part = chunk["candidates"][0]["content"]["parts"][0]
        assert part == {"functionCall": {"name": "write_todos", "args": {"todos": []}}}
        assert chunk["modelVersion"] == "gemini-x"
        assert json.loads(post(model, "/v1beta/models/gemini-x:countTokens", {})[1]) == {"totalTokens": 10}
        assert post(model, "/v1beta/elsewhere", {})[0] == 404
    finally:
        model.stop()
