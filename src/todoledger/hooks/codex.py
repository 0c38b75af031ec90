"""Codex CLI: import `update_plan` calls from the rollout on Stop and SessionStart.

Codex's hooks do not reliably see `update_plan`, but its rollout file
(`transcript_path`) records every call. Each run reads only what was
appended since the last: the byte offset and line number of the last
complete line are kept in the ledger's `cursors` table, with a fingerprint
of the file, so a file replaced by another (even a longer one) is read from
the start rather than mid-line. Calls keep the same source keys as
`todoledger ingest`, so either may run first.
On SessionStart the plan's recovery text goes back as additionalContext.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import IO, Any

from todoledger.core.timefmt import now

FINGERPRINT_BYTES = 256


def _cursor_keys(path: Path) -> tuple[str, str]:
    source = f"codex-rollout:{path}"
    return source, source + "#line"


def fingerprint(fh: IO[bytes]) -> str:
    """What identifies the file the offset points into: its first line (the
    session_meta, which names the session), up to 256 bytes. It stays the same
    while Codex appends; a file put in its place shows another."""
    fh.seek(0)
    head = fh.read(FINGERPRINT_BYTES)
    cut = head.find(b"\n")
    return hashlib.sha256(head[: cut + 1] if cut >= 0 else head).hexdigest()


def _read_cursor(ledger: Any, path: Path) -> tuple[int, int, str | None]:
    offset_key, line_key = _cursor_keys(path)
    with ledger.store.read():
        rows = {
            r[0]: (r[1], r[2])
            for r in ledger.store.query(
                "SELECT source, position, fingerprint FROM cursors WHERE source IN (?, ?)",
                (offset_key, line_key),
            )
        }
    offset, mark = rows.get(offset_key, (0, None))
    return int(offset), int(rows.get(line_key, (0, None))[0]), mark


def _save_cursor(ledger: Any, path: Path, offset: int, line: int, mark: str) -> None:
    at = now()
    offset_key, line_key = _cursor_keys(path)
    with ledger.store.write():
        ledger.store.executemany(
            "INSERT INTO cursors (source, position, updated_at, fingerprint) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (source) DO UPDATE SET position = excluded.position,"
            " updated_at = excluded.updated_at, fingerprint = excluded.fingerprint",
            [(offset_key, offset, at, mark), (line_key, line, at, None)],
        )


def _same_file(fh: IO[bytes], offset: int, mark: str | None) -> bool:
    """The offset still points just past a complete line of the file it was taken in."""
    if offset == 0:
        return True
    if mark != fingerprint(fh):
        return False
    fh.seek(offset - 1)
    return fh.read(1) == b"\n"


def import_new(ledger: Any, path: Path) -> str | None:
    """Import the update_plan calls appended since the last run; returns the session's plan."""
    from todoledger.ingest.codex import CodexReader
    from todoledger.ingest.importer import write_calls
    from todoledger.ingest.lines import LineCursor
    from todoledger.ingest.plans import PlanNames

    path = path.resolve()
    offset, line, mark = _read_cursor(ledger, path)
    reader = CodexReader(str(path))
    names = PlanNames(ledger)
    with path.open("rb") as fh:
        if not _same_file(fh, offset, mark):
            # Replaced or rewritten: start over (re-import writes nothing twice).
            offset, line = 0, 0
        here = fingerprint(fh)
        fh.seek(0)
        reader.read_meta(fh)  # session id and folder sit on the first line only
        fh.seek(offset)
        cursor = LineCursor(offset, line)
        write_calls(ledger, reader.read(fh, cursor), str(path), "codex", now, names)
    if cursor.offset != offset or (offset and here != mark):
        _save_cursor(ledger, path, cursor.offset, cursor.line, here)
    return names.name("codex", reader.session, reader.project) if reader.session else None


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.hooks import ledger as hook_ledger

    name = event.get("hook_event_name")
    if name not in ("Stop", "SessionStart"):
        return None
    raw = event.get("transcript_path")
    transcript = Path(raw) if isinstance(raw, str) and raw else None
    if transcript is not None and not transcript.is_file():
        transcript = None
    with hook_ledger(cwd, create=transcript is not None) as ledger:
        plan = import_new(ledger, transcript) if transcript is not None else None
        if name != "SessionStart":
            return None
        if plan is None or not ledger.show(plan)["items"]:
            plan = None  # nothing recorded for this session yet: recover the default plan
        text = ledger.prime(plan)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
