"""stdio for `todoledger mcp` on the event loop's own pipes.

The SDK's `stdio_server()` reads and writes the standard streams through
`anyio.wrap_file`: every line read and every write and flush of an answer is a
hop to a worker thread and back, about a dozen per call: a noticeable part of
a warm round trip (see bench/bench_mcp.py). When stdin and stdout are
pipes or sockets, this module hands `stdio_server()` the same
streams read and written by the asyncio loop itself; anything else (a
terminal, a regular file redirected to stdin) keeps the SDK's threads.

As the SDK does, the process's fds 0 and 1 are pointed at the null device and
at stderr while serving, so that a child's or a library's stray output cannot
corrupt the wire, and are restored on exit.

A line the SDK's parser refuses (nested too deeply, a lone surrogate, not JSON)
is dropped by the SDK without a word, and a client waiting for its answer
hangs; over HTTP the same body gets a 400. Each line is parsed once here with
the SDK's own parser (pydantic's), and a refused one is answered with a
JSON-RPC error (`refusal`) and never handed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from mcp.server.stdio import stdio_server
from pydantic_core import from_json

from todoledger.mcp.duplicates import remember

PARSE_ERROR = -32700  # JSON-RPC: the line is not JSON the server can read

# One JSON-RPC message per line, up to LINE_CAP: asyncio's default limit of 64 KiB
# would refuse a long list, and no limit at all lets one line take the memory of
# the agent's machine. A longer line is answered with an error before it is parsed
# (and its bytes are dropped as they come, never kept whole).
LINE_CAP = 8 << 20  # 8 MiB
LINE_LIMIT = LINE_CAP + 1
# How long a client that closed stdin may wait for the answers to what it asked before.
EOF_GRACE_SECONDS = 60.0


class _Asked:
    """The client's requests not answered yet. The SDK ends the session, and
    drops the answers in flight, as soon as stdin ends; a client that writes
    its calls and closes its end (`printf ... | todoledger mcp`) would see a
    write applied and never hear of it."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.none_left = asyncio.Event()
        self.none_left.set()

    def read(self, message: dict[str, Any] | None) -> None:
        if message is None:
            return
        if "method" in message and "id" in message:
            if message["method"] == "subscriptions/listen":
                return  # a stream, answered only when it ends: the end of stdin ends it
            self.ids.add(json.dumps(message["id"]))
            self.none_left.clear()
        elif message.get("method") == "notifications/cancelled":  # no answer will come
            params = message.get("params")
            if isinstance(params, dict):
                self._done(json.dumps(params.get("requestId")))

    def written(self, text: str) -> None:
        message = parse(text)[0] if self.ids else None
        if message is not None and "method" not in message and ("result" in message or "error" in message):
            self._done(json.dumps(message.get("id")))

    def _done(self, key: str) -> None:
        self.ids.discard(key)
        if not self.ids:
            self.none_left.set()


def parse(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The message a line holds, parsed as the SDK parses it (None if it is no
    object), and the JSON-RPC error that answers a line the SDK's parser
    refuses (None when it reads it, or when the line is blank: nothing asked).

    The error carries the request's id where the standard library's more
    lenient parser finds one (a lone surrogate, nesting deeper than the SDK's
    parser goes), so that the client's call ends; else the id is null."""
    try:
        found = from_json(text)
    except ValueError as exc:
        return None, (None if not text.strip() else _refusal(text, str(exc)))
    why = _not_a_message(found)
    if why is not None:
        return None, _invalid(found, why)
    return found, None


INVALID_REQUEST = -32600  # JSON-RPC: JSON, but no message the protocol knows


def _not_a_message(found: Any) -> str | None:
    """Why JSON the SDK reads is no JSON-RPC message it would answer: the SDK
    drops such a line without a word (a batch, no `"jsonrpc": "2.0"`, an id
    that is no string or number), and the client would wait for ever."""
    if not isinstance(found, dict):
        return "a message is one JSON object (MCP has no batches)"
    if found.get("jsonrpc") != "2.0":
        return 'a message says "jsonrpc": "2.0"'
    ident = found.get("id")
    if "id" in found and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        return "an id is a string or a whole number"
    if "method" not in found and "result" not in found and "error" not in found:
        return "a message has a method, a result or an error"
    return None


def _invalid(found: Any, why: str) -> str:
    ident = found.get("id") if isinstance(found, dict) else None
    ident = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None
    error = {"code": INVALID_REQUEST, "message": f"Invalid request: {why}; nothing was done"}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}, separators=(",", ":"))


