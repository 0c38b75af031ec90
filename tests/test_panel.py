"""Claude Code's task panel, written one way from the plan (`install claude-code --panel`):
the files as Claude Code reads them, the ledger on both backends, the hook as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.install import run
from todoledger.install.runner import uninstall
from todoledger.panel import Target, list_id, record_path, target
from todoledger.panel import files as panel_files
from todoledger.panel.rows import MAX_DONE
from todoledger.panel.sync import seen, sync

WRITER = "cli:tester"


def rows(folder: Path) -> dict[str, dict[str, Any]]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(folder.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else 0)
        if not p.name.startswith(".")
    }


def by_subject(folder: Path) -> dict[str, dict[str, Any]]:
    return {r["subject"]: r for r in rows(folder).values()}


@pytest.fixture
def where(tmp_path: Path) -> Target:
    folder = tmp_path / "claude" / "tasks" / "todoledger-main-0000"
    folder.mkdir(parents=True)
    return Target(str(tmp_path), "main", "todoledger-main-0000", str(folder))


# install -----------------------------------------------------------------------------
def test_install_panel_sets_the_list_and_uninstall_takes_back_exactly_that(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    local = project / ".claude" / "settings.local.json"
    local.write_text('{\n  "env": {"MINE": "x"}\n}\n', encoding="utf-8")
    plain = run("claude-code", project=project, home=home)
    before_panel = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = run("claude-code", project=project, home=home, panel=True, plan="main")
    name = list_id("main", project)
    assert name.startswith("todoledger-main-") and len(name) == len("todoledger-main-") + 8
    env = json.loads(local.read_text(encoding="utf-8"))["env"]
    assert env == {"MINE": "x", "CLAUDE_CODE_TASK_LIST_ID": name, "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    folder = home / ".claude" / "tasks" / name
    assert folder.is_dir()  # made at install: Claude Code shows external rows only if it exists
    found = target(str(project), home)
    assert found is not None and found.folder == str(folder) and found.plan == "main"
    assert any("TaskList tools back" in n for n in result.notes)  # what changes for the model is said
    assert plain.changed
    # uninstall: the settings as they were, the record and the folder gone, the rest as --panel found it
    uninstall("claude-code", project=project, home=home)
    assert local.read_text(encoding="utf-8") == '{\n  "env": {"MINE": "x"}\n}\n'
    assert not record_path(home, project).exists()
    assert not folder.exists() and not (home / ".claude").exists()
    assert all(not p.exists() or p == local for p in before_panel if p != local)


def test_reinstall_without_panel_takes_the_panel_back(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    run("claude-code", project=project, home=home)
    assert target(str(project), home) is None
    assert not (project / ".claude" / "settings.local.json").exists()


def test_panel_is_for_claude_code_only(tmp_path: Path) -> None:
    from todoledger.core.model import LedgerError

    with pytest.raises(LedgerError, match="claude-code only"):
        run("codex", project=tmp_path, home=tmp_path, panel=True)


# sync ----------------------------------------------------------------------------------
def test_rows_show_open_items_with_their_order_and_dependencies(ledger_env: Path, where: Target) -> None:
    folder = Path(where.folder)
    with Ledger() as lg:
        a = lg.add("Write the parser", writer=WRITER, notes="see \x1b[31mRFC\x1b[0m")
        b = lg.add("Test the parser", writer=WRITER, depends_on=[a["id"]])
        c = lg.add("Drop me", writer=WRITER)
        lg.add("Ship it", writer=WRITER, depends_on=[c["id"], b["id"]])
        sync(lg, where)
        shown = by_subject(folder)
        assert list(shown) == ["Write the parser", "Test the parser", "Drop me", "Ship it"]
        first, test, drop, ship = (shown[s] for s in shown)
        assert first["blocks"] == [test["id"]] and test["blockedBy"] == [first["id"]]
        assert sorted(ship["blockedBy"]) == sorted([drop["id"], test["id"]])
        assert (
            "\x1b" not in first["description"] and f"todoledger {a['id']} · plan main" in first["description"]
        )
        assert first["metadata"]["todoledger"]["item"] == a["id"] and "owner" not in first
        assert int((folder / ".highwatermark").read_text()) == 4
        lg.cancel(c["id"], writer=WRITER, reason="not needed")
        report = sync(lg, where)
        shown = by_subject(folder)
        assert "Drop me" not in shown and report.removed == [drop["id"]]
        assert shown["Ship it"]["blockedBy"] == [test["id"]]  # its number left every list


def test_completed_with_a_failing_gate_is_not_shown_completed(
    ledger_env: Path, where: Target, tmp_path: Path
) -> None:
    with Ledger() as lg:
        item = lg.add("Write the report", writer=WRITER)
        lg.add_check(item["id"], f"file:{tmp_path / 'missing.md'}", writer="cli:person")
        lg.update(item["id"], status="completed", writer="cli:person", force=True, force_reason="test")
        sync(lg, where)
    (row,) = rows(Path(where.folder)).values()
    assert row["status"] == "in_progress" and row["subject"] == "Write the report (gate failing)"


def test_completed_on_typed_numbers_says_so_not_failing(ledger_env: Path, where: Target) -> None:
    """A typed number meets the gate yet proves nothing: the row is not completed, and it does
    not say the gate fails either (adversarial review: "(gate failing)" was said of every state)."""
    with Ledger() as lg:
        item = lg.add("Beat the baseline", writer=WRITER)
        lg.add_check(item["id"], "metric:tok_s>=10", writer="cli:person")
        lg.record_metrics(item["id"], {"tok_s": 12.0}, writer="claude-code:s1")
        lg.update(item["id"], status="completed", writer="cli:person", force=True, force_reason="typed it")
        (shown,) = [i for i in lg.show()["items"] if i["id"] == item["id"]]
        assert shown["verification"] == "typed"
        sync(lg, where)
    (row,) = rows(Path(where.folder)).values()
    assert row["status"] == "in_progress" and row["subject"] == "Beat the baseline (not verified: typed)"


def test_the_cap_keeps_twenty_completed_and_counts_the_rest(ledger_env: Path, where: Target) -> None:
    with Ledger() as lg:
        done = [lg.add(f"done {n}", writer=WRITER) for n in range(MAX_DONE + 5)]
        for it in done:
            lg.done(it["id"], writer=WRITER)
        lg.add("still open", writer=WRITER)
        sync(lg, where)
    shown = by_subject(Path(where.folder))
    assert sum(1 for r in shown.values() if r["status"] == "completed") == MAX_DONE
    assert "… 5 more: todoledger show" in shown and "still open" in shown
    assert "done 24" in shown and "done 0" not in shown  # the most recent ones


def test_nothing_is_written_when_the_rows_match(ledger_env: Path, where: Target) -> None:
    with Ledger() as lg:
        lg.add("One", writer=WRITER)
        assert sync(lg, where).written == ["1"]
        stamp = os.stat(Path(where.folder) / "1.json").st_mtime_ns
        assert sync(lg, where).skipped == "unchanged"
        lg.add("Two", writer=WRITER)
        assert sync(lg, where).written == ["2"]  # row 1 is the same: not rewritten
        assert os.stat(Path(where.folder) / "1.json").st_mtime_ns == stamp


def test_a_row_the_model_changed_is_never_overwritten(ledger_env: Path, where: Target) -> None:
    folder = Path(where.folder)
    with Ledger() as lg:
        item = lg.add("Write the parser", writer=WRITER)
        sync(lg, where)
        row = json.loads((folder / "1.json").read_text())
        row["status"] = "in_progress"  # the model's TaskUpdate, not mirrored yet
        (folder / "1.json").write_text(json.dumps(row, indent=2))
        lg.update(item["id"], content="Write the parser well", writer=WRITER)
        report = sync(lg, where)
        assert report.kept == ["1"] and json.loads((folder / "1.json").read_text())["status"] == "in_progress"
        # The hook mirrors the call and records the file as seen: the next sync writes from there.
        lg.update(item["id"], status="in_progress", writer="claude-code:s1")
        seen(lg, where, "1", item["id"])
        sync(lg, where)
    row = json.loads((folder / "1.json").read_text())
    assert row["subject"] == "Write the parser well" and row["status"] == "in_progress"


def test_after_claudes_reset_the_writer_waits_for_open_work(ledger_env: Path, where: Target) -> None:
    folder = Path(where.folder)
    with Ledger() as lg:
        item = lg.add("Only task", writer=WRITER)
        sync(lg, where)
        lg.done(item["id"], writer=WRITER)
        sync(lg, where)
        assert rows(folder)["1"]["status"] == "completed"
        (folder / "1.json").unlink()  # Claude Code deletes an all-completed list 5 s later
        lg.add("Unrelated note", writer=WRITER, status="completed")
        assert sync(lg, where).skipped == "reset"
        assert rows(folder) == {}
        assert sync(lg, where).skipped == "unchanged"
        lg.add("New work", writer=WRITER)
        sync(lg, where)
    shown = by_subject(folder)
    assert shown["New work"]["status"] == "pending" and shown["New work"]["id"] == "2"  # above the old ids


def test_a_held_lock_makes_the_sync_give_up_and_a_stale_one_is_taken_over(
    ledger_env: Path, where: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(panel_files, "WAIT_S", 0.05)
    lock = Path(where.folder) / ".lock.lock"
    lock.mkdir()
    with Ledger() as lg:
        lg.add("One", writer=WRITER)
        assert sync(lg, where).skipped == "busy"
        assert rows(Path(where.folder)) == {} and lock.is_dir()  # someone else's lock stays
        old = time.time() - 11
        os.utime(lock, (old, old))  # its holder died over 10 s ago
        assert sync(lg, where).written == ["1"]
    assert not lock.exists()


def test_a_new_row_never_lands_on_a_name_taken_meanwhile(ledger_env: Path, where: Target) -> None:
    folder = Path(where.folder)
    (folder / "1.json").write_text(
        '{"id": "1", "subject": "model\'s", "description": "", "status": "pending",'
        ' "blocks": [], "blockedBy": []}'
    )
    with Ledger() as lg:
        lg.add("Ours", writer=WRITER)
        sync(lg, where)
    assert by_subject(folder)["model's"]["id"] == "1" and by_subject(folder)["Ours"]["id"] == "2"


# the hook -----------------------------------------------------------------------------
def _hook(env: dict[str, str], event: dict[str, Any]) -> None:
    done = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_hook_adopts_the_models_row_and_maps_its_updates(ledger_env: Path, tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    found = target(str(project), home)
    assert found is not None
    folder = Path(found.folder)
    env = {**subprocess_env(ledger_env), "HOME": str(home), "CLAUDE_CODE_TASK_LIST_ID": found.list_id}
    with Ledger() as lg:
        ours = lg.add("From the ledger", writer=WRITER)
    event = {"session_id": "s1", "cwd": str(project), "transcript_path": "/tmp/t.jsonl"}
    folder.rmdir()  # gone since install: SessionStart makes it again, first of all
    _hook(env, {**event, "hook_event_name": "SessionStart", "source": "startup"})
    assert by_subject(folder)["From the ledger"]["id"] == "1"
    # The model's TaskCreate: Claude Code wrote row 2, then the hook ran.
    made = {
        "id": "2",
        "subject": "Model's own",
        "description": "",
        "status": "pending",
        "blocks": [],
        "blockedBy": [],
    }
    (folder / "2.json").write_text(json.dumps(made, indent=2))
    _hook(
        env,
        {
            **event,
            "hook_event_name": "PostToolUse",
            "tool_name": "TaskCreate",
            "tool_input": {"subject": "Model's own", "description": ""},
            "tool_response": {"task": {"id": "2", "subject": "Model's own"}},
        },
    )
    with Ledger() as lg:
        items = {it["content"]: it for it in lg.items()}
    assert set(items) == {"From the ledger", "Model's own"}
    adopted = rows(folder)
    assert len(adopted) == 2 and adopted["2"]["metadata"]["todoledger"]["item"] == items["Model's own"]["id"]
    # The model's TaskUpdate of the ledger's row 1 reaches that item.
    row = adopted["1"] | {"status": "in_progress"}
    (folder / "1.json").write_text(json.dumps(row, indent=2))
    _hook(
        env,
        {
            **event,
            "hook_event_name": "PostToolUse",
            "tool_name": "TaskUpdate",
            "tool_input": {"taskId": "1", "status": "in_progress"},
            "tool_response": {"success": True, "taskId": "1"},
        },
    )
    with Ledger() as lg:
        assert lg.get(ours["id"])["status"] == "in_progress"
    assert rows(folder)["1"]["status"] == "in_progress" and len(rows(folder)) == 2


def test_a_cli_write_from_a_terminal_reaches_the_same_folder(ledger_env: Path, tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    found = target(str(project), home)
    assert found is not None
    env = {**subprocess_env(ledger_env), "HOME": str(home)}
    env.pop("CLAUDE_CODE_TASK_LIST_ID", None)
    done = subprocess.run(
        [todoledger_bin(), "add", "Typed by a person"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Typed by a person" in by_subject(Path(found.folder))


def test_a_model_row_mirrored_but_not_yet_recorded_is_adopted_not_doubled(
    ledger_env: Path, where: Target
) -> None:
    """A sync between the hook's mirror of a TaskCreate and its record of the row."""
    folder = Path(where.folder)
    made = {
        "id": "1",
        "subject": "Model's own",
        "description": "",
        "status": "pending",
        "blocks": [],
        "blockedBy": [],
    }
    (folder / "1.json").write_text(json.dumps(made, indent=2))
    with Ledger() as lg:
        item = lg.write(
            {"subject": "Model's own"},
            dialect="claude-tasks",
            writer="claude-code:s1",
            response={"task": {"id": "1"}},
        ).ids[0]
        sync(lg, where)
    shown = rows(folder)
    assert list(shown) == ["1"] and shown["1"]["metadata"]["todoledger"]["item"] == item


