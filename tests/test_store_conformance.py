"""What every storage backend must do, written against the interface
(`Store`, with the portable queries of `Repo` and `Writes` over it).

Each test runs once per backend in BACKENDS: PostgreSQL joins with one
entry (an opener and its way to stamp a newer schema version).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from todoledger.core.merge import Seen
from todoledger.core.model import CREATED, REMOVED, STATE_FIELDS, Item, LedgerError
from todoledger.store.base import Store
from todoledger.store.migrations import MIGRATIONS, SCHEMA_VERSION
from todoledger.store.repo import Repo, Writes
from todoledger.store.sqlite import SQLiteStore

from .pgserver import ledger_url

AT = "2026-01-01T00:00:00.000Z"
LATER = "2026-01-01T00:01:00.000Z"


@dataclass
class Backend:
    open: Callable[[Path], Store]  # the same folder opens the same ledger again
    stamp_version: Callable[[Store, int], None]  # as if a newer todoledger had migrated it


def _postgres(folder: Path) -> Store:
    from todoledger.store.postgres import PostgresStore

    # The same folder names the same schema, so reopening finds the same ledger.
    schema = "c_" + hashlib.sha1(str(folder).encode()).hexdigest()[:16]
    return PostgresStore(ledger_url(schema))


BACKENDS = {
    "sqlite": Backend(lambda folder: SQLiteStore(folder / "ledger.db"), lambda s, v: s.stamp_version(v)),
    "postgres": Backend(_postgres, lambda s, v: s.stamp_version(v)),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    opened = backend.open(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def repo(store: Store) -> Repo:
    return Repo(store)


def op(repo: Repo, plan: str = "p", writer: str = "w", kind: str = "write", **extra: object) -> Writes:
    return Writes(repo, plan, writer, AT, repo.new_op(plan, writer, AT, kind, **extra))


def item(item_id: str, plan: str = "p", **fields: object) -> Item:
    return Item(id=item_id, plan=plan, content=f"content of {item_id}", **fields)


def add(repo: Repo, *items: Item, plan: str = "p", writer: str = "w") -> int:
    with repo.db.write():
        w = op(repo, plan, writer)
        for it in items:
            w.create(it)
        w.flush()
    return w.op


# schema ----------------------------------------------------------------------
def test_a_new_ledger_has_every_migration_once(backend: Backend, tmp_path: Path) -> None:
    first = backend.open(tmp_path)
    first.close()
    again = backend.open(tmp_path)  # reopening migrates nothing twice
    names = [r[0] for r in again.query("SELECT name FROM migrations")]
    again.close()
    assert sorted(names) == sorted(name for name, _ in MIGRATIONS)
    assert len(names) == SCHEMA_VERSION


def test_a_ledger_from_a_newer_version_is_refused(backend: Backend, tmp_path: Path) -> None:
    opened = backend.open(tmp_path)
    backend.stamp_version(opened, SCHEMA_VERSION + 1)
    opened.close()
    with pytest.raises(LedgerError, match="newer todoledger"):
        backend.open(tmp_path)


def test_a_sound_ledger_has_no_integrity_findings(store: Store) -> None:
    assert store.integrity() == []


# items and events --------------------------------------------------------------
def test_items_are_created_changed_and_removed_with_their_events(repo: Repo) -> None:
    add(repo, item("a1", position=1.0), item("b2", position=2.0, depends_on=["a1"], priority="high"))
    assert [i.id for i in repo.items("p")] == ["a1", "b2"]
    assert repo.item("b2") == item(
        "b2",
        position=2.0,
        depends_on=["a1"],
        priority="high",
        created_by="w",
        updated_by="w",
        created_at=AT,
        updated_at=AT,
    )
    with repo.db.write():
        w = op(repo, writer="v")
        w.set("a1", "status", "pending", "completed")
        w.set("a1", "evidence", None, "tests pass")
        w.set("b2", "depends_on", ["a1"], [])
        w.set("b2", "content", "content of b2", "content of b2")  # unchanged: no event
        w.flush()
    a1 = repo.item("a1")
    assert a1 is not None and (a1.status, a1.evidence, a1.updated_by) == ("completed", "tests pass", "v")
    assert repo.blockers("b2") == []
    b2 = repo.item("b2")
    assert b2 is not None and b2.updated_by == "v"
    with repo.db.write():
        w = op(repo)
        w.remove(b2)
        w.flush()
    assert repo.item("b2") is None
    events = [(e.item, e.field, e.old, e.new) for e in repo.events("p")]
    removed = {name: getattr(b2, name) for name in STATE_FIELDS}
    assert events == [
        (
            "a1",
            CREATED,
            None,
            {"content": "content of a1", "status": "pending", "priority": "medium", "position": 1.0},
        ),
        (
            "b2",
            CREATED,
            None,
            {
                "content": "content of b2",
                "status": "pending",
                "priority": "high",
                "position": 2.0,
                "depends_on": ["a1"],
            },
        ),
        ("a1", "status", "pending", "completed"),
        ("a1", "evidence", None, "tests pass"),
        ("b2", "depends_on", ["a1"], []),
        ("b2", REMOVED, removed, None),
    ]
    assert {e.writer for e in repo.events("p", item="a1")} == {"w", "v"}


def test_events_filter_by_item_and_op_and_keep_their_order(repo: Repo) -> None:
    first = add(repo, item("a1"), item("b2"))
    second = add(repo, item("c3"))
    assert [e.item for e in repo.events("p", item="b2")] == ["b2"]
    assert [e.item for e in repo.events("p", op=second)] == ["c3"]
    seqs = [e.seq for e in repo.events("p")]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    assert {e.op for e in repo.events("p", op=first)} == {first}


def test_a_rolled_back_write_leaves_nothing(repo: Repo) -> None:
    with pytest.raises(RuntimeError), repo.db.write():
        w = op(repo)
        w.create(item("a1"))
        repo.touch_plan("p", AT)
        w.flush()
        raise RuntimeError("refused")
    assert repo.items("p") == []
    assert repo.events("p") == []
    assert repo.ops("p") == []
    assert repo.revision("p") == 0


def test_a_savepoint_takes_back_only_its_own_part(repo: Repo) -> None:
    with repo.db.write():
        w = op(repo)
        w.create(item("a1"))
        w.flush()
        with pytest.raises(LedgerError), repo.savepoint():
            inner = op(repo)
            inner.create(item("b2"))
            inner.flush()
            raise LedgerError("a cycle")
    assert [i.id for i in repo.items("p")] == ["a1"]
    assert [e.item for e in repo.events("p")] == ["a1"]


def test_items_stay_in_their_plan(repo: Repo) -> None:
    add(repo, item("a1", position=1.0))
    add(repo, item("a2", plan="q", position=5.0), plan="q")
    assert [i.id for i in repo.items("p")] == ["a1"]
    assert repo.ids_with_prefix("p", "a") == ["a1"]
    assert repo.ids_by_content("p", ["content of a1", "content of a2"]) == ["a1"]
    assert repo.tail_position("p") == 1.0 and repo.tail_position("empty") == 0.0
    assert repo.events("q")[0].item == "a2"


def test_lookups_by_many_ids_and_contents_cross_chunk_limits(repo: Repo) -> None:
    many = [item(f"i{n:04d}", position=float(n)) for n in range(1, 1201)]
    add(repo, *many)
    assert len(repo.items_by_id([i.id for i in many])) == 1200
    assert len(repo.ids_by_content("p", [i.content for i in many] * 2)) == 1200
    assert repo.position_after("p", 10.0) == 11.0 and repo.position_after("p", 1200.0) is None


def test_prefix_lookup_takes_underscore_and_percent_literally(repo: Repo) -> None:
    add(repo, item("ab_cd"), item("abxcd"), item("a%zzz"), item("aqzzz"))
    assert repo.ids_with_prefix("p", "ab_") == ["ab_cd"]
    assert repo.ids_with_prefix("p", "a%") == ["a%zzz"]
    assert sorted(repo.ids_with_prefix("p", "ab")) == ["ab_cd", "abxcd"]


def test_ready_candidates_wait_for_blockers_and_open_children(repo: Repo) -> None:
    add(
        repo,
        item("blocker", position=1.0),
        item("waits", position=2.0, priority="high", depends_on=["blocker"]),
        item("phase", position=3.0),
        item("child", position=4.0, parent="phase", priority="low"),
        item("urgent", position=5.0, priority="high"),
        item("started", position=6.0, status="in_progress"),
    )

    def ready(limit: int) -> list[tuple[str, list[str]]]:
        candidates, checked = repo.ready_candidates("p", limit)
        assert not checked  # the plan has no checks
        whole = repo.items_by_id([i.id for i in candidates])
        assert candidates == [whole[i.id] for i in candidates]  # whole rows, blockers and all
        return [(i.id, i.depends_on) for i in candidates]

    assert ready(10) == [("urgent", []), ("blocker", []), ("child", [])]
    assert ready(1) == [("urgent", [])]
    assert repo.parent_of("child") == "phase" and repo.blockers("waits") == ["blocker"]
    with repo.db.write():
        w = op(repo)
        w.set("blocker", "status", "pending", "completed")
        w.set("child", "status", "pending", "cancelled")
        w.flush()
    assert ready(10) == [("waits", ["blocker"]), ("urgent", []), ("phase", [])]


# writers' views ------------------------------------------------------------------
def test_bases_are_per_writer_and_updated_in_place(repo: Repo) -> None:
    with repo.db.write():
        repo.save_base(
            "p", "w", {"a1": Seen("A", "pending", "high", None), "b2": Seen("B", "pending", None, None)}
        )
        repo.save_base("p", "v", {"a1": Seen("A", "completed", "high", "Doing A")})
        repo.save_base("p", "w", {"a1": Seen("A2", "in_progress", "high", None)})
        repo.forget_base("p", "w", ["b2"])
    assert repo.base("p", "w") == {"a1": Seen("A2", "in_progress", "high", None)}
    assert repo.base("p", "v") == {"a1": Seen("A", "completed", "high", "Doing A")}
    assert repo.base("q", "w") == {}


def test_aliases_are_per_writer_and_repointed(repo: Repo) -> None:
    with repo.db.write():
        repo.save_aliases("p", "w", {"1": "a1", "2": "b2"})
        repo.save_aliases("p", "w", {"1": "c3"})
        repo.save_aliases("p", "v", {"1": "zz"})
    assert repo.aliases("p", "w") == {"1": "c3", "2": "b2"}
    assert repo.aliases("p", "v") == {"1": "zz"}


def test_panel_rows_are_kept_per_list_and_forgotten_when_gone(repo: Repo) -> None:
    assert repo.panel("L") == (None, False, {})
    with repo.db.write():
        repo.save_panel("L", "p", 3, False, {"1": ("a1", "h1"), "2": ("b2", "h2")}, [])
        repo.save_panel("M", "p", 1, True, {"1": ("zz", "h9")}, [])
    with repo.db.write():
        repo.save_panel(
            "L", "p", None, None, {"2": ("b2", "h3")}, ["1"]
        )  # a row seen: the list's state stays
    assert repo.panel("L") == (3, False, {"2": ("b2", "h3")})
    with repo.db.write():
        repo.save_panel("L", "p", 4, True, {}, [])
    assert repo.panel("L") == (4, True, {"2": ("b2", "h3")})
    assert repo.panel("M") == (1, True, {"1": ("zz", "h9")})


# plans, ops and undo ---------------------------------------------------------------
def test_revisions_count_changes_per_plan(repo: Repo) -> None:
    with repo.db.write():
        assert repo.ensure_plan("p", AT) == 0
        assert repo.touch_plan("p", AT) == 1
        assert repo.touch_plan("p", LATER) == 2
        assert repo.ensure_plan("p", LATER) == 2
        assert repo.touch_plan("q", AT) == 1
    assert repo.revision("p") == 2 and repo.revision("none") == 0
    add(repo, item("a1"), item("b2", status="completed"))
    assert repo.plans() == [("p", 2, LATER, 2, 1), ("q", 1, AT, 0, 0)]


def test_ops_record_who_what_and_the_undo_bookkeeping(repo: Repo) -> None:
    first = add(repo, item("a1"))
    with repo.db.write():
        notes_only = op(repo, kind="write", warnings=[{"level": "warning", "message": "two in progress"}])
        notes_only.annotate("a1", "conflict", None, {"field": "status"})
        notes_only.flush()
    assert notes_only.op > first
    last = repo.last_undoable("p")
    assert last is not None and last[:3] == (first, "write", "w")  # annotations alone are not undoable
    with repo.db.write():
        undo = op(repo, kind="undo")
        repo.mark_undone(first, undo.op)
    assert repo.last_undoable("p") is None
    rows = {r[0]: r for r in repo.ops("p")}
    assert rows[first][7] == undo.op
    assert rows[notes_only.op][6] is not None and "two in progress" in rows[notes_only.op][6]
    assert repo.conflicts_since_change("a1", "w") == [{"field": "status"}]
    assert repo.conflicts_since_change("a1", "v") == []


def test_a_conflict_is_forgotten_once_the_item_changes(repo: Repo) -> None:
    add(repo, item("a1"))
    with repo.db.write():
        w = op(repo)
        w.annotate("a1", "conflict", None, {"field": "status"})
        w.set("a1", "status", "pending", "in_progress")
        w.flush()
    assert repo.conflicts_since_change("a1", "w") == []


# imports: source keys and cursors ----------------------------------------------
def test_source_keys_mark_imported_calls(repo: Repo) -> None:
    with repo.db.write():
        repo.new_op("p", "w", AT, "write", source_key="codex:s_1:c1", source_at="file:3")
        repo.new_op("q", "w", AT, "write", source_key="codex:s%2:c1")
        repo.new_op("q", "w", AT, "write")
        repo.new_op("r", "w", AT, "write", source_key="codex:sx1:c1")
    assert repo.has_source("codex:s_1:c1") and not repo.has_source("codex:s_1:c2")
    assert [r[8:10] for r in repo.ops("p")] == [("codex:s_1:c1", "file:3")]
    assert not repo.has_other_sources("p", "codex:s_1:")
    assert repo.has_other_sources("p", "codex:sx1:")  # "_" is no wildcard
    assert not repo.has_other_sources("q", "codex:s%2:")
    assert not repo.has_other_sources("q", "codex:s%")
    assert repo.has_other_sources("q", "codex:sX")
    assert repo.has_other_sources("r", "codex:s_1:")  # another session, though "_" would match "x"
    assert not repo.has_other_sources("empty", "x")


def test_cursors_are_kept_and_moved(repo: Repo) -> None:
    assert repo.cursors(["a", "b"]) == {}
    with repo.db.write():
        repo.save_cursors({"a": (120, "f1"), "a#line": (3, None)}, AT)
        repo.save_cursors({"a": (240, "f2")}, LATER)
    assert repo.cursors(["a", "a#line", "b"]) == {"a": (240, "f2"), "a#line": (3, None)}
    big = 2**40  # byte offsets of long rollouts exceed 32 bits
    with repo.db.write():
        repo.save_cursors({"b": (big, None)}, AT)
    assert repo.cursors(["b"]) == {"b": (big, None)}


def test_untimed_ops_keep_their_place_and_message_number(repo: Repo) -> None:
    """A change with no time of its own (store migration `untimed_ops`) says so, with the
    message number its source gives; readers ask for the plan's untimed ops by op."""
    with repo.db.write():
        timed = repo.new_op("p", "w", AT, "write")
        untimed = repo.new_op(
            "p", "w", AT, "write", source_at="msg 4350 (seed 000)", untimed=True, source_msg=4350
        )
        bare = repo.new_op("p", "w", AT, "add", untimed=True)
    rows = {r[0]: r for r in repo.ops("p")}
    assert tuple(rows[timed][10:]) == (0, None) and tuple(rows[untimed][10:]) == (1, 4350)
    assert repo.untimed_ops("p") == {untimed: "msg 4350 (seed 000)", bare: "time not recorded"}