def _refusal(text: str, parser_said: str) -> str:
    try:
        lenient = json.loads(text)
    except (ValueError, RecursionError):
        lenient = None
    if "recursion limit" in parser_said:
        why = "the message is nested too deeply to read"
    else:
        why = _unicode_why(lenient) or f"not a JSON message the server can read ({parser_said})"
    found = lenient.get("id") if isinstance(lenient, dict) else None
    ident = found if isinstance(found, str | int) and not isinstance(found, bool) else None
    error = {"code": PARSE_ERROR, "message": f"Parse error: {why}; nothing was done"}
    return json.dumps(
        {"jsonrpc": "2.0", "id": ident, "error": error}, separators=(",", ":")
    )  # ASCII: an id escaped


def _unicode_why(message: Any) -> str | None:
    """Where the message holds text that is not valid Unicode (a lone surrogate), if it does."""
    from todoledger.core.unicode import unicode_findings

    findings = unicode_findings(message) if isinstance(message, dict) else []
    return f"{findings[0].where} is {findings[0].message}" if findings else None


class _Lines:
    """The async iterator of text lines that `stdio_server(stdin=)` reads."""

    def __init__(self, reader: asyncio.StreamReader, asked: _Asked, out: _Out) -> None:
        self._reader = reader
        self._asked = asked
        self._out = out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError as exc:  # past LINE_LIMIT: asyncio dropped what it held of the line
                if "is not found" in str(exc):  # its newline is still to come: drop the rest as it comes
                    await self._drop_rest_of_line()
                await self._out.write(too_long() + "\n")
                await self._out.flush()
                continue
            if not line:
                # The client closed its end: first answer what it asked.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._asked.none_left.wait(), EOF_GRACE_SECONDS)
                raise StopAsyncIteration
            text = line.decode("utf-8", "replace")
            if await _handed_on(text, self._asked, self._out):
                return text

    async def _drop_rest_of_line(self) -> None:
        """Read and drop the long line's remaining bytes, up to its newline."""
        while True:
            try:
                await self._reader.readline()
            except ValueError as exc:
                if "is not found" in str(exc):
                    continue  # another LINE_LIMIT of it, dropped
            return


def too_long() -> str:
    """The JSON-RPC error for a line over LINE_CAP (no id: the line was never parsed)."""
    error = {
        "code": INVALID_REQUEST,
        "message": f"Invalid request: a line over {LINE_CAP >> 20} MiB was dropped unread; nothing was done",
    }
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}, separators=(",", ":"))


async def _handed_on(text: str, asked: _Asked, out: _Out | _ThreadedOut) -> bool:
    """Whether the SDK gets this line: a line its parser refuses is answered here instead."""
    message, refused = parse(text)
    if refused is not None:
        await out.write(refused + "\n")
        await out.flush()
        return False
    asked.read(message)
    remember(text)  # for the duplicate-key check of this message's tool call
    return True


class _Out:
    """The `write` and `flush` that `stdio_server(stdout=)` calls (one write
    per line on the loop's own transport: the SDK's answers and the refusals
    of `_handed_on` never interleave)."""

    def __init__(self, writer: asyncio.StreamWriter, asked: _Asked, acked: set[str]) -> None:
        self._writer = writer
        self._asked = asked
        self._acked = acked

    async def write(self, text: str) -> None:
        if not _replayed(text, self._acked):
            self._writer.write(text.encode("utf-8"))
        self._asked.written(text)

    async def flush(self) -> None:
        await self._writer.drain()


# The id of the requests the lean path replays to the SDK when it hands a session on
# (`mcp/lean.py`): the handshake the client made with the lean path, already answered.
REPLAY_ID = "todoledger-lean-replay"
_REPLAY_MARK = f'"id":"{REPLAY_ID}"'


_ACK = "notifications/subscriptions/acknowledged"


def _replayed(text: str, acked: set[str]) -> bool:
    """Is this the SDK's answer to a replayed request (the client has had its answer)?
    `acked`: the subscriptions the lean path acknowledged (JSON of their ids), whose
    replayed listen the SDK acknowledges once more; each such ack is dropped once."""
    if _REPLAY_MARK in text:
        return (parse(text)[0] or {}).get("id") == REPLAY_ID
    if not acked or _ACK not in text:
        return False
    message = parse(text)[0] or {}
    params = message.get("params")
    if (
        message.get("method") != _ACK
        or not isinstance(params, dict)
        or not isinstance(params.get("_meta"), dict)
    ):
        return False
    key = json.dumps(params["_meta"].get("io.modelcontextprotocol/subscriptionId"))
    if key not in acked:
        return False
    acked.discard(key)
    return True


