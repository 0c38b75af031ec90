"""Every reader on small synthetic transcripts, one edge at a time."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.ingest import lines as lines_mod
from todoledger.ingest.calls import Skipped
from todoledger.ingest.importer import ingest
from todoledger.ingest.sources import Source, discover, read_calls
from todoledger.ledger import Ledger

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


def test_claude_split_message_counts_each_call_once(tmp_path: Path) -> None:
    """Claude Code writes one API message as several lines that share its
    message.id, one content block each; a resumed session repeats lines."""

    def part(block: dict[str, Any]) -> str:
        d = json.loads(claude_line(1, "TodoWrite", {}))
        d["message"]["content"] = [block]
        return json.dumps(d)

    def use(n: int, *pairs: tuple[str, str]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": "TodoWrite", "input": todos(*pairs)}

    lines = [
        part({"type": "thinking", "thinking": "plan the TodoWrite"}),
        part({"type": "text", "text": "Let me track this."}),
        part(use(1, ("A", "in_progress"), ("B", "pending"))),
        part(use(2, ("A", "completed"), ("B", "in_progress"))),
        part(use(1, ("A", "in_progress"), ("B", "pending"))),  # the same block again
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found, _ = calls_of(path)
    assert [(c.key, c.line) for c in found] == [("toolu_1", 3), ("toolu_2", 4)]
    (row,) = run(path)
    assert (row["calls"], row["written"], row["final"]) == (2, 2, {"completed": 1, "in_progress": 1})


def test_a_call_found_on_another_line_is_not_imported_again(tmp_path: Path, ledger_env: Path) -> None:
    """An older copy of a transcript, or a tail on stdin, holds the same calls on other lines."""
    lines = [
        claude_line(1, "TodoWrite", todos(("A", "in_progress"), ("B", "pending"))),
        claude_line(2, "TodoWrite", todos(("A", "completed"), ("B", "in_progress"))),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    shifted = tmp_path / "copy" / "s.jsonl"
    shifted.parent.mkdir()
    shifted.write_text(
        json.dumps({"type": "summary", "summary": "x", "leafUuid": "u"}) + "\n" + lines[1] + "\n"
    )
    with Ledger(ledger_env) as lg:
        ingest(lg, [str(path)])
        revision = lg.show("proj/11111111")["revision"]
        (row,) = ingest(lg, [str(shifted)]).sessions
        assert (row.calls, row.written) == (1, 0)
        assert lg.show("proj/11111111")["revision"] == revision
        assert [i["status"] for i in lg.items("proj/11111111")] == ["completed", "in_progress"]
        ops = lg.ops("proj/11111111")
    # The identity is the key; where the call sat is kept beside it for reports.
    assert [(o["source_key"], o["source_at"]) for o in ops] == [
        (f"claude:{SESSION}:toolu_1", "L1"),
        (f"claude:{SESSION}:toolu_2", "L2"),
    ]


def test_an_old_ledger_is_upgraded_and_keeps_its_imports(tmp_path: Path) -> None:
    """Ledgers written before m002 hold `<key>@<line>` source keys: the upgrade
    splits them, so importing the same transcript again writes nothing."""
    db = tmp_path / "old.db"
    path = tmp_path / "s.jsonl"
    path.write_text(claude_line(1, "TodoWrite", todos(("A", "pending"))) + "\n")
    with Ledger(db) as lg:
        lg.write(
            todos(("A", "pending")),
            plan="proj/11111111",
            writer=f"claude-code:{SESSION}",
            dialect="claude-code",
            source_key=f"claude:{SESSION}:toolu_1",
        )
    # Back to schema 1, with the key as the old importer wrote it.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE ops SET source_key = source_key || '@L1', source_at = NULL")
    conn.execute("ALTER TABLE ops DROP COLUMN source_at")
    for column in ("untimed", "source_msg"):  # migration 9 (untimed_ops)
        conn.execute(f"ALTER TABLE ops DROP COLUMN {column}")
    conn.execute("ALTER TABLE cursors DROP COLUMN fingerprint")
    conn.execute("ALTER TABLE events DROP COLUMN chain")  # migration 7 (event_chain)
    conn.execute("DROP INDEX events_forced")  # migration 6 (forced_index)
    conn.execute("DROP TABLE leases")  # migration 5 (leases)
    conn.execute("ALTER TABLE plans DROP COLUMN lease_seconds")
    for column in ("estimate", "uses", "needs_approval"):  # m004 (board_fields)
        conn.execute(f"ALTER TABLE items DROP COLUMN {column}")
    conn.execute("DROP TABLE tasks")  # migration 22 (tasks)
    conn.execute("DROP TABLE refusal_counts")  # migration 21 (refusal_counts)
    conn.execute("DROP INDEX items_recent")  # migration 20 (recent_index)
    conn.execute("DROP TABLE ledger_settings")  # migration 17 (ledger_settings)
    conn.execute("DROP TABLE panel_rows")  # migration 16 (panel_rows)
    conn.execute("DROP TABLE panel_lists")
    conn.execute("DROP TABLE sweep_runners")  # migration 15 (sweep_runners)
    conn.execute("DROP TABLE markdown_layouts")  # migration 14 (markdown_layouts)
    conn.execute("DROP INDEX writer_base_listed")  # migration 13 (dropped_status)
    conn.execute("ALTER TABLE writer_base DROP COLUMN listed")
    conn.execute("DROP TABLE sweep_setups")  # migration 12 (sweep_lifecycle; its columns go with checks')
    conn.execute("DROP TABLE tokens")  # migration 11 (tokens)
    for table in ("checks", "receipts", "metrics", "sweeps", "sweep_items"):  # migration 3 (checks)
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM migrations WHERE name <> 'initial'")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    conn.close()
    with Ledger(db) as lg:
        (row,) = ingest(lg, [str(path)]).sessions
        (op,) = lg.ops("proj/11111111")
    assert (row.calls, row.written) == (1, 0)
    assert (op["source_key"], op["source_at"]) == (f"claude:{SESSION}:toolu_1", "L1")


def test_claude_cwd_change_keeps_one_plan(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        claude_line(1, "TodoWrite", todos(("A", "in_progress"), ("B", "pending")))
        + "\n"
        + claude_line(
            2, "TodoWrite", todos(("A", "completed"), ("B", "in_progress")), cwd="/home/me/proj/sub"
        )
        + "\n"
    )
    (row,) = run(path)
    assert (row["plan"], row["calls"], row["final"]) == (
        "proj/11111111",
        2,
        {"completed": 1, "in_progress": 1},
    )


def test_claude_subagent_task_update_writes_as_the_session(tmp_path: Path) -> None:
    """Task ids belong to the session's list, which subagents share (as the live hook writes them)."""
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                claude_line(
                    1, "TaskCreate", {"subject": "Port parser", "description": "d", "activeForm": "Porting"}
                ),
                result_line(1, {"task": {"id": "7", "subject": "Port parser"}}),
                claude_line(
                    2, "TaskUpdate", {"taskId": "7", "status": "in_progress"}, side=True, agentId="a7"
                ),
                result_line(2, {"success": True, "taskId": "7"}),
                claude_line(3, "TodoWrite", todos(("Sub list", "pending")), side=True, agentId="a7"),
            ]
        )
        + "\n"
    )
    found, _ = calls_of(path)
    assert [c.writer for c in found] == [
        f"claude-code:{SESSION}",
        f"claude-code:{SESSION}",
        f"claude-code:{SESSION}:a7",  # a subagent's own TodoWrite list stays apart
    ]
    (row,) = run(path)
    assert (row["calls"], row["refused"], row["final"]) == (3, 0, {"in_progress": 1, "pending": 1})


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


