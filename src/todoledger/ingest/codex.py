"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Each line is `{"timestamp", "type", "payload"}`; a plan update is a
`response_item` whose payload is a `function_call` named `update_plan` with
`arguments` as a JSON string. Rollouts from before the envelope (Codex
0.1x-0.2x) hold the items at top level; both are read. The first line,
`session_meta`, names the session and its working folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from todoledger.ingest.calls import Skipped, TodoCall, project_name
from todoledger.ingest.claude import timestamp
from todoledger.ingest.lines import LineCursor, candidate_lines, load, text

FORMAT = "codex"
# session_meta is the first line, read whatever it holds; a call's answer is a
# function_call_output line, read only while an update_plan call waits for one.
MARKERS = (b"update_plan", b"_goal", b"function_call_output")
# Goals (create_goal/update_goal) are bridged into goal items (todoledger.ingest.bridges).
CALLS = {"update_plan": "codex", "create_goal": "codex-goal", "update_goal": "codex-goal"}
# What Codex answers a plan update it did not apply ("unsupported call: update_plan"
# since update_plan became opt-in; "failed to parse function arguments" on bad JSON).
_REFUSED = re.compile(r"^\s*(unsupported call|failed to parse|error\b)", re.IGNORECASE)
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
META_MAX_BYTES = 4 * 1024 * 1024  # session_meta carries the instructions; still one line


class CodexReader:
    def __init__(self, name: str = "") -> None:
        self.skipped = Skipped()
        self.session = _session_from_name(name)
        self.project = "unknown"

    def meta(self, d: dict[str, Any]) -> None:
        payload = d.get("payload") if isinstance(d.get("payload"), dict) else d
        assert isinstance(payload, dict)
        self.session = text(payload.get("id")) or self.session
        self.project = project_name(text(payload.get("cwd"))) if payload.get("cwd") else self.project

    def read_meta(self, fh: IO[bytes]) -> None:
        """Read the first line for the session's id and folder (the hook starts mid-file)."""
        first = fh.readline(META_MAX_BYTES)
        if first.endswith(b"\n") and (b"session_meta" in first or first.startswith(b'{"id"')):
            record = load(first, Skipped())
            if record is not None:
                self.meta(record)

    def read(self, fh: IO[bytes], cursor: LineCursor | None = None) -> Iterator[TodoCall]:
        """update_plan calls in order, each once Codex answered it (a refused one
        marked failed), or at the end of the file if its answer is not there yet."""
        waiting: dict[str, TodoCall] = {}  # call id -> call, in the order of the calls
        answered: set[str] = set()
        # The first line names the session: session_meta, or {"id", "instructions"} in the oldest rollouts.
        for number, raw in candidate_lines(fh, MARKERS, self.skipped, cursor, first_line=True):
            if (
                number > 1
                and b"update_plan" not in raw
                and b"_goal" not in raw
                and not any(key.encode() in raw for key in waiting)
            ):
                continue  # another tool's output
            d = load(raw, self.skipped)
            if d is None:
                continue
            kind = d.get("type")
            if kind == "session_meta" or (number == 1 and "instructions" in d and "id" in d):
                self.meta(d)
                continue
            if "payload" in d:
                if kind not in RECORD_TYPES:
                    self.skipped.add("unknown record types")
                    continue
                item = d.get("payload")
            else:
                item = d  # rollouts before the {timestamp, type, payload} envelope
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output":
                call_id = text(item.get("call_id")) or ""
                if call_id in waiting:
                    _answer(waiting[call_id], item.get("output"))
                    answered.add(call_id)
                    yield from _flush(waiting, answered)
                continue
            if item.get("type") != "function_call" or item.get("name") not in CALLS:
                continue
            key = text(item.get("call_id")) or text(item.get("id")) or f"line{number}"
            waiting[key] = TodoCall(
                fmt=FORMAT,
                session=self.session,
                project=self.project,
                key=key,
                at=timestamp(d.get("timestamp")),
                writer=f"codex:{self.session}",
                dialect=CALLS[str(item["name"])],
                payload=item,
                line=number,
            )
        yield from waiting.values()  # unanswered so far (the file ends, or the answer was never written)


def _answer(call: TodoCall, output: Any) -> None:
    """Mark a call with Codex's answer: a refusal means the plan did not change."""
    message = output.get("content") if isinstance(output, dict) else output
    refused = (isinstance(output, dict) and output.get("success") is False) or (
        isinstance(message, str) and _REFUSED.match(message) is not None
    )
    if refused:
        call.failed = True
        call.error = message if isinstance(message, str) else None


def _flush(waiting: dict[str, TodoCall], answered: set[str]) -> Iterator[TodoCall]:
    """Answered calls from the front, keeping the calls' order."""
    while waiting:
        key = next(iter(waiting))
        if key not in answered:
            return
        answered.discard(key)
        yield waiting.pop(key)


def _session_from_name(name: str) -> str:
    """rollout-2025-09-25T09-49-46-<uuid>.jsonl -> <uuid> until session_meta says."""
    stem = Path(name).stem if name else "stdin"
    parts = stem.split("-")
    return "-".join(parts[-5:]) if stem.startswith("rollout-") and len(parts) >= 9 else stem
