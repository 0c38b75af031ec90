"""`todoledger mcp` before the SDK: the start of a stdio session, and the
agents' hot tools, answered without importing the MCP SDK.

An agent waits for its tools on its first turn, and the SDK's import alone is
most of a second on a quiet machine, many seconds on a loaded one: the real
Claude Code gave up and planned without its tools (issue 30). So this module
answers `initialize`, `notifications/initialized`, `server/discover` and the
tool, prompt and resource lists from `snapshot.json` (package data, generated
from the SDK path: `mcp/snapshot.py`), and serves `todowrite`, `todoread`,
`plan_next` and `plan_update` itself, for both protocol eras, through the same
tools (`mcp/tools.py` PlanTools) and the same writer rules (`mcp/writer.py`,
`mcp/duplicates.py`) as the SDK path: it adds no rules of its own.

Anything else (another method or tool, `tasks/*` and a call that may become an
MCP task (mcp/tasks.py), an approval the client can be asked for, a line that is not plain JSON-RPC, a client that changes era) hands the
session on to the SDK path (`mcp/server.py` `run_stdio`): the handshake the
client made here is replayed to it (its answer swallowed: `mcp/stdio.py`
REPLAY_ID), then the line and everything read after it. So the SDK stays the
reference, and tests/test_mcp_lean.py runs one script against both paths.
"""

from __future__ import annotations

import json
import os

from todoledger.mcp.snapshot import LEGACY, MODERN, MODERN_VERSION, load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.mcp.tools import PlanTools

HOT_TOOLS = frozenset({"todowrite", "todoread", "plan_next", "plan_update"})
ASKING_TOOLS = frozenset({"plan_update", "plan_next"})  # as mcp/server.py: they may ask for an approval
LISTS = frozenset({"tools/list", "prompts/list", "resources/list"})
META_KEYS = frozenset(
    {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/clientInfo",
    }
)
MAX_DEPTH = 64  # deeper JSON goes to the SDK's parser, which says how it refuses it
REPLAY_ID = "todoledger-lean-replay"  # as mcp/stdio.py REPLAY_ID (not imported: that module loads the SDK)


class HandOn(Exception):
    """This line is the SDK path's to answer."""


def _bad_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: the SDK's parser decides


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        children = node.values() if type(node) is dict else node if type(node) is list else ()
        stack.extend((c, d + 1) for c in children if type(c) in (dict, list))
    return deepest


def _message(text: str) -> dict[str, Any]:
    """The line as plain JSON-RPC, read exactly as the SDK's parser reads it, or HandOn."""
    if "\\u" in text and any(
        f"\\u{c}" in text.lower() for c in ("d8", "d9", "da", "db", "dc", "dd", "de", "df")
    ):
        raise HandOn  # a surrogate escape: the SDK's parser refuses a lone one
    try:
        found = json.loads(text, parse_constant=_bad_constant)
    except (ValueError, RecursionError):
        raise HandOn from None
    if type(found) is not dict or found.get("jsonrpc") != "2.0" or _depth(found) > MAX_DEPTH:
        raise HandOn
    ident = found.get("id")
    if "id" in found and (type(ident) is not str and type(ident) is not int):
        raise HandOn
    if type(found.get("method")) is not str:
        raise HandOn  # a response from the client, or no method
    params = found.get("params", {})
    if type(params) is not dict:
        raise HandOn
    return found


def _can_elicit(caps: Any) -> bool:
    """As mcp/server.py `_can_elicit`: form elicitation declared (a bare `{}` means form)."""
    found = caps.get("elicitation") if type(caps) is dict else None
    return type(found) is dict and (found.get("form") is not None or found.get("url") is None)


def _declares_tasks(caps: Any) -> bool:
    """The request declares the MCP Tasks extension (mcp/tasks.py)."""
    found = caps.get("extensions") if type(caps) is dict else None
    return type(found) is dict and "io.modelcontextprotocol/tasks" in found