# MCP tasks (store/tasks.py) -----------------------------------------------------


def test_task_rows_round_trip_and_one_lease_taker_wins(store: Store) -> None:
    from todoledger.store.tasks import TaskRepo

    tasks = TaskRepo(store)
    row = {
        "id": "a" * 32,
        "tool": "plan_verify",
        "arguments": {"ids": ["x1"], "plan": "p"},
        "principal": "agent:claude-code",
        "writer": "mcp:claude-code:s1",
        "plan": "p",
        "status": "working",
        "message": "verifying",
        "created_at": AT,
        "updated_at": AT,
        "ttl_ms": 86_400_000,
        "poll_ms": 1000,
        "cancel": False,
        "cwd": "/tmp",
    }
    with store.write():
        tasks.add(row)
    found = tasks.get("a" * 32)
    assert found is not None and found["arguments"] == {"ids": ["x1"], "plan": "p"}
    assert found["cancel"] is False and found["pid"] is None and found["workers"] == 0
    with store.write():
        assert tasks.take_lease("a" * 32, (None, None), "h1", 11, "100", 1.5)
        assert not tasks.take_lease("a" * 32, (None, None), "h2", 22, "200", 1.5)  # read before h1 took it
        assert tasks.beat("a" * 32, "h2", 22, 2.0) is None  # not its lease
        beat = tasks.beat("a" * 32, "h1", 11, 3.0)
    assert beat is not None and beat["beat"] == 3.0 and beat["workers"] == 1
    with store.write():
        tasks.update("a" * 32, status="completed", result={"content": [], "isError": False}, expires_at=LATER)
        assert not tasks.take_lease("a" * 32, ("h1", 11), "h3", 33, None, 4.0)  # finished: no new worker
    assert [r["id"] for r in tasks.listing()] == []
    assert [r["id"] for r in tasks.listing(("completed",))] == ["a" * 32]
    assert tasks.expired(AT) == [] and tasks.expired("2026-01-02T00:00:00.000Z") == [("a" * 32, "p")]
    with store.write():
        tasks.remove("a" * 32)
    assert tasks.get("a" * 32) is None
