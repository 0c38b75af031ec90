"""Gemini CLI session logs: `~/.gemini/tmp/<project>/chats/session-*.json(l)`.

The older `.json` is one document `{sessionId, messages}`; the newer `.jsonl`
has a metadata line, message lines (a repeated `id` replaces the message),
`{"$set": {...}}` updates and `{"$rewindTo": id}`. A call is an entry of a
message's `toolCalls` named `write_todos`; each tool call id is imported
once, so replaced and checkpointed messages do not repeat calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from todoledger.ingest.calls import Skipped, TodoCall
from todoledger.ingest.claude import timestamp
from todoledger.ingest.lines import LineCursor, candidate_lines, load, text

FORMAT = "gemini"
TOOL = "write_todos"
MARKERS = (b"write_todos",)  # the metadata line (sessionId) is the first, read whatever it holds
_HASH = re.compile(r"[0-9a-f]{64}")


def project_of(path: Path | None) -> str:
    """The project folder name: `tmp/<project>/chats/<file>`; old hashed names are shortened."""
    if path is None:
        return "gemini"
    folder = path.parent.parent.name if path.parent.name == "chats" else path.parent.name
    return f"gemini-{folder[:8]}" if _HASH.fullmatch(folder) else folder or "gemini"


class GeminiReader:
    def __init__(self, path: Path | None = None) -> None:
        self.skipped = Skipped()
        self.session = path.stem if path else "stdin"
        self.project = project_of(path)
        self._seen: set[str] = set()

    def _calls(self, message: Any, where: int | None) -> Iterator[TodoCall]:
        if not isinstance(message, dict) or not isinstance(message.get("toolCalls"), list):
            return
        for n, tc in enumerate(message["toolCalls"]):
            if not isinstance(tc, dict) or tc.get("name") != TOOL:
                continue
            key = text(tc.get("id")) or f"{text(message.get('id')) or where}-{n}"
            if key in self._seen:
                continue
            self._seen.add(key)
            yield TodoCall(
                fmt=FORMAT,
                session=self.session,
                project=self.project,
                key=key,
                at=timestamp(tc.get("timestamp") or message.get("timestamp")),
                writer=f"gemini:{self.session}",
                dialect="gemini",
                payload={"name": TOOL, "args": tc.get("args")},
                line=where,
                message=None if where is not None else text(message.get("id")),
                failed=tc.get("status") == "error",
                error=_error_text(tc) if tc.get("status") == "error" else None,
            )

    def read_document(self, data: Any) -> Iterator[TodoCall]:
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            self.skipped.add("files that are not transcripts")
            return
        self.session = text(data.get("sessionId")) or self.session
        for message in data["messages"]:
            yield from self._calls(message, None)

    def read(self, fh: IO[bytes], cursor: LineCursor | None = None) -> Iterator[TodoCall]:
        for number, raw in candidate_lines(fh, MARKERS, self.skipped, cursor, first_line=True):
            d = load(raw, self.skipped)
            if d is None:
                continue
            if "sessionId" in d and "messages" not in d and "toolCalls" not in d:
                self.session = text(d.get("sessionId")) or self.session
                continue
            if "$set" in d:
                update = d["$set"]
                if isinstance(update, dict) and isinstance(update.get("messages"), list):
                    for message in update["messages"]:  # a full checkpoint
                        yield from self._calls(message, number)
                continue
            if "$rewindTo" in d:
                continue  # the calls before it happened all the same
            if "toolCalls" in d:
                yield from self._calls(d, number)
            else:
                self.skipped.add("unknown record types")


def _error_text(tc: dict[str, Any]) -> str | None:
    display = tc.get("resultDisplay")
    return display if isinstance(display, str) else None