def _warm_sdk() -> bool:
    """A client that declared the MCP Tasks extension will hand a task call on to the SDK
    path: load it in the background now, so that the call that creates a task does not
    wait for the import (the hot tools are still answered here meanwhile)."""
    import threading

    def load() -> None:
        try:  # noqa: SIM105 (contextlib is not loaded on this path)
            import todoledger.mcp.server  # noqa: F401
        except Exception:  # the hand-on imports it again and says what is wrong
            pass

    threading.Thread(target=load, name="todoledger-sdk-warm", daemon=True).start()
    return True


class Session:
    """One client's session on stdio, as far as this path answers it."""

    def __init__(self, plan: str | None) -> None:
        self.plan = plan
        self.snapshot = load()
        self.era: str | None = None
        self.initialize: dict[str, Any] | None = None  # the client's, replayed on hand-on
        self.initialized = False
        self.modern_meta: dict[str, Any] | None = None
        self.tools: PlanTools | None = None
        self.warming = False  # the SDK path loading in the background (a client that declared tasks)

    def replay(self) -> bytes:
        """The lines that put the SDK's session where this one stands."""
        lines: list[dict[str, Any]] = []
        if self.era == LEGACY and self.initialize is not None:
            lines.append(
                {"jsonrpc": "2.0", "id": REPLAY_ID, "method": "initialize", "params": self.initialize}
            )
            if self.initialized:
                lines.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
        elif self.era == MODERN and self.modern_meta is not None:
            lines.append(
                {
                    "jsonrpc": "2.0",
                    "id": REPLAY_ID,
                    "method": "server/discover",
                    "params": {"_meta": self.modern_meta},
                }
            )
        return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in lines)

    def answer(self, text: str) -> dict[str, Any] | None:
        """The reply to one line (None: a notification, nothing to say), or HandOn."""
        message = _message(text)
        method, params = message["method"], message.get("params", {})
        if "id" not in message:
            if method == "notifications/initialized" and self.era == LEGACY and not self.initialized:
                self.initialized = True
                return None
            raise HandOn
        era = self._era_of(method, params)
        if method == "initialize":
            result = self._initialize(params)
        elif method == "server/discover":
            result = self.snapshot[MODERN][method]
        elif method in LISTS:
            result = self.snapshot[era][method]
        elif method == "tools/call":
            result = self._call(era, params, text)
        else:
            raise HandOn
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    def _era_of(self, method: str, params: dict[str, Any]) -> str:
        meta = params.get("_meta")
        if method == "initialize":
            if self.era is not None or meta is not None:
                raise HandOn
            return LEGACY
        if self.era == LEGACY:
            if meta is not None or not self.initialized or method == "server/discover":
                raise HandOn  # a progress token, or a question out of turn: the SDK's to answer
            return LEGACY
        if (
            type(meta) is not dict
            or set(meta) != META_KEYS
            or meta["io.modelcontextprotocol/protocolVersion"] != MODERN_VERSION
            or type(meta["io.modelcontextprotocol/clientInfo"]) is not dict
            or type(meta["io.modelcontextprotocol/clientCapabilities"]) is not dict
        ):
            raise HandOn
        if self.era is None:
            self.era, self.modern_meta = MODERN, meta
        if not self.warming and _declares_tasks(meta["io.modelcontextprotocol/clientCapabilities"]):
            self.warming = _warm_sdk()
        return MODERN

    def _initialize(self, params: dict[str, Any]) -> Any:
        answers = self.snapshot[LEGACY]["initialize"]
        version, info = params.get("protocolVersion"), params.get("clientInfo")
        if version not in answers or type(info) is not dict or type(params.get("capabilities")) is not dict:
            raise HandOn
        if set(params) - {"protocolVersion", "clientInfo", "capabilities"}:
            raise HandOn
        self.era, self.initialize = LEGACY, params
        if not self.warming and _declares_tasks(params["capabilities"]):
            self.warming = _warm_sdk()
        return answers[version]

    def _call(self, era: str, params: dict[str, Any], text: str) -> dict[str, Any]:
        name = params.get("name")
        if name not in HOT_TOOLS or set(params) - {"name", "arguments", "_meta"}:
            raise HandOn
        if era == LEGACY:
            assert self.initialize is not None
            caps, info = self.initialize["capabilities"], self.initialize["clientInfo"]
        else:
            meta = params["_meta"]
            caps, info = (
                meta["io.modelcontextprotocol/clientCapabilities"],
                meta["io.modelcontextprotocol/clientInfo"],
            )
        if name in ASKING_TOOLS and _can_elicit(caps):
            raise HandOn  # it may ask the client's user for an approval: the SDK's elicitation
        if _declares_tasks(caps):
            from todoledger.mcp.tools import TASK_TOOLS

            if name in TASK_TOOLS:
                raise HandOn  # it may become an MCP task: the SDK path's extension (mcp/tasks.py)
        client = info.get("name")
        if type(client) is not str:
            raise HandOn
        return self._run(era, name, params, text, client)

    def _run(self, era: str, name: str, params: dict[str, Any], text: str, client: str) -> dict[str, Any]:
        """As mcp/server.py `_tool`'s call, over the same tools and rules."""
        from todoledger.core.model import LedgerError
        from todoledger.mcp.duplicates import lost_keys, remember
        from todoledger.mcp.writer import PROCESS_SESSION, client_writer, lead_writer

        if self.tools is None:
            from todoledger.mcp.tools import PlanTools

            self.tools = PlanTools(default_plan=self.plan, cwd=None, shared=None)
        tools = self.tools
        args = params.get("arguments")
        remember(text)
        lost = lost_keys(params)
        extras: dict[str, Any] = self.snapshot[era]["call"]
        writer = client_writer(client, PROCESS_SESSION)
        if lost:  # refused, and told to the person too (report, board), as the SDK path does
            refusal = tools.duplicate_refusal(name, args, lost)
            tools.note_refusal(name, args, writer, refusal)
            return _error(refusal, extras)
        try:
            args, writer = lead_writer(None, args, writer)
            data: dict[str, Any] = getattr(tools, name)(args, writer)
        except LedgerError as exc:
            tools.note_refusal(name, args, writer, str(exc))
            return _error(str(exc), extras)
        except Exception as exc:  # a bug must still answer with one sentence, never a traceback
            return _error(f"internal error in {name} ({type(exc).__name__}); the ledger is unchanged", extras)
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return {
            "content": [{"text": body, "type": "text"}],
            "isError": False,
            "structuredContent": data,
        } | extras

    def close(self) -> None:
        if self.tools is not None:
            self.tools.close()
            self.tools = None