def test_stdin_from_a_slow_pipe(tmp_path: Path, ledger_env: Path) -> None:
    """A tail of a rollout: the first bytes arrive alone, and say nothing of the format
    yet; it is told from what is read, not from what the pipe has delivered so far."""
    data = rollout(
        tmp_path / "r.jsonl",
        "0199cccc-3333",
        ("c1", "in_progress", "2025-09-01T10:01:00Z"),
        ("c2", "completed", "2025-09-01T10:02:00Z"),
    ).read_bytes()
    assert b"session_meta" not in data[:20]
    proc = subprocess.Popen(
        [todoledger_bin(), "ingest", "--json", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(ledger_env),
    )
    assert proc.stdin is not None
    proc.stdin.write(data[:20])
    proc.stdin.flush()
    time.sleep(0.3)
    proc.stdin.write(data[20:])
    out, err = proc.communicate(timeout=60)  # closes stdin
    assert proc.returncode == 0, err
    (row,) = json.loads(out)
    assert (row["plan"], row["format"], row["calls"], row["final"]) == (
        "app/0199cccc",
        "codex",
        2,
        {"completed": 1},
    )


def rollout(path: Path, session: str, *calls: tuple[str, str, str | None], cwd: str = "/x/app") -> Path:
    """A Codex rollout: session_meta, then update_plan calls (call id, status of "Build", time)."""
    rows: list[dict[str, Any]] = [
        {"timestamp": "2025-09-01T10:00:00Z", "type": "session_meta", "payload": {"id": session, "cwd": cwd}}
    ]
    for call_id, status, at in calls:
        args = json.dumps({"plan": [{"step": "Build", "status": status}]})
        payload = {"type": "function_call", "name": "update_plan", "arguments": args, "call_id": call_id}
        rows.append({"timestamp": at, "type": "response_item", "payload": payload})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_sessions_sharing_a_prefix_never_share_a_plan(tmp_path: Path, ledger_env: Path) -> None:
    # UUIDv7: the first 8 hex digits are a timestamp, the same for sessions begun close together.
    a = rollout(tmp_path / "a.jsonl", "01998190-fba6-7f40-9309-dc4e48c5844a", ("c1", "completed", None))
    b = rollout(tmp_path / "b.jsonl", "01998190-aaaa-7bbb-8ccc-dddddddddddd", ("c1", "in_progress", None))
    with Ledger(ledger_env) as lg:
        rows = [(s.plan, s.written) for s in ingest(lg, [str(a), str(b)]).sessions]
        assert rows == [("app/01998190", 1), ("app/01998190-aaaa-7bbb-8ccc-dddddddddddd", 1)]
        assert [i["status"] for i in lg.items("app/01998190")] == ["completed"]
        # Again, in the other order: each session finds its own plan, nothing is written.
        again = [(s.plan, s.written) for s in ingest(lg, [str(b), str(a)]).sessions]
    assert again == [("app/01998190-aaaa-7bbb-8ccc-dddddddddddd", 0), ("app/01998190", 0)]


def test_plan_names_strip_prefixes_and_unsafe_characters(tmp_path: Path, ledger_env: Path) -> None:
    sessions = ["ses_", "session-", "ses_abcdefgh1", "a/b\nc\u202ed\x1bx", "   "]
    paths = [
        rollout(tmp_path / f"r{n}.jsonl", s, ("c1", "pending", None), cwd="/w/my\u202eapp\n")
        for n, s in enumerate(sessions)
    ]
    with Ledger(ledger_env) as lg:
        plans = [s.plan for s in ingest(lg, [str(p) for p in paths]).sessions]
    # A prefix alone leaves no short name; a second such session takes its full id.
    assert plans[:4] == ["myapp/unknown", "myapp/session-", "myapp/abcdefgh", "myapp/abcdx"]
    assert plans[4].startswith("myapp/unknown~")  # blank: its full id is taken too
    assert all(p.count("/") == 1 and p.isprintable() and "\u202e" not in p for p in plans)


def test_opencode_data_folder_with_database_and_storage(tmp_path: Path) -> None:
    data = tmp_path / "opencode"
    storage = data / "storage"
    (storage / "session" / "p").mkdir(parents=True)
    (storage / "message").mkdir()
    (storage / "session" / "p" / "ses_storage1.json").write_text(
        json.dumps({"id": "ses_storage1", "directory": "/w/old"})
    )
    (storage / "todo").mkdir()
    (storage / "todo" / "ses_storage1.json").write_text(json.dumps([{"content": "Old", "status": "pending"}]))
    db = sqlite3.connect(data / "opencode.db")
    db.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);"
    )
    db.execute("INSERT INTO session VALUES ('ses_database', '/w/new', 1)")
    part = _part(1, "in_progress", 1_700_000_000_000)
    db.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_database', 1, ?)", (json.dumps(part),))
    db.commit()
    db.close()
    for root in (data, tmp_path):
        skipped = Skipped()
        assert sorted((Path(s.name).name, s.fmt) for s in discover([str(root)], skipped)) == [
            ("opencode.db", "opencode-sqlite"),
            ("storage", "opencode-storage"),
        ]
    rows = run(data)
    assert sorted((r["plan"], r["final"]) for r in rows) == [
        ("new/database", {"in_progress": 1}),
        ("old/storage1", {"pending": 1}),
    ]


