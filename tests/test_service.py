"""The Ledger service on a real SQLite file: writes, merges, commands, undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from todoledger import Ledger
from todoledger.core.model import CycleError, LedgerError, LintError


def todos(*entries: tuple[str, str] | tuple[str, str, str]) -> dict[str, Any]:
    out = []
    for e in entries:
        row = {"content": e[0], "status": e[1]}
        if len(e) == 3:
            row["priority"] = e[2]
        out.append(row)
    return {"todos": out}


def by_content(lg: Ledger, plan: str = "main") -> dict[str, dict[str, Any]]:
    return {i["content"]: i for i in lg.show(plan)["items"]}


@pytest.fixture
def lg(ledger_env: Path) -> Ledger:
    ledger = Ledger()
    yield ledger
    ledger.close()


def test_write_creates_items_in_order_with_events(lg: Ledger) -> None:
    res = lg.write(todos(("Check server", "in_progress", "high"), ("Benchmark 16", "pending")), writer="a")
    assert res.dialect == "opencode"
    view = lg.show()
    assert [i["content"] for i in view["items"]] == ["Check server", "Benchmark 16"]
    assert [i["id"] for i in view["items"]] == res.ids
    assert view["items"][0]["priority"] == "high" and view["items"][1]["priority"] == "medium"
    assert view["revision"] == 1
    events = lg.history()
    assert [(e["field"], e["writer"]) for e in events] == [("created", "a"), ("created", "a")]
    assert lg.check() == []


def test_status_change_priority_and_reword_are_events(lg: Ledger) -> None:
    lg.write(todos(("Benchmark with 16 draft tokens", "pending", "high")), writer="a")
    lg.write(todos(("Benchmark with 16 draft tokens now", "in_progress", "low")), writer="a")
    (item,) = lg.show()["items"]
    assert (item["content"], item["status"], item["priority"]) == (
        "Benchmark with 16 draft tokens now",
        "in_progress",
        "low",
    )
    fields = [e["field"] for e in lg.history(item=item["id"])]
    assert fields == ["created", "content", "status", "priority"]
    assert lg.check() == []


def test_numbers_are_not_rewordings(lg: Ledger) -> None:
    lg.write(todos(("Benchmark with 10 draft tokens", "pending")), writer="a")
    lg.write(todos(("Benchmark with 5 draft tokens", "pending")), writer="a")
    items = by_content(lg)
    assert items["Benchmark with 10 draft tokens"]["status"] == "dropped"
    assert items["Benchmark with 10 draft tokens"]["reason"] == "dropped by a at revision 2"
    assert items["Benchmark with 5 draft tokens"]["status"] == "pending"


def test_drop_closes_open_item_apart_from_a_cancel_and_restore_brings_it_back(lg: Ledger) -> None:
    lg.write(todos(("A", "in_progress"), ("B", "pending")), writer="a")
    res = lg.write(todos(("A", "in_progress")), writer="a")
    assert {
        "kind": "dropped",
        "item": by_content(lg)["B"]["id"],
        "content": "B",
        "was": "pending",
    } in res.changes
    b = by_content(lg)["B"]
    assert (b["status"], b["reason"]) == ("dropped", "dropped by a at revision 2")
    restored = lg.restore(b["id"])
    assert restored["status"] == "pending" and restored["reason"] is None


def test_dropping_completed_item_keeps_it_completed(lg: Ledger) -> None:
    lg.write(todos(("A", "completed"), ("B", "pending")), writer="a")
    lg.write(todos(("B", "in_progress")), writer="a")
    assert by_content(lg)["A"]["status"] == "completed"
    assert any(e["field"] == "dropped" for e in lg.history())


def test_items_outside_base_are_never_touched(lg: Ledger) -> None:
    lg.write(todos(("A1", "pending"), ("A2", "in_progress")), writer="agent-a")
    lg.write(todos(("B1", "pending")), writer="agent-b")
    lg.write(todos(("B1", "completed")), writer="agent-b")
    items = by_content(lg)
    assert items["A1"]["status"] == "pending" and items["A2"]["status"] == "in_progress"
    assert items["B1"]["status"] == "completed"


def test_stale_list_never_reverts_newer_status(lg: Ledger) -> None:
    lg.write(todos(("Train", "in_progress"), ("Deploy", "pending")), writer="a")
    train = by_content(lg)["Train"]["id"]
    lg.done(train, writer="cli:user", evidence="5 epochs, acc 74.7%")
    # Agent a still believes Train is in progress and repeats its stale list.
    res = lg.write(todos(("Train", "in_progress"), ("Deploy", "in_progress")), writer="a")
    items = by_content(lg)
    assert items["Train"]["status"] == "completed"
    assert items["Deploy"]["status"] == "in_progress"
    conflicts = [c for c in res.changes if c["kind"] == "conflict"]
    assert conflicts == [
        {
            "kind": "conflict",
            "item": train,
            "field": "status",
            "kept": "completed",
            "rejected": "in_progress",
            "winner": "ledger",
        }
    ]
    assert [e["new"]["kept"] for e in lg.history(item=train) if e["field"] == "conflict"] == ["completed"]
    # Repeating the same stale list records no second identical conflict.
    lg.write(todos(("Train", "in_progress"), ("Deploy", "in_progress")), writer="a")
    assert len([e for e in lg.history(item=train) if e["field"] == "conflict"]) == 1


def test_both_changed_newer_change_wins_and_is_recorded(lg: Ledger) -> None:
    lg.write(todos(("Train", "pending")), writer="a")
    train = by_content(lg)["Train"]["id"]
    lg.start(train, writer="b")
    lg.write(todos(("Train", "completed")), writer="a")
    assert by_content(lg)["Train"]["status"] == "completed"
    (conflict,) = [e for e in lg.history(item=train) if e["field"] == "conflict"]
    assert conflict["new"] == {
        "field": "status",
        "kept": "completed",
        "rejected": "in_progress",
        "winner": "writer",
    }


def test_drop_of_item_changed_by_someone_else_is_refused(lg: Ledger) -> None:
    lg.write(todos(("A", "pending"), ("B", "pending")), writer="a")
    b = by_content(lg)["B"]["id"]
    lg.start(b, writer="b")
    lg.write(todos(("A", "pending")), writer="a")
    assert by_content(lg)["B"]["status"] == "in_progress"


def test_exact_content_joins_other_writers_open_item(lg: Ledger) -> None:
    lg.write(todos(("Run tests", "pending")), writer="a")
    res = lg.write(todos(("Run tests", "in_progress")), writer="b")
    assert len(lg.show()["items"]) == 1
    assert res.changes[0]["kind"] == "status"


def test_ids_match_across_rewording(lg: Ledger) -> None:
    lg.write(
        {"todos": [{"id": "1", "content": "Kill servers", "status": "pending", "priority": "high"}]},
        writer="a",
    )
    lg.write(
        {
            "todos": [
                {"id": "1", "content": "Kill all the servers", "status": "completed", "priority": "high"}
            ]
        },
        writer="a",
    )
    (item,) = lg.show()["items"]
    assert (item["content"], item["status"]) == ("Kill all the servers", "completed")


def test_an_id_reused_for_other_work_is_a_new_item(lg: Ledger) -> None:
    # Claude Code 1.0 numbers every new list from "1": the id alone proves nothing.
    first = {
        "todos": [
            {"id": "1", "content": "Set up the music generator", "status": "completed", "priority": "high"}
        ]
    }
    second = {
        "todos": [
            {"id": "1", "content": "Write unit tests for the parser", "status": "pending", "priority": "high"}
        ]
    }
    lg.write(first, writer="claude")
    lg.write(second, writer="claude")
    items = by_content(lg)
    assert items["Set up the music generator"]["status"] == "completed"
    assert items["Write unit tests for the parser"]["status"] == "pending"
    second["todos"][0]["status"] = "in_progress"
    lg.write(second, writer="claude")
    assert by_content(lg)["Write unit tests for the parser"]["status"] == "in_progress"


def test_reorder_is_recorded_and_order_follows_writer(lg: Ledger) -> None:
    lg.write(todos(("A", "pending"), ("B", "pending"), ("C", "pending")), writer="a")
    res = lg.write(todos(("C", "pending"), ("A", "pending"), ("B", "pending")), writer="a")
    assert [i["content"] for i in lg.show()["items"]] == ["C", "A", "B"]
    assert {c["kind"] for c in res.changes} == {"reordered"}
    res = lg.write(todos(("C", "pending"), ("X", "pending"), ("A", "pending"), ("B", "pending")), writer="a")
    assert [i["content"] for i in lg.show()["items"]] == ["C", "X", "A", "B"]


def test_lint_errors_reject_and_change_nothing(lg: Ledger) -> None:
    lg.write(todos(("A", "pending")), writer="a")
    before = lg.show()
    bad = '{"todos":[{"content":"Benchmark 16 speculative tokens","priority":"pending","priority":"high"}]}'
    with pytest.raises(LintError) as err:
        lg.write(bad, writer="a")
    assert any(f.code == "duplicate-key" for f in err.value.findings)
    assert lg.show() == before
    with pytest.raises(LedgerError, match=r"unknown payload: not opencode .* codex .* gemini"):
        lg.write({"items": []}, writer="a")
    assert lg.show() == before


def test_warnings_are_stored_with_the_write(lg: Ledger) -> None:
    res = lg.write(todos(("Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...", "pending")), writer="a")
    assert [w.code for w in res.warnings] == ["truncated"]
    (op,) = lg.ops()
    assert op["warnings"][0]["code"] == "truncated"


def test_claude_tasks_create_update_and_dependencies(lg: Ledger) -> None:
    lg.write(
        {"subject": "Train drafter", "description": "5 epochs"},
        writer="c",
        response={"task": {"id": "1", "subject": "Train drafter"}},
    )
    lg.write({"subject": "Deploy"}, writer="c", response={"task": {"id": "2", "subject": "Deploy"}})
    lg.write({"taskId": "2", "addBlockedBy": ["1"]}, writer="c")
    items = by_content(lg)
    assert items["Deploy"]["depends_on"] == [items["Train drafter"]["id"]]
    assert items["Deploy"]["blocked"] is True and items["Deploy"]["ready"] is False
    lg.write({"task_id": "1", "status": "completed"}, writer="c")
    items = by_content(lg)
    assert items["Train drafter"]["status"] == "completed" and items["Deploy"]["ready"] is True
    lg.write({"id": "2", "status": "deleted"}, writer="c")
    assert by_content(lg)["Deploy"]["status"] == "cancelled"
    with pytest.raises(LedgerError, match="unknown task id"):
        lg.write({"taskId": "99", "status": "completed"}, writer="c")


def test_next_orders_by_priority_then_position_and_respects_deps(lg: Ledger) -> None:
    a = lg.add("low first", priority="low")
    b = lg.add("high second", priority="high")
    c = lg.add("high blocked", priority="high", depends_on=[a["id"]])
    assert [r["id"] for r in lg.next()] == [b["id"], a["id"]]
    claimed = lg.next(claim=True, writer="w1")
    assert claimed[0]["id"] == b["id"] and claimed[0]["status"] == "in_progress"
    lg.done(a["id"])
    assert [r["id"] for r in lg.next()] == [c["id"]]


def test_phases_children_and_parent_blocking(lg: Ledger) -> None:
    gate = lg.add("Deploy")
    phase = lg.add("Phase 0", depends_on=[gate["id"]])
    child = lg.add("Phase 0.1", parent=phase["id"])
    view = {i["id"]: i for i in lg.show()["items"]}
    assert view[child["id"]]["blocked"] is True and view[phase["id"]]["ready"] is False
    assert [r["id"] for r in lg.next()] == [gate["id"]]
    lg.done(gate["id"])
    assert [r["id"] for r in lg.next()] == [child["id"]]


def test_dependency_cycle_is_refused_and_named(lg: Ledger) -> None:
    a, b, c = lg.add("A"), lg.add("B"), lg.add("C")
    lg.dep_add(b["id"], a["id"])
    lg.dep_add(c["id"], b["id"])
    with pytest.raises(CycleError) as err:
        lg.dep_add(a["id"], c["id"])
    assert (
        str(err.value)
        == f"dependency cycle: {a['id']} -> {c['id']} -> {b['id']} -> {a['id']} (each waits for the next)"
    )
    with pytest.raises(CycleError):
        lg.update(a["id"], parent=a["id"])


def test_undo_reverses_last_change_and_repeats(lg: Ledger) -> None:
    lg.write(todos(("A", "pending"), ("B", "pending")), writer="a")
    lg.write(todos(("A", "completed")), writer="a")
    undone = lg.undo(writer="a")
    assert undone["kind"] == "write" and undone["yours"]
    items = by_content(lg)
    assert items["A"]["status"] == "pending" and items["B"]["status"] == "pending"
    lg.undo(writer="a")
    assert lg.show()["items"] == []
    with pytest.raises(LedgerError, match="nothing to undo"):
        lg.undo(writer="a")
    assert lg.check() == []


def test_export_import_round_trip_is_stable_and_idempotent(lg: Ledger, tmp_path: Path) -> None:
    a = lg.add("A", priority="high")
    lg.add("B", depends_on=[a["id"]])
    lg.done(a["id"], evidence="ok")
    lines = list(lg.export())
    assert [json.loads(x)["content"] for x in lines] == ["A", "B"]
    assert all(list(json.loads(x)) == sorted(json.loads(x)) for x in lines)
    with Ledger(tmp_path / "other.db") as other:
        assert other.import_jsonl(lines)["added"] == 2
        assert list(other.export()) == lines
        before = other.show()["revision"]
        again = other.import_jsonl(lines)
        assert again == {"plan": "main", "records": 2, "added": 0, "changed": 0}
        assert other.show()["revision"] == before
    with pytest.raises(LedgerError, match="line 1: invalid JSON"):
        lg.import_jsonl(["{nope"])


def test_prime_names_in_progress_ready_and_recent(lg: Ledger) -> None:
    lg.write(todos(("Train", "completed"), ("Deploy", "in_progress"), ("Benchmark", "pending")), writer="a")
    text = lg.prime()
    assert "In progress:" in text and "Deploy" in text.split("Ready next:")[0]
    assert "Benchmark" in text.split("Ready next:")[1].split("Recently completed:")[0]
    assert "Train" in text.split("Recently completed:")[1]


def test_plans_are_separate(lg: Ledger) -> None:
    lg.write(todos(("A", "pending")), writer="a", plan="one")
    lg.write(todos(("B", "pending")), writer="a", plan="two")
    assert [p["plan"] for p in lg.plans()] == ["one", "two"]
    assert [i["content"] for i in lg.show("two")["items"]] == ["B"]


def test_reading_a_missing_ledger_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "ledger.db"
    with Ledger(path, create=False) as lg:
        assert lg.show()["items"] == []
    assert not path.exists()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "future.db"
    Ledger(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(LedgerError, match="written by a newer todoledger"):
        Ledger(path)


@pytest.mark.sqlite_only
def test_ledger_uses_wal_and_named_migrations(ledger_env: Path) -> None:
    import sqlite3

    Ledger().close()
    conn = sqlite3.connect(ledger_env)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    from todoledger.store.migrations import MIGRATIONS

    applied = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    assert applied == [name for name, _ in MIGRATIONS] and applied[0] == "initial"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    conn.close()


def test_locate_prefers_nearest_dot_folder_then_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from todoledger.store.locate import ledger_file as locate

    def ledger_path(cwd: Path) -> Path:
        return Path(locate(cwd))

    monkeypatch.delenv("TODOLEDGER_DB")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    assert ledger_path(deep) == repo.resolve() / ".todoledger" / "ledger.db"
    (repo / "a" / ".todoledger").mkdir()
    assert ledger_path(deep) == (repo / "a").resolve() / ".todoledger" / "ledger.db"
    monkeypatch.setenv("TODOLEDGER_DB", str(tmp_path / "x.db"))
    assert ledger_path(deep) == tmp_path / "x.db"


def test_new_writer_relisting_finished_work_does_not_reopen_or_duplicate(lg: Ledger) -> None:
    lg.write(todos(("Run tests", "in_progress")), writer="old-session")
    lg.write(todos(("Run tests", "completed")), writer="old-session")
    res = lg.write(todos(("Run tests", "pending"), ("Deploy", "pending")), writer="new-session")
    items = lg.show()["items"]
    assert [(i["content"], i["status"]) for i in items] == [("Run tests", "completed"), ("Deploy", "pending")]
    assert [c["kind"] for c in res.changes if c["item"] == items[0]["id"]] == ["conflict"]
    # Its next list still never saw the completion: moving the item on from
    # what it believed does not reopen finished work.
    lg.write(todos(("Run tests", "in_progress"), ("Deploy", "pending")), writer="new-session")
    assert lg.show()["items"][0]["status"] == "completed"
    # Reopening is a deliberate act on the item itself.
    lg.start(items[0]["id"], writer="new-session")
    assert lg.show()["items"][0]["status"] == "in_progress"


def test_every_change_bumps_the_revision(lg: Ledger) -> None:
    a = lg.add("A")
    revisions = [lg.show()["revision"]]
    for step in (
        lambda: lg.next(claim=True, writer="w"),
        lambda: lg.done(a["id"], writer="w"),
        lambda: lg.undo(writer="w"),
    ):
        step()
        revisions.append(lg.show()["revision"])
    assert revisions == sorted(set(revisions)) and len(revisions) == 4


def test_a_nul_character_is_refused_alike_on_both_backends(lg: Ledger) -> None:
    with pytest.raises(LintError, match="contains a NUL character"):
        lg.write(todos(("a\x00b", "pending")), writer="a")
    item = lg.add("Plain", writer="a")
    with pytest.raises(LedgerError, match="notes contains a NUL character"):
        lg.update(item["id"], writer="a", notes="x\x00y")
    assert [i["content"] for i in lg.items()] == ["Plain"] and lg.check() == []
