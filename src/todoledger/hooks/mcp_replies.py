"""Which items a session completed through todoledger's MCP tools, as the
agent's own transcript records them (for the Stop gate).

A completion through the MCP server carries the server's writer (`mcp:...`),
which names no agent session; the transcript that the agent hands its Stop
hook does. Only successful replies of todoledger's tools count: todowrite's
`ids` beside the statuses of its `todos`, plan_update's `item` when completed.
A reply the agent marks as an error, or that is not such a reply, counts nothing.

One reading for the three transcripts, each a line-per-record file:
- Claude Code JSONL: `tool_use` blocks named `mcp__todoledger__<tool>` in an
  assistant line, answered by `tool_result` blocks (`is_error`) of a later line;
- Codex rollout JSONL (the Stop hook's `transcript_path`): `function_call` items
  named `mcp__todoledger__<tool>` (older) or `<tool>` in namespace
  `mcp__todoledger` (0.17x), answered by `function_call_output` (the reply's
  text, after "Wall time: ...\\nOutput:" in 0.17x, as a string or as content
  items); 0.17x also writes an `item_completed` event whose `McpToolCall` item
  holds the reply with `isError` and `structuredContent`;
- Gemini CLI chat JSONL (AfterAgent's `transcript_path`): message records whose
  `toolCalls` hold `mcp_todoledger_<tool>` with `status` and the reply text as
  `resultDisplay` (also inside `$set` checkpoints); the older single-document
  `.json` is read whole when it is within the size bound.

Only the last MAX_TRANSCRIPT_BYTES are read and only lines holding a marker are
parsed: the hook has seconds. Anything unreadable is passed over; nothing here
raises. Stdlib only: the hook path stays lean.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, BinaryIO

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # read at most the last 64 MB: the hook has seconds, not minutes
SERVER = "todoledger"  # the server name `todoledger install` writes
TOOLS = frozenset({"todowrite", "plan_update"})  # the tools whose replies complete items
_CALL = f"{SERVER}__".encode()  # in mcp__todoledger__T (and todoledger__T)
_NAMESPACE = f"mcp__{SERVER}".encode()  # Codex's namespace, or the start of mcp__todoledger__T
_GEMINI_CALL = f"mcp_{SERVER}_".encode()


def completions(agent: str, path: str) -> set[str]:
    """Item ids the session behind `path` completed through todoledger's MCP tools."""
    kind = READERS.get(agent)
    if kind is None:
        return set()
    reader = kind()
    try:
        with open(path, "rb") as fh:
            if isinstance(reader, Gemini) and path.endswith(".json"):
                reader.document(fh)
                return reader.found
            for line in _tail(fh):
                if reader.wants(line):
                    record = _load(line)
                    if isinstance(record, dict):
                        reader.take(record)
    except (OSError, RecursionError, ValueError):
        pass  # unreadable: what was found so far
    except Exception as exc:  # a shape no reader foresaw must not cost the agent its stop
        from todoledger.hooks import log

        log(f"stop gate: reading {path}: {type(exc).__name__}: {exc}")
    return reader.found


def _tail(fh: BinaryIO) -> Iterator[bytes]:
    size = os.fstat(fh.fileno()).st_size
    if size > MAX_TRANSCRIPT_BYTES:
        fh.seek(size - MAX_TRANSCRIPT_BYTES)
        fh.readline()  # from the next whole line
    yield from fh


