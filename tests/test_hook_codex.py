"""`todoledger hook codex`: incremental import of a growing rollout."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.hooks import run_hook
from todoledger.ledger import Ledger

PLAN = "main"  # live hooks write the project's plan; `ingest` makes one per session
SESSION_PLAN = "app/0199aaaa"


def meta() -> str:
    return json.dumps(
        {
            "timestamp": "2025-09-01T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "0199aaaa-1111", "cwd": "/src/app"},
        }
    )


def plan_line(n: int, *steps: tuple[str, str]) -> str:
    args = json.dumps({"plan": [{"step": s, "status": st} for s, st in steps]})
    payload = {"type": "function_call", "name": "update_plan", "arguments": args, "call_id": f"call_{n}"}
    return json.dumps(
        {"timestamp": f"2025-09-01T10:{n:02d}:00Z", "type": "response_item", "payload": payload}
    )


def noise(n: int) -> str:
    return json.dumps(
        {"timestamp": "2025-09-01T10:00:00Z", "type": "event_msg", "payload": {"type": "token_count", "n": n}}
    )


def hook(event: dict[str, Any]) -> str:
    out = io.StringIO()
    assert run_hook(["codex"], stdin=io.BytesIO(json.dumps(event).encode()), stdout=out) == 0
    return out.getvalue()


def cursor(db: Path) -> list[tuple[str, int]]:
    with Ledger(db) as lg:
        return [
            (r[0].rsplit("#", 1)[-1] if "#" in r[0] else "offset", r[1])
            for r in lg.store.query("SELECT source, position FROM cursors ORDER BY source")
        ]


def test_stop_imports_only_what_was_appended(tmp_path: Path, ledger_env: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    first = (
        meta() + "\n" + noise(1) + "\n" + plan_line(1, ("Build", "in_progress"), ("Test", "pending")) + "\n"
    )
    half = plan_line(2, ("Build", "completed"), ("Test", "in_progress"))
    rollout.write_text(first + half[:40])  # Codex is still writing the second call
    event = {"hook_event_name": "Stop", "transcript_path": str(rollout), "cwd": str(tmp_path)}
    assert hook(event) == ""
    assert cursor(ledger_env) == [("offset", len(first.encode())), ("line", 3)]
    with Ledger(ledger_env) as lg:
        assert [i["status"] for i in lg.items(PLAN)] == ["in_progress", "pending"]

    with rollout.open("w") as fh:  # the line is finished, and one more call follows
        fh.write(
            first
            + half
            + "\n"
            + noise(2)
            + "\n"
            + plan_line(3, ("Build", "completed"), ("Test", "completed"))
            + "\n"
        )
    hook(event)
    with Ledger(ledger_env) as lg:
        assert [i["status"] for i in lg.items(PLAN)] == ["completed", "completed"]
        ops = lg.ops(PLAN)
    assert [o["source_at"] for o in ops] == ["L3", "L4", "L6"]
    assert [o["source_key"] for o in ops] == [f"live:codex:0199aaaa-1111:call_{n}" for n in (1, 2, 3)]
    assert {o["writer"] for o in ops} == {"codex:0199aaaa-1111"}
    assert cursor(ledger_env) == [("offset", rollout.stat().st_size), ("line", 6)]


def test_live_hook_writes_the_project_plan_and_ingest_still_builds_the_session_plan(
    tmp_path: Path, ledger_env: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(meta() + "\n" + plan_line(1, ("Build", "in_progress")) + "\n")
    hook({"hook_event_name": "Stop", "transcript_path": str(rollout)})
    result = subprocess.run(
        [todoledger_bin(), "ingest", "--json", str(rollout)],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        check=True,
    )
    (row,) = json.loads(result.stdout)
    assert (row["plan"], row["calls"], row["written"]) == (SESSION_PLAN, 1, 1)
    with Ledger(ledger_env) as lg:
        assert (
            [i["content"] for i in lg.items(PLAN)]
            == [i["content"] for i in lg.items(SESSION_PLAN)]
            == ["Build"]
        )
    again = subprocess.run(
        [todoledger_bin(), "ingest", "--json", str(rollout)],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        check=True,
    )
    assert json.loads(again.stdout)[0]["written"] == 0


def test_session_start_prints_recovery_text(tmp_path: Path, ledger_env: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(meta() + "\n" + plan_line(1, ("Build the parser", "in_progress")) + "\n")
    out = json.loads(
        hook({"hook_event_name": "SessionStart", "transcript_path": str(rollout), "source": "resume"})
    )
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Build the parser" in out["hookSpecificOutput"]["additionalContext"]


def test_replaced_file_starts_over_and_other_events_do_nothing(tmp_path: Path, ledger_env: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(
        meta() + "\n" + noise(1) * 1 + "\n" + plan_line(1, ("A", "pending"), ("B", "pending")) + "\n"
    )
    hook({"hook_event_name": "Stop", "transcript_path": str(rollout)})
    rollout.write_text(meta() + "\n" + plan_line(2, ("A", "completed")) + "\n")  # shorter than the offset
    hook({"hook_event_name": "Stop", "transcript_path": str(rollout)})
    with Ledger(ledger_env) as lg:
        assert sorted(i["status"] for i in lg.items(PLAN)) == ["completed", "dropped"]
    assert hook({"hook_event_name": "PostToolUse", "transcript_path": str(rollout)}) == ""
    assert hook({"hook_event_name": "Stop", "transcript_path": str(tmp_path / "gone.jsonl")}) == ""


def test_a_replaced_longer_file_is_read_from_the_start(tmp_path: Path, ledger_env: Path) -> None:
    """The offset of the old file falls mid-line in the new one, which is longer:
    the fingerprint kept with the offset tells the files apart."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(meta() + "\n" + noise(1) + "\n" + plan_line(1, ("Build", "in_progress")) + "\n")
    event = {"hook_event_name": "Stop", "transcript_path": str(rollout)}
    hook(event)
    offset = rollout.stat().st_size
    other = json.dumps(
        {
            "timestamp": "2025-09-02T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "0199bbbb-2222", "cwd": "/src/app"},
        }
    )
    text = (
        other + "\n" + plan_line(5, ("Deploy", "in_progress"), ("Verify " + "x" * offset, "pending")) + "\n"
    )
    text += plan_line(6, ("Deploy", "completed"), ("Verify " + "x" * offset, "in_progress")) + "\n"
    rollout.write_text(text)
    assert rollout.stat().st_size > offset
    hook(event)

    def second(lg: Ledger) -> list[dict[str, Any]]:
        return [o for o in lg.ops(PLAN) if o["writer"] == "codex:0199bbbb-2222"]

    with Ledger(ledger_env) as lg:
        assert len(second(lg)) == 2  # the call cut by the old offset too
        assert [o["source_at"] for o in second(lg)] == ["L2", "L3"]
        status = {i["content"][:6]: i["status"] for i in lg.items(PLAN)}
        # The first file's session keeps its item beside the second session's.
        assert status == {"Build": "in_progress", "Deploy": "completed", "Verify": "in_progress"}
    assert cursor(ledger_env) == [("offset", rollout.stat().st_size), ("line", 3)]
    # Appending to it goes on from the offset (the fingerprint holds while the file grows).
    with rollout.open("a") as fh:
        fh.write(plan_line(7, ("Deploy", "completed"), ("Verify " + "x" * offset, "completed")) + "\n")
    hook(event)
    with Ledger(ledger_env) as lg:
        assert [o["source_at"] for o in second(lg)] == ["L2", "L3", "L4"]