def test_a_board_action_and_an_mcp_call_reach_the_panel(
    ledger_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other interfaces' writes: the board's `/api/action` and an MCP tool call, in process."""
    from starlette.testclient import TestClient

    from todoledger.mcp.http import create_app
    from todoledger.mcp.tools import PlanTools
    from todoledger.web.app import Board

    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    monkeypatch.setenv("HOME", str(home))
    found = target(str(project))
    assert found is not None
    board = Board(name="tester", cwd=project)
    app, tools = create_app(routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            headers = {"x-csrf-token": board.csrf, "Origin": "http://127.0.0.1:8765"}
            answer = client.post(
                "/api/action", json={"action": "add", "content": "From the board"}, headers=headers
            )
            assert answer.status_code == 200, answer.text
    finally:
        tools.close()
        board.close()
    assert "From the board" in by_subject(Path(found.folder))
    server = PlanTools(cwd=project)
    try:
        server.todowrite({"todos": [{"content": "From an MCP call", "status": "pending"}]}, "mcp:codex:1")
    finally:
        server.close()
    assert "From an MCP call" in by_subject(Path(found.folder))


def test_watch_panel_brings_writes_that_sync_nothing_to_the_panel(ledger_env: Path, tmp_path: Path) -> None:
    """Team mode: another machine's write runs no sync here; `todoledger watch --panel` does."""
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    found = target(str(project), home)
    assert found is not None
    env = {**subprocess_env(ledger_env), "HOME": str(home)}
    with Ledger() as lg:  # the Python API: no interface, so no sync of its own
        lg.add("Before the watch", writer=WRITER)
    watch = subprocess.Popen(
        [todoledger_bin(), "watch", "--panel", "--count", "1"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    folder = Path(found.folder)
    try:
        deadline = time.monotonic() + 30
        while "Before the watch" not in by_subject(folder) and time.monotonic() < deadline:
            time.sleep(0.05)  # the watch's first sync: it has started
        assert "Before the watch" in by_subject(folder)
        with Ledger() as lg:
            lg.add("From another machine", writer=WRITER)
        assert watch.wait(timeout=30) == 0, watch.stderr.read() if watch.stderr else ""
    finally:
        if watch.poll() is None:
            watch.kill()
    assert "From another machine" in by_subject(Path(found.folder))


def test_a_panel_for_another_plan_replaces_the_earlier_one(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    result = run("claude-code", project=project, home=home, panel=True, plan="release")
    env = json.loads((project / ".claude" / "settings.local.json").read_text())["env"]
    assert env["CLAUDE_CODE_TASK_LIST_ID"] == list_id("release", project)
    found = target(str(project), home)
    assert found is not None and found.plan == "release"
    assert any("(was todoledger-main-" in line for c in result.changes for line in c.summary)
    uninstall("claude-code", project=project, home=home)
    assert not (project / ".claude" / "settings.local.json").exists()


def test_a_models_completion_the_ledger_refused_is_not_left_completed_on_the_panel(
    ledger_env: Path, tmp_path: Path
) -> None:
    """Adversarial review (held): the model's TaskUpdate marks a row completed whose item
    another agent holds (Codex's lease). The ledger refuses the mirror; the row must not
    stay `completed` on the panel although the model changed it."""
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    home.mkdir()
    run("claude-code", project=project, home=home, panel=True, plan="main")
    found = target(str(project), home)
    assert found is not None
    folder = Path(found.folder)
    env = {**subprocess_env(ledger_env), "HOME": str(home), "CLAUDE_CODE_TASK_LIST_ID": found.list_id}
    with Ledger() as lg:
        theirs = lg.add("Codex's migration", writer=WRITER)
        (got,) = lg.next(claim=True, writer="codex:w9", lease=600)
        assert got["id"] == theirs["id"] and lg.leases()
    event = {"session_id": "s1", "cwd": str(project), "transcript_path": "/tmp/t.jsonl"}
    _hook(env, {**event, "hook_event_name": "SessionStart", "source": "startup"})
    (row_id,) = [r for r, v in rows(folder).items() if v["subject"] == "Codex's migration"]
    row = rows(folder)[row_id] | {"status": "completed"}
    (folder / f"{row_id}.json").write_text(json.dumps(row, indent=2))  # Claude Code's write
    _hook(
        env,
        {
            **event,
            "hook_event_name": "PostToolUse",
            "tool_name": "TaskUpdate",
            "tool_input": {"taskId": row_id, "status": "completed"},
            "tool_response": {"success": True, "taskId": row_id},
        },
    )
    with Ledger() as lg:
        assert lg.get(theirs["id"])["status"] == "in_progress"  # refused: Codex holds it
        lg.add("Another item", writer=WRITER)  # a later revision: the sync runs again
        sync(lg, found)
    assert rows(folder)[row_id]["status"] != "completed", rows(folder)[row_id]
