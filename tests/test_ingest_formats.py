"""Every reader on small synthetic transcripts, one edge at a time."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from todoledger.ingest.calls import Skipped
from todoledger.ingest.importer import ingest
from todoledger.ingest.sources import Source, discover, read_calls
from todoledger.service import Ledger

SESSION = "11111111-2222-3333-4444-555555555555"


def claude_line(n: int, tool: str, payload: dict[str, Any], *, side: bool = False, **extra: Any) -> str:
    d = {
        "parentUuid": None,
        "isSidechain": side,
        "cwd": "/home/me/proj",
        "sessionId": SESSION,
        "type": "assistant",
        "timestamp": f"2025-07-01T10:{n:02d}:00.000Z",
        "message": {
            "id": f"msg_{n}",
            "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": tool, "input": payload}],
        },
    } | extra
    return json.dumps(d)


def result_line(n: int, result: Any, *, error: bool = False) -> str:
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "sessionId": SESSION,
            "cwd": "/home/me/proj",
            "type": "user",
            "timestamp": f"2025-07-01T10:{n:02d}:01.000Z",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{n}", "is_error": error, "content": "ok"}
                ]
            },
            "toolUseResult": result,
        }
    )


def todos(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"todos": [{"content": c, "status": s, "activeForm": c} for c, s in pairs]}


def calls_of(path: Path) -> tuple[list[Any], Skipped]:
    skipped = Skipped()
    sources = list(discover([str(path)], skipped))
    found = [c for s in sources for c in read_calls(s, skipped)]
    return found, skipped


def run(*paths: Path) -> list[dict[str, Any]]:
    with Ledger() as lg:
        result = ingest(lg, [str(p) for p in paths])
        return [s.as_dict() for s in result.sessions]


def test_claude_skips_junk_and_keeps_going(tmp_path: Path) -> None:
    lines = [
        json.dumps({"type": "summary", "summary": "x", "leafUuid": "u"}),
        "this is not json at all",
        claude_line(1, "TodoWrite", todos(("Write tests", "in_progress"), ("Ship", "pending"))),
        '{"broken": TodoWrite',  # a candidate line that does not parse
        json.dumps({"type": "mystery", "sessionId": SESSION, "note": "TodoWrite"}),
        claude_line(2, "TodoWrite", todos(("Write tests", "completed"), ("Ship", "in_progress"))),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n" + claude_line(3, "TodoWrite", todos(("Ship", "completed")))[:80])
    found, skipped = calls_of(path)
    assert [c.line for c in found] == [3, 6]
    assert skipped.as_dict() == {
        "lines that are not JSON": 1,  # the broken candidate; others are never looked at
        "unfinished last line": 1,
        "unknown record types": 1,
    }
    (row,) = run(path)
    assert (row["plan"], row["calls"], row["final"]) == (
        "proj/11111111",
        2,
        {"completed": 1, "in_progress": 1},
    )


def test_claude_split_message_counts_a_call_once(tmp_path: Path) -> None:
    line = claude_line(1, "TodoWrite", todos(("A", "pending")))
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n" + line + "\n")
    found, _ = calls_of(path)
    assert len(found) == 1


def test_claude_sidechain_is_its_own_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        claude_line(1, "TodoWrite", todos(("Main task", "in_progress")))
        + "\n"
        + claude_line(2, "TodoWrite", todos(("Sub task", "in_progress")), side=True, agentId="a7")
        + "\n"
        + claude_line(3, "TodoWrite", todos(("Main task", "completed")))
        + "\n"
    )
    found, _ = calls_of(path)
    assert [c.writer for c in found] == [
        f"claude-code:{SESSION}",
        f"claude-code:{SESSION}:a7",
        f"claude-code:{SESSION}",
    ]
    (row,) = run(path)
    # The main agent's list leaving out the subagent's item does not drop it.
    assert row["final"] == {"completed": 1, "in_progress": 1}


def test_claude_old_items_and_result_lines(tmp_path: Path) -> None:
    old = {"todos": [{"id": "1", "content": "Read code", "status": "pending", "priority": "high"}]}
    new = {"todos": [{"id": "1", "content": "Read code", "status": "completed", "priority": "high"}]}
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                claude_line(1, "TodoWrite", old),
                result_line(1, {"oldTodos": [], "newTodos": old["todos"]}),
                claude_line(2, "TodoWrite", new),
                result_line(2, {"oldTodos": old["todos"], "newTodos": new["todos"]}),
            ]
        )
        + "\n"
    )
    found, _ = calls_of(path)
    assert [c.response["newTodos"][0]["status"] for c in found] == ["pending", "completed"]
    (row,) = run(path)
    assert row["final"] == {"completed": 1}
    with Ledger() as lg:
        (item,) = lg.items("proj/11111111")
    assert item["priority"] == "high"


def test_claude_result_without_its_call_still_counts(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        result_line(4, {"oldTodos": [], "newTodos": [{"content": "Orphan", "status": "pending"}]}) + "\n"
    )
    (row,) = run(path)
    assert (row["calls"], row["final"]) == (1, {"pending": 1})


def test_claude_tasks_take_the_id_from_the_result(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                claude_line(
                    1, "TaskCreate", {"subject": "Port parser", "description": "d", "activeForm": "Porting"}
                ),
                result_line(1, {"task": {"id": "7", "subject": "Port parser"}}),
                claude_line(2, "TaskUpdate", {"taskId": "7", "status": "in_progress"}),
                result_line(2, {"success": True, "taskId": "7"}),
                claude_line(3, "TaskUpdate", {"taskId": "99", "status": "completed"}),
                result_line(3, "Task not found", error=True),
            ]
        )
        + "\n"
    )
    (row,) = run(path)
    assert (row["calls"], row["failed"], row["final"]) == (3, 1, {"in_progress": 1})


def test_codex_envelope_and_older_layout(tmp_path: Path) -> None:
    args = json.dumps({"explanation": "go", "plan": [{"step": "Build", "status": "in_progress"}]})
    new = tmp_path / "rollout-2025-01-01T00-00-00-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl"
    new.write_text(
        json.dumps(
            {
                "timestamp": "2025-01-01T00:00:00Z",
                "type": "session_meta",
                "payload": {"id": "S1", "cwd": "/x/app"},
            }
        )
        + "\n"
        + json.dumps(
            {"timestamp": "2025-01-01T00:00:05Z", "type": "weird", "payload": {"name": "update_plan"}}
        )
        + "\n"
        + json.dumps(
            {
                "timestamp": "2025-01-01T00:00:09Z",
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "update_plan",
                    "arguments": args,
                    "call_id": "c1",
                },
            }
        )
        + "\n"
    )
    old = tmp_path / "rollout-old.jsonl"
    old.write_text(
        json.dumps({"id": "S2", "timestamp": "2025-01-01T00:00:00Z", "instructions": None})
        + "\n"
        + json.dumps({"type": "function_call", "name": "update_plan", "arguments": args, "call_id": "c9"})
        + "\n"
    )
    _, skipped = calls_of(new)
    assert skipped.as_dict() == {"unknown record types": 1}
    rows = run(new, old)
    assert [(r["plan"], r["calls"], r["final"]) for r in rows] == [
        ("app/S1", 1, {"in_progress": 1}),
        ("unknown/S2", 1, {"in_progress": 1}),
    ]


def _part(n: int, status: str, at: int) -> dict[str, Any]:
    return {
        "id": f"prt_{n}",
        "sessionID": "ses_abcdefgh123",
        "messageID": f"msg_{n}",
        "type": "tool",
        "tool": "todowrite",
        "state": {
            "status": "completed",
            "input": {"todos": [{"content": "Fix bug", "status": status, "priority": "high"}]},
            "time": {"start": at, "end": at + 5},
        },
    }


def test_opencode_storage_folder(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    (root / "session" / "proj1").mkdir(parents=True)
    (root / "session" / "proj1" / "ses_abcdefgh123.json").write_text(
        json.dumps(
            {"id": "ses_abcdefgh123", "directory": "/w/webapp", "time": {"updated": 1_700_000_000_000}}
        )
    )
    for n, status in ((1, "in_progress"), (2, "completed")):
        (root / "message" / "ses_abcdefgh123").mkdir(parents=True, exist_ok=True)
        (root / "message" / "ses_abcdefgh123" / f"msg_{n}.json").write_text("{}")
        (root / "part" / f"msg_{n}").mkdir(parents=True)
        (root / "part" / f"msg_{n}" / f"prt_{n}.json").write_text(
            json.dumps(_part(n, status, 1_700_000_000_000 + n))
        )
        (root / "part" / f"msg_{n}" / "prt_text.json").write_text(json.dumps({"type": "text", "text": "hi"}))
    # A session whose parts are gone keeps its final list in storage/todo.
    (root / "session" / "proj1" / "ses_zzzzzzzz999.json").write_text(json.dumps({"id": "ses_zzzzzzzz999"}))
    (root / "todo").mkdir()
    (root / "todo" / "ses_zzzzzzzz999.json").write_text(
        json.dumps([{"content": "Left", "status": "pending"}])
    )
    rows = run(tmp_path)  # the folder above storage/ is found too
    assert [(r["plan"], r["format"], r["calls"], r["final"]) for r in rows] == [
        ("webapp/abcdefgh", "opencode-storage", 2, {"completed": 1}),
        ("unknown/zzzzzzzz", "opencode-storage", 0, {"pending": 1}),
    ]


def test_opencode_sqlite(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "opencode.db")
    db.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);"
        "CREATE TABLE todo (session_id TEXT, content TEXT, status TEXT, priority TEXT, position INTEGER);"
    )
    db.execute("INSERT INTO session VALUES ('ses_abcdefgh123', '/w/api', 1)")
    for n, status in ((1, "pending"), (2, "in_progress")):
        part = _part(n, status, 1_700_000_000_000 + n * 1000)
        del part["id"]  # the row's column holds it
        db.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?)",
            (f"prt_{n}", f"msg_{n}", "ses_abcdefgh123", n, json.dumps(part)),
        )
    db.execute("INSERT INTO part VALUES ('prt_9', 'msg_9', 'ses_abcdefgh123', 9, '{\"type\":\"text\"}')")
    db.commit()
    db.close()
    (row,) = run(tmp_path / "opencode.db")
    assert (row["plan"], row["format"], row["calls"], row["final"]) == (
        "api/abcdefgh",
        "opencode-sqlite",
        2,
        {"in_progress": 1},
    )


def test_gemini_json_and_jsonl(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "myproj" / "chats"
    chats.mkdir(parents=True)
    call = {
        "id": "t1",
        "name": "write_todos",
        "args": {"todos": [{"description": "Run tests", "status": "in_progress"}]},
    }
    done = {
        "id": "t2",
        "name": "write_todos",
        "args": {"todos": [{"description": "Run tests", "status": "completed"}]},
    }
    (chats / "session-2025-01-01T10-00-aaaa.json").write_text(
        json.dumps(
            {
                "sessionId": "g-one",
                "projectHash": "x",
                "messages": [
                    {"id": "m1", "type": "gemini", "timestamp": "2025-01-01T10:00:00Z", "toolCalls": [call]},
                    {"id": "m2", "type": "gemini", "timestamp": "2025-01-01T10:05:00Z", "toolCalls": [done]},
                ],
            },
            indent=2,
        )
    )
    lines = [
        {"sessionId": "g-two", "projectHash": "x", "startTime": "2025-01-02T10:00:00Z"},
        {"id": "m1", "type": "gemini", "timestamp": "2025-01-02T10:00:00Z", "toolCalls": [call]},
        {"id": "m1", "type": "gemini", "timestamp": "2025-01-02T10:00:00Z", "toolCalls": [call]},  # replaced
        {"$set": {"messages": [{"id": "m1", "type": "gemini", "toolCalls": [call]}]}},
        {"$rewindTo": "m1"},
    ]
    (chats / "session-2025-01-02T10-00-bbbb.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rows = run(tmp_path)
    assert [(r["plan"], r["format"], r["calls"], r["final"]) for r in rows] == [
        ("myproj/g-one", "gemini-json", 2, {"completed": 1}),
        ("myproj/g-two", "gemini", 1, {"in_progress": 1}),
    ]


def test_folder_walk_counts_files_that_are_not_transcripts(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    (tmp_path / "data.jsonl").write_text("1\n2\n")
    (tmp_path / "readme.md").write_text("# not even looked at")
    (tmp_path / "s.jsonl").write_text(claude_line(1, "TodoWrite", todos(("A", "pending"))) + "\n")
    skipped = Skipped()
    sources = list(discover([str(tmp_path), str(tmp_path / "missing.jsonl")], skipped))
    assert [Path(s.name).name for s in sources] == ["s.jsonl"]
    assert skipped.as_dict() == {"files that are not transcripts": 2, "paths that do not exist": 1}


def test_stdin(tmp_path: Path) -> None:
    data = (claude_line(1, "TodoWrite", todos(("From a pipe", "pending"))) + "\n").encode()
    skipped = Skipped()
    found = list(read_calls(Source("-", "stdin", None, 0), skipped, io.BufferedReader(io.BytesIO(data))))
    assert [c.payload["input"]["todos"][0]["content"] for c in found] == ["From a pipe"]
