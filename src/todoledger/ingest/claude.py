"""Claude Code transcripts: `~/.claude/projects/<project>/<session>.jsonl`.

A call is a `tool_use` block (TodoWrite, TaskCreate, TaskUpdate) in an
assistant line; its result sits on a later user line (`tool_result` plus a
line-level `toolUseResult`: `{oldTodos, newTodos}` or, for TaskCreate, the
new task's id, which the ledger needs). A call is therefore held until its
result line is seen, or until a bounded number of lines have passed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from todoledger.core.timefmt import normalise
from todoledger.ingest.calls import Skipped, TodoCall, project_name
from todoledger.ingest.lines import LineCursor, Scanner, load, text

FORMAT = "claude"
TOOLS = {
    "TodoWrite": "claude-code",
    "TaskCreate": "claude-tasks",
    "TaskUpdate": "claude-tasks",
    "ExitPlanMode": "claude-plan",  # a plan approved in plan mode (todoledger.ingest.bridges)
}
RECORD_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
)
# Every todo tool name and `newTodos` hold one of these; their shared first
# byte lets one regex pass find them at memchr speed.
MARKERS = (b"Todo", b"Task", b"ExitPlanMode")
# A result comes within a few lines of its call; past this, stop waiting.
RESULT_WINDOW = 500
MAX_PENDING = 64


def timestamp(value: Any) -> str | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return normalise(value)
    except (ValueError, OverflowError, OSError):
        return None


class _Pending:
    def __init__(self, call: TodoCall, line: int) -> None:
        self.call = call
        self.line = line
        self.done = False


class ClaudeReader:
    def __init__(self, name: str = "") -> None:
        self.skipped = Skipped()
        self.fallback_session = Path(name).stem if name else "stdin"
        self.fallback_project = Path(name).parent.name if name else "unknown"
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._seen: set[str] = set()
        self._scan: Scanner | None = None
        self._projects: dict[str, str] = {}  # session -> project

    def read(self, fh: IO[bytes], cursor: LineCursor | None = None) -> Iterator[TodoCall]:
        self._scan = Scanner(MARKERS, self.skipped, cursor)
        for number, raw in self._scan.lines(fh):
            record = load(raw, self.skipped)
            if record is not None:
                self._record(record, number)
            yield from self._ready(number)
        yield from self._ready(None)

    def _record(self, d: dict[str, Any], number: int) -> None:
        kind = d.get("type")
        if kind not in RECORD_TYPES:
            self.skipped.add("unknown record types")
            return
        session = text(d.get("sessionId"))
        if session is not None and text(d.get("cwd")):
            self._project(d, session)
        message = d.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if not isinstance(blocks, list):
            return
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") in TOOLS:
                self._call(d, block, number)
            elif block.get("type") == "tool_result":
                self._result(d, block, number)

    def _writer(self, d: dict[str, Any], session: str, dialect: str) -> str:
        writer = f"claude-code:{session}"
        if d.get("isSidechain") is True and dialect == "claude-code":
            # Subagents write their own TodoWrite lists: keep them apart from the main
            # agent's. Task ids belong to the session's one task list, which subagents
            # share, so their Task calls write as the session (as the live hook does).
            return f"{writer}:{text(d.get('agentId')) or 'sidechain'}"
        return writer

    def _project(self, d: dict[str, Any], session: str) -> str:
        """The session's project, fixed by the first line read that has a `cwd`: a `cd`
        mid-session changes the cwd of later lines but not the session's plan."""
        project = self._projects.get(session)
        if project is None:
            folder = text(d.get("cwd"))
            project = project_name(folder) if folder else self.fallback_project
            self._projects[session] = project
        return project

    def _call(self, d: dict[str, Any], block: dict[str, Any], number: int) -> None:
        key = text(block.get("id")) or f"line{number}"
        if key in self._seen:
            return  # one message split over several lines repeats its blocks
        self._seen.add(key)
        call = self._new_call(d, key, number, TOOLS[str(block["name"])], block)
        self._pending[key] = _Pending(call, number)
        if self._scan is not None:
            self._scan.watch(key.encode())  # its result line may hold no marker of its own

    def _result(self, d: dict[str, Any], block: dict[str, Any], number: int) -> None:
        key = text(block.get("tool_use_id"))
        result = d.get("toolUseResult")
        if key is None:
            return
        pending = self._pending.get(key)
        if pending is not None:
            pending.done = True
            pending.call.failed = block.get("is_error") is True
            if pending.call.failed:
                pending.call.error = _result_text(block.get("content"))
            if isinstance(result, dict):
                pending.call.response = result
                if not isinstance(pending.call.payload.get("input"), dict) and isinstance(
                    result.get("newTodos"), list
                ):
                    pending.call.payload = {"todos": result["newTodos"]}
            return
        if key not in self._seen and isinstance(result, dict) and isinstance(result.get("newTodos"), list):
            # The call's own line is missing (cut or compacted away): its result still says the list.
            self._seen.add(key)
            call = self._new_call(d, key, number, "claude-code", {"todos": result["newTodos"]})
            call.response = result
            entry = _Pending(call, number)
            entry.done = True
            self._pending[key] = entry

    def _new_call(
        self, d: dict[str, Any], key: str, number: int, dialect: str, payload: dict[str, Any]
    ) -> TodoCall:
        session = text(d.get("sessionId")) or self.fallback_session
        return TodoCall(
            fmt=FORMAT,
            session=session,
            project=self._project(d, session),
            key=key,
            at=timestamp(d.get("timestamp")),
            writer=self._writer(d, session, dialect),
            dialect=dialect,
            payload=payload,
            line=number,
        )

    def _ready(self, number: int | None) -> Iterator[TodoCall]:
        """Calls in transcript order once answered, waited for too long, or at the end."""
        while self._pending:
            key, head = next(iter(self._pending.items()))
            waited_out = number is None or number - head.line > RESULT_WINDOW
            if not (head.done or waited_out or len(self._pending) > MAX_PENDING):
                return
            del self._pending[key]
            if self._scan is not None:
                self._scan.unwatch(key.encode())
            yield head.call


def _result_text(content: Any) -> str | None:
    """A tool result's text: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return " ".join(parts) or None
    return None
