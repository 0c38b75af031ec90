"""A scripted fake model API on loopback for driving real agent CLIs.

It speaks just enough of three wire formats for the agents' own clients:
- Anthropic Messages (`POST /v1/messages`, SSE or JSON): Claude Code, opencode;
- OpenAI Responses (`POST /v1/responses`, SSE): Codex (0.171 refuses `wire_api = "chat"`);
- Gemini (`:generateContent`, `:streamGenerateContent`, `:countTokens`): Gemini CLI.

The answer depends only on the request, so side requests (titles, quota
probes, routers) cannot shift the script: a request that offers the tool of
the next step gets that call; the step is the number of tool calls already in
the conversation. Past the last step, or when the request does not offer the
step's tool, the answer is plain text. Every request is logged as JSON.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One scripted tool call. `tool` picks a tool offered in the request: a
    plain name matches exactly; `("server", "tool")` matches an MCP tool of that
    server under any agent's naming (`mcp__s__t`, `mcp_s_t`, `s_t`, or a
    Codex namespace `mcp__s` holding `t`, listed as `mcp__s/t`)."""

    tool: str | tuple[str, str]
    args: dict[str, Any]


@dataclass
class Logged:
    api: str
    path: str
    body: dict[str, Any]
    answered: str = ""  # the tool called, or "text"

    def tools(self) -> list[str]:
        return tool_names(self.api, self.body)

    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class FakeModel:
    steps: list[Step]
    final: str = "All done."
    requests: list[Logged] = field(default_factory=list)
    url: str = ""  # set by start()
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> str:
        model = self

        class Handler(_Handler):
            fake = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def agent_requests(self) -> list[Logged]:
        """Requests that offered tools: the agent's own loop, not side calls."""
        return [r for r in self.requests if r.tools()]

    def answer(self, api: str, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """(tool name, arguments) or ("", None) for plain text."""
        offered = tool_names(api, body)
        done = count_calls(api, body)
        call: tuple[str, dict[str, Any] | None] = ("", None)
        if done < len(self.steps):
            step = self.steps[done]
            name = pick_tool(step.tool, offered)
            if name is not None:
                call = (name, step.args)
        self.log(Logged(api, path, body, call[0] or "text"))
        return call

    def log(self, request: Logged) -> None:
        with self._lock:  # the server answers each request on its own thread
            self.requests.append(request)

    def dump(self) -> str:
        return json.dumps(
            [{"api": r.api, "path": r.path, "answered": r.answered, "body": r.body} for r in self.requests],
            indent=1,
            ensure_ascii=False,
        )


def pick_tool(want: str | tuple[str, str], offered: list[str]) -> str | None:
    if isinstance(want, str):
        return want if want in offered else None
    server, tool = want
    names = (f"mcp__{server}__{tool}", f"mcp_{server}_{tool}", f"{server}_{tool}", f"mcp__{server}/{tool}")
    return next((n for n in offered if n in names), None)


def tool_names(api: str, body: dict[str, Any]) -> list[str]:
    tools = list(body.get("tools") or [])
    if api == "responses":  # tools a client-side tool search loaded into the conversation
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "tool_search_output":
                tools += item.get("tools") or []
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        if api == "gemini":
            names += [d.get("name", "") for d in tool.get("functionDeclarations") or []]
        elif tool.get("type") == "namespace":  # Codex groups an MCP server's tools
            names += [f"{tool.get('name')}/{t.get('name')}" for t in tool.get("tools") or []]
        else:
            names.append(tool.get("name") or tool.get("type", ""))
    return [n for n in names if n]


def count_calls(api: str, body: dict[str, Any]) -> int:
    if api == "anthropic":
        return sum(
            1
            for m in body.get("messages") or []
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        )
    if api == "responses":
        return sum(
            1
            for i in body.get("input") or []
            if isinstance(i, dict)
            and i.get("type") in ("function_call", "custom_tool_call", "tool_search_call")
        )
    return sum(
        1
        for c in body.get("contents") or []
        for p in c.get("parts") or []
        if isinstance(p, dict) and "functionCall" in p
    )


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def anthropic_events(
    model: str, name: str, args: dict[str, Any] | None, text: str
) -> Iterator[tuple[str, Any]]:
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": _id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield "message_start", {"type": "message_start", "message": message}
    if args is not None:
        block = {"type": "tool_use", "id": _id("toolu"), "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
        stop = "end_turn"
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(model: str, name: str, args: dict[str, Any] | None, text: str) -> dict[str, Any]:
    if args is not None:
        content = [{"type": "tool_use", "id": _id("toolu"), "name": name, "input": args}]
    else:
        content = [{"type": "text", "text": text}]
    return {
        "id": _id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if args is not None else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def responses_events(
    model: str, name: str, args: dict[str, Any] | None, text: str
) -> Iterator[tuple[str, Any]]:
    rid = _id("resp")
    base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": base}
    if args is not None and name == "tool_search":
        # Codex defers MCP tools behind a client-executed tool search.
        item: dict[str, Any] = {
            "type": "tool_search_call",
            "id": _id("ts"),
            "call_id": _id("call"),
            "execution": "client",
            "status": "completed",
            "arguments": args,
        }
    elif args is not None:
        namespace, _, tool = name.rpartition("/")
        item = {
            "type": "function_call",
            "id": _id("fc"),
            "call_id": _id("call"),
            "name": tool,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": _id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    )
    yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {**base, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": done}


def gemini_response(model: str, name: str, args: dict[str, Any] | None, text: str) -> dict[str, Any]:
    part = {"functionCall": {"name": name, "args": args}} if args is not None else {"text": text}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log is the request list
        pass

    def do_GET(self) -> None:
        # Model listings some clients probe before the first request.
        self._json(200, {"data": [], "models": [], "object": "list"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd":
            self._json(415, {"error": {"message": "zstd request bodies are not supported by the fake"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        path = self.path.split("?", 1)[0]
        model = str(body.get("model") or "fake-model")
        if path.endswith("/messages/count_tokens"):
            self.fake.log(Logged("anthropic-count", path, body, "count"))
            self._json(200, {"input_tokens": 10})
        elif path.endswith("/messages"):
            name, args = self.fake.answer("anthropic", path, body)
            if body.get("stream"):
                self._sse(anthropic_events(model, name, args, self.fake.final), named=True)
            else:
                self._json(200, anthropic_message(model, name, args, self.fake.final))
        elif path.endswith("/responses"):
            name, args = self.fake.answer("responses", path, body)
            self._sse(responses_events(model, name, args, self.fake.final), named=True)
        elif ":countTokens" in path:
            self.fake.log(Logged("gemini-count", path, body, "count"))
            self._json(200, {"totalTokens": 10})
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            gmodel = path.rsplit("/", 1)[-1].split(":", 1)[0]
            name, args = self.fake.answer("gemini", path, body)
            answer = gemini_response(gmodel, name, args, self.fake.final)
            if ":stream" in path:
                self._sse(iter([("", answer)]), named=False)
            else:
                self._json(200, answer)
        else:
            self.fake.log(Logged("unknown", path, body, "404"))
            self._json(404, {"error": {"message": f"fake model: no route {path}"}})

    def _json(self, status: int, data: dict[str, Any]) -> None:
        out = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def _sse(self, events: Iterator[tuple[str, Any]], *, named: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if named and name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True
