"""Migration `dropped_status` (m009) on a ledger from before it: drops that
were recorded as cancels ("dropped by <writer>", in the op that recorded the
drop) become `dropped`, as a recorded op, and the state still replays from
the events; a person's cancel stays a cancel, whatever its reason says. An
export with dropped items imports back as it was."""

from __future__ import annotations

from pathlib import Path

from tests.test_event_chain import _sql
from todoledger import Ledger
from todoledger.core.timefmt import now
from todoledger.store.migrations import MIGRATION_WRITER, MIGRATIONS
from todoledger.store.repo import EVENT_FIELDS, chain_link, encode

AGENT = "opencode:s1"
PERSON = "cli:tester"


def _take_back_m009(db: Path | str) -> None:
    names = [name for name, _ in MIGRATIONS]
    version = names.index("dropped_status")
    assert names[version + 1 :] == [
        "markdown_layouts",
        "sweep_runners",
        "panel_rows",
        "ledger_settings",
        "lease_secrets",
        "check_stand_in",
        "recent_index",
        "refusal_counts",
        "tasks",
    ], "take back each later migration here"
    _sql(db, "DROP TABLE tasks")
    _sql(db, "DROP TABLE refusal_counts")
    _sql(db, "DROP INDEX items_recent")
    _sql(db, "ALTER TABLE checks DROP COLUMN stand_in")
    _sql(db, "ALTER TABLE leases DROP COLUMN secret")
    _sql(db, "DROP TABLE ledger_settings")
    _sql(db, "DROP TABLE panel_rows")
    _sql(db, "DROP TABLE panel_lists")
    _sql(db, "DROP TABLE sweep_runners")
    _sql(db, "DROP TABLE markdown_layouts")
    _sql(db, "DROP INDEX writer_base_listed")
    _sql(db, "ALTER TABLE writer_base DROP COLUMN listed")
    for name in names[version:]:
        _sql(db, "DELETE FROM migrations WHERE name = ?", (name,))
    if isinstance(db, Path):
        _sql(db, f"PRAGMA user_version={version}")
    else:
        _sql(db, "UPDATE schema_version SET version = ?", (version,))


def _legacy(db: Path | str, plan: str, kind: str, writer: str, item: str, was: str, reason: str) -> None:
    """A change as todoledger wrote it before m009, written with the database's
    own client (opening the ledger would migrate it): a drop ("write", with its
    `dropped` annotation) or a cancel, both to `cancelled` with that reason."""
    at = now()
    (op,) = _sql(
        db,
        "INSERT INTO ops (plan, writer, at, kind) VALUES (?, ?, ?, ?) RETURNING op",
        (plan, writer, at, kind),
    )[0]
    prev = str(_sql(db, "SELECT chain FROM events ORDER BY seq DESC LIMIT 1")[0][0])
    changes = [("status", was, "cancelled"), ("reason", None, reason)]
    if kind == "write":
        changes.append(("dropped", None, writer))
    for name, old, new in changes:
        fields = (op, plan, item, name, encode(old), encode(new), writer, at)
        prev = chain_link(prev, fields)
        _sql(
            db,
            f"INSERT INTO events ({EVENT_FIELDS}, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, prev),
        )
    _sql(
        db,
        "UPDATE items SET status = 'cancelled', reason = ?, updated_by = ?, updated_at = ? WHERE id = ?",
        (reason, writer, at, item),
    )
    _sql(db, "UPDATE plans SET revision = revision + 1, updated_at = ? WHERE name = ?", (at, plan))


def test_legacy_drops_become_dropped_and_a_persons_cancel_stays_cancelled(
    ledger_env: Path, tmp_path: Path
) -> None:
    todos = {
        "todos": [
            {"content": "Benchmark with 10 draft tokens", "status": "pending"},
            {"content": "Benchmark baseline (no speculation)", "status": "in_progress"},
            {"content": "Verify the accept length", "status": "pending"},
        ]
    }
    with Ledger(str(ledger_env)) as lg:
        lg.write(todos, writer=AGENT)
        ids = {i["content"]: i["id"] for i in lg.show()["items"]}
    _take_back_m009(ledger_env)
    ten, baseline, verify = ids.values()
    _legacy(ledger_env, "main", "write", AGENT, ten, "pending", f"dropped by {AGENT}")
    _legacy(ledger_env, "main", "write", AGENT, baseline, "in_progress", f"dropped by {AGENT}")
    # A person's cancel whose reason happens to read like a drop is a decision all the same.
    _legacy(ledger_env, "main", "cancel", PERSON, verify, "pending", f"dropped by {AGENT}")

    with Ledger(str(ledger_env)) as lg:  # opening it migrates it
        rows = {i["id"]: i for i in lg.show()["items"]}
        assert [rows[i]["status"] for i in (ten, baseline, verify)] == ["dropped", "dropped", "cancelled"]
        assert rows[ten]["reason"] == f"dropped by {AGENT}"  # who dropped it, as it was recorded
        assert lg.check() == []  # the state is still what the events say
        (migrated,) = [o for o in lg.ops("main") if o["kind"] == "migrate"]
        assert migrated["writer"] == MIGRATION_WRITER and migrated["summary"].startswith("2 dropped items")
        assert [e["new"] for e in lg.history(item=baseline) if e["field"] == "status"] == [
            "cancelled",
            "dropped",
        ]
        # Now a drop like any other: a new session that lists it revives it; the cancel is not undone.
        again = {
            "todos": [
                {"content": "Benchmark baseline (no speculation)", "status": "in_progress"},
                {"content": "Verify the accept length", "status": "in_progress"},
            ]
        }
        reply = lg.write(again, writer="opencode:s2")
        rows = {i["id"]: i for i in lg.show()["items"]}
        assert (rows[baseline]["status"], rows[baseline]["reason"]) == ("in_progress", None)
        assert rows[verify]["status"] == "cancelled" and rows[verify]["contested"] == [
            {"writer": "opencode:s2", "listed": "in_progress", "closed_by": PERSON}
        ]
        assert any(
            n.startswith("'Verify the accept length'") and "was cancelled by cli:tester" in n
            for n in reply.notices
        )
        exported = list(lg.export("main"))
        # A migrated ledger migrates once.
        assert [n for (n,) in _sql(ledger_env, "SELECT name FROM migrations")].count("dropped_status") == 1

    # An export with dropped items imports back as it was (the round trip keeps `dropped`).
    copy = tmp_path / "copy.db"
    with Ledger(copy) as other:
        other.import_jsonl(exported, plan="main", writer=PERSON)
        assert list(other.export("main")) == exported
        assert {i["status"] for i in other.show()["items"]} == {"dropped", "in_progress", "cancelled"}
