"""Incremental import of a Codex rollout: the one ingest entry point hooks call.

Codex's hooks do not reliably see `update_plan`, but its rollout file
(`transcript_path`) records every call. Each run reads only what was
appended since the last: the byte offset and line number of the last
complete line are kept as the ledger's cursors, with a fingerprint of the
file, so a file replaced by another (even a longer one) is read from the
start rather than mid-line. Calls keep the same source keys as
`todoledger ingest`, so either may run first.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO

from todoledger.core.timefmt import now
from todoledger.ingest.codex import CodexReader
from todoledger.ingest.importer import write_calls
from todoledger.ingest.lines import LineCursor
from todoledger.ingest.plans import PlanNames
from todoledger.ledger import Ledger

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


def _same_file(fh: IO[bytes], offset: int, mark: str | None) -> bool:
    """The offset still points just past a complete line of the file it was taken in."""
    if offset == 0:
        return True
    if mark != fingerprint(fh):
        return False
    fh.seek(offset - 1)
    return fh.read(1) == b"\n"


def import_rollout(ledger: Ledger, path: Path, *, into: str) -> str | None:
    """Import the update_plan calls appended since the last run into the plan
    `into` (the project's: live hooks keep one plan per project, as the agents'
    other hooks do); returns the session's writer, if the rollout names it."""
    path = path.resolve()
    offset_key, line_key = _cursor_keys(path)
    cursors = ledger.cursors([offset_key, line_key])
    offset, mark = cursors.get(offset_key, (0, None))
    line = cursors.get(line_key, (0, None))[0]
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
        write_calls(ledger, reader.read(fh, cursor), str(path), "codex", now, names, into=into)
    if cursor.offset != offset or (offset and here != mark):
        ledger.save_cursors({offset_key: (cursor.offset, here), line_key: (cursor.line, None)})
    return f"codex:{reader.session}" if reader.session else None
