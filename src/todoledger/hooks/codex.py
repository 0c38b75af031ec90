"""Codex CLI: import `update_plan` calls from the rollout on Stop and SessionStart.

Codex's hooks do not reliably see `update_plan`, but its rollout file
(`transcript_path`) records every call. Each run reads only what was
appended since the last: the byte offset and line number of the last
complete line are kept in the ledger's `cursors` table. Calls keep the same
source keys as `todoledger ingest`, so either may run first.
On SessionStart the plan's recovery text goes back as additionalContext.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from todoledger.core.timefmt import now


def _cursor_keys(path: Path) -> tuple[str, str]:
    source = f"codex-rollout:{path}"
    return source, source + "#line"


def _read_cursor(ledger: Any, path: Path) -> tuple[int, int]:
    offset_key, line_key = _cursor_keys(path)
    with ledger.store.read():
        rows = dict(
            ledger.store.query(
                "SELECT source, position FROM cursors WHERE source IN (?, ?)", (offset_key, line_key)
            )
        )
    return int(rows.get(offset_key, 0)), int(rows.get(line_key, 0))


def _save_cursor(ledger: Any, path: Path, offset: int, line: int) -> None:
    at = now()
    with ledger.store.write():
        ledger.store.executemany(
            "INSERT INTO cursors (source, position, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (source) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at",
            [(key, value, at) for key, value in zip(_cursor_keys(path), (offset, line), strict=True)],
        )


def import_new(ledger: Any, path: Path) -> str | None:
    """Import the update_plan calls appended since the last run; returns the session's plan."""
    from todoledger.ingest.calls import plan_name
    from todoledger.ingest.codex import CodexReader
    from todoledger.ingest.importer import write_calls
    from todoledger.ingest.lines import LineCursor

    path = path.resolve()
    offset, line = _read_cursor(ledger, path)
    if offset > path.stat().st_size:
        offset, line = 0, 0  # the file was replaced: start over (re-import writes nothing twice)
    reader = CodexReader(str(path))
    cursor = LineCursor(offset, line)
    with path.open("rb") as fh:
        reader.read_meta(fh)  # session id and folder sit on the first line only
        fh.seek(offset)
        write_calls(ledger, reader.read(fh, cursor), str(path), "codex", now)
    if cursor.offset != offset:
        _save_cursor(ledger, path, cursor.offset, cursor.line)
    return plan_name(reader.project, reader.session) if reader.session else None


def handle(event: dict[str, Any], cwd: Path | None) -> str | None:
    from todoledger.service import Ledger

    name = event.get("hook_event_name")
    if name not in ("Stop", "SessionStart"):
        return None
    raw = event.get("transcript_path")
    transcript = Path(raw) if isinstance(raw, str) and raw else None
    if transcript is not None and not transcript.is_file():
        transcript = None
    with Ledger(cwd=cwd, create=transcript is not None) as ledger:
        plan = import_new(ledger, transcript) if transcript is not None else None
        if name != "SessionStart":
            return None
        if plan is None or not ledger.show(plan)["items"]:
            plan = None  # nothing recorded for this session yet: recover the default plan
        text = ledger.prime(plan)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