def _load(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def tool_of(name: Any, namespace: Any = None) -> str | None:
    """The todoledger tool an agent's name for it stands for: `mcp__todoledger__T`
    (Claude Code, older Codex), `T` in namespace `mcp__todoledger` (Codex 0.17x),
    `mcp_todoledger_T` (Gemini CLI), `todoledger__T` (older Gemini CLI)."""
    if not isinstance(name, str):
        return None
    if namespace == f"mcp__{SERVER}":
        tool = name
    elif name.startswith(f"mcp_{SERVER}_"):
        tool = name[len(SERVER) + 5 :]
    elif f"{SERVER}__" in name:
        tool = name.rsplit("__", 1)[-1]
    else:
        return None
    return tool if tool in TOOLS else None


def completed(tool: str, reply: Any) -> list[str]:
    """The ids a successful reply of `tool` shows completed."""
    if not isinstance(reply, dict):
        return []
    if tool == "plan_update":
        item = reply.get("item")
        if isinstance(item, dict) and item.get("status") == "completed" and isinstance(item.get("id"), str):
            return [item["id"]]
        return []
    ids, todos = reply.get("ids"), reply.get("todos")
    if isinstance(ids, list) and isinstance(todos, list) and len(ids) == len(todos):
        return [
            i
            for i, t in zip(ids, todos, strict=True)
            if isinstance(i, str) and isinstance(t, dict) and t.get("status") == "completed"
        ]
    return []


def reply_of(output: Any) -> Any:
    """The tool's JSON reply from what the agent recorded of it: the text itself,
    Codex's "Wall time: ...\\nOutput:\\n<text>", Gemini's `<untrusted_context>`
    wrapping, or MCP content blocks (`[{"type": "text", "text": ...}]`, also as a
    JSON string)."""
    if isinstance(output, list):  # Codex 0.17x: ["Wall time: ...\nOutput:", <the text>]
        output = "\n".join(
            b["text"] for b in output if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    if not isinstance(output, str):
        return None
    text = output.strip()
    if text.startswith("Wall time:"):
        text = text.partition("\nOutput:")[2].strip()
    if text.startswith("<untrusted_context") and text.endswith("</untrusted_context>"):
        text = text[text.find(">") + 1 : -len("</untrusted_context>")].strip()
    value = _load(text) if text[:1] in ("{", "[") else None
    return reply_of(value) if isinstance(value, list) else value


class Reader:
    """What a transcript's lines say: calls waiting for their reply (call id ->
    tool) and the items found completed."""

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.found: set[str] = set()

    def wants(self, line: bytes) -> bool:
        """Whether the line may hold a todoledger call or its answer: byte tests
        only, so that the other lines (nearly all) are never parsed."""
        raise NotImplementedError

    def take(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def call(self, call_id: Any, tool: str | None) -> None:
        if tool is not None and isinstance(call_id, str):
            self.calls[call_id] = tool

    def reply(self, tool: str | None, reply: Any) -> None:
        if tool is not None:
            self.found.update(completed(tool, reply))


class Claude(Reader):
    def wants(self, line: bytes) -> bool:
        return (_CALL in line and b"tool_use" in line) or bool(self.calls and b"tool_use_id" in line)

    def take(self, record: dict[str, Any]) -> None:
        message = record.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                self.call(block.get("id"), tool_of(block.get("name")))
            elif block.get("type") == "tool_result" and block.get("is_error") is not True:
                self.reply(self.calls.get(str(block.get("tool_use_id"))), reply_of(block.get("content")))


class Codex(Reader):
    def wants(self, line: bytes) -> bool:
        return (
            (_NAMESPACE in line and b'"function_call"' in line)  # the call, in its namespace or named so
            or b"McpToolCall" in line  # the event with the call and its reply
            or bool(self.calls and b"function_call_output" in line)
        )

    def take(self, record: dict[str, Any]) -> None:
        payload = record.get("payload", record)  # rollouts before the {timestamp, type, payload} envelope
        if not isinstance(payload, dict):
            return
        kind = payload.get("type")
        if kind == "function_call":
            self.call(payload.get("call_id"), tool_of(payload.get("name"), payload.get("namespace")))
        elif kind == "function_call_output":
            output = payload.get("output")
            if isinstance(output, dict):  # {content, success} in some versions
                if output.get("success") is False:
                    return
                output = output.get("content")
            self.reply(self.calls.get(str(payload.get("call_id"))), reply_of(output))
        elif kind == "item_completed":
            item = payload.get("item")
            if (
                not isinstance(item, dict)
                or item.get("type") != "McpToolCall"
                or item.get("server") != SERVER
            ):
                return
            result = item.get("result")
            if item.get("status") != "completed" or not isinstance(result, dict) or result.get("isError"):
                return
            tool = item.get("tool")
            structured = result.get("structuredContent")
            reply = structured if isinstance(structured, dict) else reply_of(result.get("content"))
            self.reply(tool if tool in TOOLS else None, reply)


class Gemini(Reader):
    def wants(self, line: bytes) -> bool:
        shell = b"run_shell_command" in line and b"todoledger" in line and b"done" in line
        return b"toolCalls" in line and (_GEMINI_CALL in line or _CALL in line or shell)

    def take(self, record: dict[str, Any]) -> None:
        update = record.get("$set")
        if isinstance(update, dict) and isinstance(update.get("messages"), list):
            for message in update["messages"]:  # a full checkpoint
                self.message(message)
        else:
            self.message(record)

    def document(self, fh: BinaryIO) -> None:
        """The older chat file: one JSON document {sessionId, messages}."""
        if os.fstat(fh.fileno()).st_size > MAX_TRANSCRIPT_BYTES:
            return
        data = _load(fh.read())
        messages = data.get("messages") if isinstance(data, dict) else None
        for message in messages if isinstance(messages, list) else []:
            self.message(message)

    def message(self, message: Any) -> None:
        calls = message.get("toolCalls") if isinstance(message, dict) else None
        for tc in calls if isinstance(calls, list) else []:
            if not isinstance(tc, dict) or tc.get("status") != "success":
                continue
            if tc.get("name") == "run_shell_command":
                # Gemini's shell names no session (GEMINI_CLI=1 only): the session's own
                # `todoledger done ID` commands say which items it completed from its shell.
                args = tc.get("args")
                command = args.get("command") if isinstance(args, dict) else None
                self.found.update(shell_done(command) if isinstance(command, str) else [])
                continue
            tool = tool_of(tc.get("name"))
            reply = reply_of(tc.get("resultDisplay"))
            if reply is None:  # the text the model got: result[].functionResponse.response.output
                parts = tc.get("result")
                for part in parts if isinstance(parts, list) else []:
                    response = part.get("functionResponse") if isinstance(part, dict) else None
                    answer = response.get("response") if isinstance(response, dict) else None
                    if isinstance(answer, dict):
                        reply = reply_of(answer.get("output"))
            self.reply(tool, reply)


_DONE_VALUES = frozenset({"--token", "--reason", "--metric", "--evidence", "--plan", "--writer"})


def shell_done(command: str) -> list[str]:
    """The item ids of the `todoledger done ID` commands in a shell command line."""
    import shlex

    try:
        words = shlex.split(command.replace(";", " ; ").replace("&&", " ; ").replace("||", " ; "))
    except ValueError:
        return []
    found: list[str] = []
    for n, word in enumerate(words):
        if word.rsplit("/", 1)[-1] not in ("todoledger", "todoledger.exe") or words[n + 1 : n + 2] != [
            "done"
        ]:
            continue
        rest = iter(words[n + 2 :])
        for arg in rest:
            if arg in (";", "|", "&"):
                break
            if arg in _DONE_VALUES:
                next(rest, None)
            elif not arg.startswith("-"):
                found.append(arg)
                break
    return found


READERS: dict[str, type[Reader]] = {"claude-code": Claude, "codex": Codex, "gemini": Gemini}
