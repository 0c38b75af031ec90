"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Each line is `{"timestamp", "type", "payload"}`; a plan update is a
`response_item` whose payload is a `function_call` named `update_plan` with
`arguments` as a JSON string. Rollouts from before the envelope (Codex
0.1x-0.2x) hold the items at top level; both are read. The first line,
`session_meta`, names the session and its working folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from todoledger.ingest.calls import Skipped, TodoCall, project_name
from todoledger.ingest.claude import timestamp
from todoledger.ingest.lines import LineCursor, candidate_lines, load, text

FORMAT = "codex"
MARKERS = (b"update_plan",)  # session_meta is the first line, read whatever it holds
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
        # The first line names the session: session_meta, or {"id", "instructions"} in the oldest rollouts.
        for number, raw in candidate_lines(fh, MARKERS, self.skipped, cursor, first_line=True):
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
            if not isinstance(item, dict) or item.get("type") != "function_call":
                continue
            if item.get("name") != "update_plan":
                continue
            key = text(item.get("call_id")) or text(item.get("id")) or f"line{number}"
            yield TodoCall(
                fmt=FORMAT,
                session=self.session,
                project=self.project,
                key=key,
                at=timestamp(d.get("timestamp")),
                writer=f"codex:{self.session}",
                dialect="codex",
                payload=item,
                line=number,
            )


def _session_from_name(name: str) -> str:
    """rollout-2025-09-25T09-49-46-<uuid>.jsonl -> <uuid> until session_meta says."""
    stem = Path(name).stem if name else "stdin"
    parts = stem.split("-")
    return "-".join(parts[-5:]) if stem.startswith("rollout-") and len(parts) >= 9 else stem
