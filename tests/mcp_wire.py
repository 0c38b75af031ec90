"""Raw JSON-RPC to a real `todoledger mcp` process (stdio) or `todoledger serve`
(HTTP), with tool arguments written as text: a payload whose keys repeat, as
an agent's model wrote it, reaches the server exactly so (an SDK client would
have parsed and re-serialised it first)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx2

from tests.conftest import subprocess_env, todoledger_bin

PROTOCOL = "2025-06-18"
MODERN = "2026-07-28"


def initialize(name: str, version: str = PROTOCOL) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1"},
            },
        }
    )


INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call_line(n: int, tool: str, arguments: str, meta: str | None = None) -> str:
    """A tools/call request with `arguments` spliced in as text, verbatim."""
    extra = f',"_meta":{meta}' if meta else ""
    return (
        f'{{"jsonrpc":"2.0","id":{n},"method":"tools/call",'
        f'"params":{{"name":{json.dumps(tool)},"arguments":{arguments}{extra}}}}}'
    )


class Wire(Protocol):
    def call(self, tool: str, arguments: str | dict[str, Any], meta: str | None = None) -> dict[str, Any]: ...


def _text(arguments: str | dict[str, Any]) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))


class StdioWire:
    """One `todoledger mcp` process on pipes, after the handshake."""

    def __init__(self, db: Path | str, name: str = "raw", **env: str) -> None:
        self.proc = subprocess.Popen(
            [todoledger_bin(), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=subprocess_env(db, **env),
        )
        self.n = 0
        self._send(initialize(name))
        self._answer(0)
        self._send(INITIALIZED)

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def _answer(self, n: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read().decode() if self.proc.stderr else "the server closed stdout"
            message = json.loads(line)
            if message.get("id") == n:
                return message

    def call(self, tool: str, arguments: str | dict[str, Any], meta: str | None = None) -> dict[str, Any]:
        self.n += 1
        self._send(call_line(self.n, tool, _text(arguments), meta))
        message = self._answer(self.n)
        assert "error" not in message, message
        result: dict[str, Any] = message["result"]
        return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@contextmanager
def stdio_wire(db: Path | str, name: str = "raw", **env: str) -> Iterator[StdioWire]:
    wire = StdioWire(db, name, **env)
    try:
        yield wire
    finally:
        if wire.proc.poll() is None:
            wire.close()


class HttpWire:
    """One session of `todoledger serve` (2025-06-18), or, `modern`, sessionless
    requests of the 2026-07-28 revision (the protocol envelope in each `_meta`)."""

    def __init__(self, url: str, token: str | None, name: str = "raw", modern: bool = False) -> None:
        self.url, self.name, self.modern = url, name, modern
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.client = httpx2.Client(timeout=30)
        self.n = 0
        if modern:
            self.headers["MCP-Protocol-Version"] = MODERN
            return
        reply = self.client.post(url, content=initialize(name), headers=self.headers)
        assert reply.status_code == 200, reply.text
        self.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        self.client.post(url, content=INITIALIZED, headers=self.headers)

    def call(self, tool: str, arguments: str | dict[str, Any], meta: str | None = None) -> dict[str, Any]:
        self.n += 1
        headers = dict(self.headers)
        if self.modern:
            envelope = json.dumps(
                {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"},
                },
                separators=(",", ":"),
            )
            meta = envelope if meta is None else envelope[:-1] + "," + meta[1:]
            headers |= {"Mcp-Method": "tools/call", "Mcp-Name": tool}
        reply = self.client.post(
            self.url, content=call_line(self.n, tool, _text(arguments), meta), headers=headers
        )
        assert reply.status_code == 200, reply.text
        text = reply.text
        if text.startswith(("event:", "data:")):  # an SSE answer: one message
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        message = json.loads(text)
        assert "error" not in message, message
        result: dict[str, Any] = message["result"]
        return result

    def close(self) -> None:
        self.client.close()


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def data_of(result: dict[str, Any]) -> Any:
    """A tool's JSON reply; a tool error fails the test."""
    assert not result.get("isError"), text_of(result)
    return json.loads(text_of(result))


def cli_refusal(db: Path | str, payload: str, *args: str) -> str:
    """The one line `todoledger write` refuses this payload with (stdin, opencode)."""
    proc = subprocess.run(
        [todoledger_bin(), "write", "--dialect", "opencode", *args, "-"],
        input=payload.encode(),
        capture_output=True,
        env=subprocess_env(db),
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0, proc.stdout
    line = proc.stderr.decode().strip()
    assert "\n" not in line, line
    return line.removeprefix("Error: ")


class SdkWire:
    """The official SDK's client (stdio or streamable HTTP), driven from a
    synchronous test through a blocking portal. Arguments are data here: the
    client serialises them itself."""

    def __init__(self, connect: Any) -> None:
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = self.portal.wrap_async_context_manager(connect)
        self.client = self._client_cm.__enter__()

    def call(self, tool: str, arguments: str | dict[str, Any], meta: str | None = None) -> dict[str, Any]:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        result = self.portal.call(self.client.call_tool, tool, args)
        dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    def close(self) -> None:
        self._client_cm.__exit__(None, None, None)
        self._portal_cm.__exit__(None, None, None)


class Agent:
    """One agent session over any wire: passes back the `writer` a reply returns
    (a sessionless HTTP client must, to keep one view across its calls)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.writer: str | None = None

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.writer is not None and "writer" not in arguments:
            arguments = {**arguments, "writer": self.writer}
        result = self.wire.call(tool, arguments)
        data = result.get("structuredContent")
        if isinstance(data, dict) and isinstance(data.get("writer"), str):
            self.writer = data["writer"]
        return result

    def data(self, tool: str, arguments: dict[str, Any]) -> Any:
        return data_of(self.call(tool, arguments))
