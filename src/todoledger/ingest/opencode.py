"""opencode sessions: `opencode export` output, the JSON storage folder
and the SQLite `opencode.db`. A call is a part with `"tool":"todowrite"`;
its time is the part's `state.time.start` (epoch milliseconds).

Where there are no lines to cite, a call is located by its message and part
ids. A session without any todowrite part but with a stored final list
(`storage/todo/<ses>.json`, table `todo`) gets that list as one snapshot,
which is not counted as a call.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from todoledger.ingest.calls import Skipped, TodoCall, project_name
from todoledger.ingest.claude import timestamp
from todoledger.ingest.lines import text

FORMAT = "opencode"
TOOL = "todowrite"
# An export is one JSON document; beyond this it is refused rather than loaded whole.
MAX_EXPORT_BYTES = 512 * 1024 * 1024


def _call(part: dict[str, Any], session: str, project: str, message: str | None) -> TodoCall | None:
    state = part.get("state")
    if part.get("type") != "tool" or part.get("tool") != TOOL or not isinstance(state, dict):
        return None
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    assert isinstance(times, dict)
    part_id = text(part.get("id")) or text(part.get("callID")) or "part"
    msg = text(part.get("messageID")) or message
    return TodoCall(
        fmt=FORMAT,
        session=session,
        project=project,
        key=part_id,
        at=timestamp(times.get("start") or times.get("end")),
        writer=f"opencode:{session}",
        dialect="opencode",
        payload=part,
        line=None,
        message=f"{msg}/{part_id}" if msg else part_id,
        failed=state.get("status") == "error",
        error=text(state.get("error")) if state.get("status") == "error" else None,
    )


def _snapshot(todos: Any, session: str, project: str, at: Any, where: str) -> TodoCall | None:
    if not isinstance(todos, list) or not todos:
        return None
    return TodoCall(
        fmt=FORMAT,
        session=session,
        project=project,
        key="stored-list",
        at=timestamp(at),
        writer=f"opencode:{session}",
        dialect="opencode",
        payload={"todos": todos},
        message=where,
        counted=False,
    )


def read_export(data: Any, skipped: Skipped) -> Iterator[TodoCall]:
    """`opencode export`: {"info": session, "messages": [{"info", "parts"}]}."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        skipped.add("files that are not transcripts")
        return
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    assert isinstance(info, dict)
    session = text(info.get("id")) or "unknown"
    project = project_name(text(info.get("directory")))
    for message in data["messages"]:
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            skipped.add("unknown record types")
            continue
        minfo = message.get("info") if isinstance(message.get("info"), dict) else {}
        assert isinstance(minfo, dict)
        for part in message["parts"]:
            if isinstance(part, dict):
                call = _call(part, session, project, text(minfo.get("id")))
                if call is not None:
                    yield call


def _json_file(path: Path, skipped: Skipped) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        skipped.add("unreadable storage files")
        return None


def read_storage(root: Path, skipped: Skipped) -> Iterator[TodoCall]:
    """storage/session/<project>/<ses>.json, message/<ses>/<msg>.json, part/<msg>/<prt>.json."""
    for session_file in sorted((root / "session").glob("*/*.json")):
        info = _json_file(session_file, skipped)
        if not isinstance(info, dict):
            continue
        session = text(info.get("id")) or session_file.stem
        project = project_name(text(info.get("directory")))
        found = 0
        # opencode ids sort by creation time, so file names give the order.
        for message_file in sorted((root / "message" / session).glob("*.json")):
            for part_file in sorted((root / "part" / message_file.stem).glob("*.json")):
                try:
                    raw = part_file.read_bytes()
                except OSError:
                    skipped.add("unreadable storage files")
                    continue
                if b"todowrite" not in raw:  # stored parts may be indented: no exact-key check
                    continue
                part = _json_file(part_file, skipped)
                if isinstance(part, dict):
                    call = _call(part, session, project, message_file.stem)
                    if call is not None:
                        found += 1
                        yield call
        if not found:
            todo = (
                _json_file(root / "todo" / f"{session}.json", Skipped())
                if (root / "todo" / f"{session}.json").exists()
                else None
            )
            times = info.get("time") if isinstance(info.get("time"), dict) else {}
            assert isinstance(times, dict)
            snap = _snapshot(todo, session, project, times.get("updated"), f"todo/{session}.json")
            if snap is not None:
                yield snap


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _first(columns: set[str], *names: str) -> str | None:
    return next((n for n in names if n in columns), None)


def read_sqlite(path: Path, skipped: Skipped) -> Iterator[TodoCall]:
    """opencode.db: session, message(data JSON), part(data JSON), todo. Opened read-only."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    try:
        yield from _read_db(db, skipped)
    except sqlite3.DatabaseError:
        skipped.add("files that are not transcripts")
    finally:
        db.close()


def _read_db(db: sqlite3.Connection, skipped: Skipped) -> Iterator[TodoCall]:
    scols, pcols = _columns(db, "session"), _columns(db, "part")
    if not scols or "data" not in pcols:
        skipped.add("files that are not transcripts")
        return
    directory = _first(scols, "directory", "path")
    updated = _first(scols, "time_updated", "updated_at", "updated")
    sessions = db.execute(
        f"SELECT id, {directory or 'NULL'}, {updated or 'NULL'} FROM session ORDER BY id"
    ).fetchall()
    part_session = _first(pcols, "session_id", "sessionID")
    part_message = _first(pcols, "message_id", "messageID")
    order = _first(pcols, "time_created", "created_at") or "id"
    for session, folder, when in sessions:
        project = project_name(folder)
        found = 0
        rows: Iterable[tuple[Any, ...]]
        if part_session:
            rows = db.execute(
                f"SELECT id, {part_message or 'NULL'}, data FROM part WHERE {part_session} = ?"
                f" AND data LIKE '%todowrite%' ORDER BY {order}, id",
                (session,),
            )
        else:
            rows = []
        for part_id, message_id, data in rows:
            try:
                part = orjson.loads(data)
            except orjson.JSONDecodeError:
                skipped.add("lines that are not JSON")
                continue
            if isinstance(part, dict):
                part.setdefault("id", part_id)
                call = _call(part, session, project, message_id)
                if call is not None:
                    found += 1
                    yield call
        if not found:
            yield from _stored_todos(db, session, project, when)


def _stored_todos(db: sqlite3.Connection, session: str, project: str, when: Any) -> Iterator[TodoCall]:
    cols = _columns(db, "todo")
    if not {"session_id", "content", "status"} <= cols:
        return
    order = "position" if "position" in cols else "rowid"
    prio = "priority" if "priority" in cols else "NULL"
    rows = db.execute(
        f"SELECT content, status, {prio} FROM todo WHERE session_id = ? ORDER BY {order}", (session,)
    ).fetchall()
    todos = [{"content": c, "status": s, "priority": p or "medium"} for c, s, p in rows]
    snap = _snapshot(todos, session, project, when, "table todo")
    if snap is not None:
        yield snap