def _pipe_like(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    # Not a terminal: its non-blocking flag is shared with the shell, which a
    # killed server could not hand back (an agent spawns its servers on pipes).
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` for the wire; `fd` itself now points at `diversion`."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(diversion, fd)
    return private


class _ThreadedLines:
    """The lines of stdin, read by a worker thread as the SDK reads them, each
    screened by `_handed_on`; at the end of stdin the answers still owed are
    awaited, as `_Lines` awaits them."""

    def __init__(self, lines: Any, asked: _Asked, out: _ThreadedOut, prefix: list[str]) -> None:
        self._lines = lines
        self._asked = asked
        self._out = out
        self._prefix = prefix

    def __aiter__(self) -> _ThreadedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                text: str = self._prefix.pop(0) if self._prefix else await self._lines.__anext__()
            except StopAsyncIteration:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._asked.none_left.wait(), EOF_GRACE_SECONDS)
                raise
            if len(text) > LINE_CAP:  # read by a worker thread already; still never parsed
                await self._out.write(too_long() + "\n")
                await self._out.flush()
                continue
            if await _handed_on(text, self._asked, self._out):
                return text


class _ThreadedOut:
    """The `write` and `flush` of a worker thread's stdout, seen by `_Asked`;
    one write at a time (a refusal of `_handed_on` and an answer of the SDK
    would otherwise be written by two threads at once)."""

    def __init__(self, out: Any, asked: _Asked, acked: set[str]) -> None:
        self._out = out
        self._asked = asked
        self._acked = acked
        self._one = asyncio.Lock()

    async def write(self, text: str) -> None:
        if not _replayed(text, self._acked):
            async with self._one:
                await self._out.write(text)
        self._asked.written(text)

    async def flush(self) -> None:
        async with self._one:
            await self._out.flush()


@contextlib.asynccontextmanager
async def _threaded_stdio(prefix: bytes, acked: set[str]) -> AsyncIterator[tuple[Any, Any]]:
    """A terminal or a regular file on stdin: read and written by worker
    threads, as the SDK does it, with fds 0 and 1 pointed at the null device
    and at stderr while serving (as the pipe path does)."""
    import io

    import anyio

    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    wire_in = wire_out = -1
    try:
        wire_in = _claim(0, null)
        wire_out = _claim(1, 2)
        asked = _Asked()
        reader = io.TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace")
        writer = io.TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
        out = _ThreadedOut(anyio.wrap_file(writer), asked, acked)
        first = prefix.decode("utf-8", "replace").splitlines(keepends=True)
        lines = _ThreadedLines(anyio.wrap_file(reader).__aiter__(), asked, out, first)
        async with stdio_server(stdin=lines, stdout=out) as streams:  # type: ignore[arg-type]
            yield streams
        writer.flush()
    finally:
        # wire_in is left open: a worker thread may still be blocked reading it
        # (a terminal), and a closed number could be reused under it.
        if wire_in >= 0:
            os.dup2(wire_in, 0)
        if wire_out >= 0:
            os.dup2(wire_out, 1)
            os.close(wire_out)
        os.close(null)


@contextlib.asynccontextmanager
async def serve_stdio(prefix: bytes = b"", acked: Sequence[str | int] = ()) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's (read_stream, write_stream) pair over this process's stdin and stdout.
    `prefix`: what to read before stdin (the lean path's replayed handshake and the
    lines it read but did not answer; `mcp/lean.py`); `acked`: the ids of the
    subscriptions/listen requests in it that the lean path has acknowledged."""
    owed = {json.dumps(i) for i in acked}
    if not (_pipe_like(0) and _pipe_like(1)):
        async with _threaded_stdio(prefix, owed) as streams:
            yield streams
        return
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    wire_in = wire_out = -1
    try:
        wire_in = _claim(0, null)
        wire_out = _claim(1, 2)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        if prefix:
            reader.feed_data(prefix)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0, closefd=False)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0, closefd=False)
        )
        # A flush returns once the pipe has taken every byte, as the SDK's blocking
        # write does: nothing of an answer is left in a buffer when the server exits.
        transport.set_write_buffer_limits(high=0)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        try:
            asked = _Asked()
            out = _Out(writer, asked, owed)
            async with stdio_server(stdin=_Lines(reader, asked, out), stdout=out) as streams:  # type: ignore[arg-type]
                yield streams
        finally:
            transport.close()
    finally:
        for fd, private in ((0, wire_in), (1, wire_out)):
            if private >= 0:
                # asyncio made the shared file description non-blocking: a
                # terminal or pipe handed back to the parent must block again.
                os.set_blocking(private, True)
                os.dup2(private, fd)
                os.close(private)
        os.close(null)