def test_missing_times_come_from_the_same_session(tmp_path: Path, ledger_env: Path) -> None:
    """Two sessions in one file: a call without a time takes its own session's
    previous time, or its session's next known time; never the other session's."""
    other = "99999999-2222-3333-4444-555555555555"
    lines = [
        claude_line(1, "TodoWrite", todos(("A", "in_progress"))),
        claude_line(2, "TodoWrite", todos(("A", "completed")), timestamp=None),
        claude_line(3, "TodoWrite", todos(("B", "pending")), sessionId=other, timestamp=None),
        claude_line(
            4, "TodoWrite", todos(("B", "in_progress")), sessionId=other, timestamp="2025-07-01T12:00:00Z"
        ),
        claude_line(5, "TodoWrite", todos(("B", "completed")), sessionId=other, timestamp="bogus"),
    ]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with Ledger(ledger_env) as lg:
        ingest(lg, [str(path)])
        times = {p: [o["at"] for o in lg.ops(p)] for p in ("proj/11111111", "proj/99999999")}
    assert times == {
        "proj/11111111": ["2025-07-01T10:01:00.000Z", "2025-07-01T10:01:00.000Z"],
        "proj/99999999": ["2025-07-01T12:00:00.000Z"] * 3,
    }


def test_a_line_past_the_limit_is_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines_mod, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(lines_mod, "MAX_LINE_BYTES", 64 * 1024, raising=False)
    huge = claude_line(2, "TodoWrite", todos(("x" * 100_000, "pending")))
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                claude_line(1, "TodoWrite", todos(("A", "in_progress"))),
                huge,
                claude_line(3, "TodoWrite", todos(("A", "completed"))),
            ]
        )
        + "\n"
    )
    found, skipped = calls_of(path)
    assert [c.line for c in found] == [1, 3]
    assert skipped.as_dict() == {"lines too long to read": 1}