def _error(message: str, extras: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"text": message, "type": "text"}], "isError": True} | extras


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve(plan: str | None) -> None:
    """Serve the session on stdio: here while it can, then on the SDK path."""
    # As the SDK path does: fds 0 and 1 point at the null device and at stderr while
    # serving, so that a stray write (a gate's command, a library) misses the wire.
    null = os.open(os.devnull, os.O_RDONLY)
    wire_in, wire_out = os.dup(0), os.dup(1)
    os.dup2(null, 0)
    os.dup2(2, 1)
    session = Session(plan)
    buffer = b""
    pending: bytes | None = None
    try:
        while pending is None:
            chunk = os.read(wire_in, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while pending is None:
                cut = buffer.find(b"\n")
                if cut < 0:
                    break
                line, buffer = buffer[: cut + 1], buffer[cut + 1 :]
                text = line.decode("utf-8", "replace")
                if not text.strip():
                    continue
                try:
                    reply = session.answer(text)
                except HandOn:
                    pending = line
                    continue
                if reply is not None:
                    text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
                    try:
                        _write_all(wire_out, text.encode("utf-8", "surrogatepass") + b"\n")
                    except BrokenPipeError:  # the client stopped reading: that ends the session, no error
                        buffer = b""
                        session.close()
                        return
        if pending is None and buffer.strip():
            pending = buffer  # a last line without its newline: the SDK's to read
            buffer = b""
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out, null):
            os.close(fd)
    if pending is None:
        session.close()
        return
    prefix = session.replay() + pending + buffer
    session.close()
    from todoledger.mcp.server import run_stdio

    run_stdio(plan=plan, prefix=prefix)