@pytest.mark.parametrize("block", [512, 4096, 1 << 20])
def test_line_numbers_hold_over_long_and_short_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Newlines are counted two ways (memchr per line over long lines, a byte count
    over short ones, switching within a block): calls keep their true line numbers
    whatever mix of lines lies between them and wherever blocks end."""
    import random

    monkeypatch.setattr(lines_mod, "BLOCK_BYTES", block)
    rng = random.Random(7)
    out: list[str] = []
    expected: list[int] = []
    for n in range(1, 400):
        kind = rng.random()
        if kind < 0.1:
            step = todos((f"Step {n}", "pending"))
            out.append(claude_line(n, "TodoWrite", step, timestamp="2025-07-01T10:00:00.000Z"))
            expected.append(len(out))
        elif kind < 0.4:
            out.append(json.dumps({"type": "user", "message": {"content": "y" * rng.randint(600, 3000)}}))
        elif kind < 0.8:
            out.extend(["{}"] * rng.randint(1, 40))  # a run of short lines
        else:
            out.append("")  # an empty line
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(out) + "\n")
    found, _ = calls_of(path)
    assert [c.line for c in found] == expected


def test_a_long_line_is_read_in_linear_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line of many blocks is joined once; adding each block to the last would copy it
    over and over (here some 32 GB), which no machine does in this bound."""
    monkeypatch.setattr(lines_mod, "BLOCK_BYTES", 1024)
    long_line = claude_line(1, "TodoWrite", todos(("x" * (8 << 20), "pending")))
    path = tmp_path / "s.jsonl"
    path.write_text(long_line + "\n")
    found, skipped = calls_of(path)
    assert [c.line for c in found] == [1] and not skipped.counts
    # Linear, not quadratic: bench/bench_limits.py times 1 KB blocks against the default.


def test_a_named_pipe_is_skipped_and_counted_not_waited_on(tmp_path: Path, ledger_env: Path) -> None:
    """Issue 7 B2: a FIFO in a folder (or named on the command line) made `ingest` wait
    for a writer forever. Only regular files are read; the rest is counted."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s.jsonl").write_text(claude_line(1, "TodoWrite", todos(("Real work", "pending"))) + "\n")
    os.mkfifo(folder / "live.jsonl")
    os.mkfifo(tmp_path / "named.jsonl")
    proc = subprocess.run(
        [todoledger_bin(), "ingest", "--json", str(folder), str(tmp_path / "named.jsonl")],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["calls"] == 1
    assert "2 paths that are not regular files" in proc.stderr
