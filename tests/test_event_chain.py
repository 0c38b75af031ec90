"""Tamper evidence: every event chains to the one before it by hash, and
`Ledger.check` / `todoledger check` report a row written, changed or removed
around todoledger (raw sqlite3 or psycopg), on both backends; a normal
history, concurrent writers included, checks clean."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

from todoledger import Ledger
from todoledger.store.repo import EVENT_FIELDS, chain_link

from .conftest import subprocess_env, todoledger_bin

PERSON = "cli:ann"
AGENT = "claude-code:s1"


def _history(db: Path | str) -> None:
    with Ledger(str(db)) as lg:
        a = lg.add("Build the image", writer=PERSON, needs_approval=True)
        b = lg.add("Deploy it", writer=AGENT, depends_on=[a["id"]])
        lg.approve(a["id"], writer=PERSON)
        lg.update(a["id"], status="in_progress", writer=AGENT)
        lg.update(a["id"], status="completed", writer=AGENT)
        lg.update(b["id"], content="Deploy it to staging", writer=AGENT)
        lg.undo("main", writer=AGENT)
        lg.add("Write notes", writer=PERSON, plan="other")


def _sql(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Around todoledger: the database's own client, no todoledger code."""
    if isinstance(db, Path):
        import sqlite3

        conn = sqlite3.connect(db, isolation_level=None)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(db, autocommit=True) as pg:
        cur = pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def _check_cli(db: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), "check"], capture_output=True, text=True, env=subprocess_env(db), timeout=60
    )


def test_a_normal_history_checks_clean_and_every_event_is_chained(ledger_env: Path | str) -> None:
    _history(ledger_env)
    with Ledger(str(ledger_env)) as lg:
        assert lg.check() == [] and lg.check("other") == []
    rows = _sql(ledger_env, f"SELECT {EVENT_FIELDS}, chain FROM events ORDER BY seq")
    prev = ""
    for row in rows:  # recomputed here from the stored fields: the chain is what the module says
        assert row[8] == chain_link(prev, row[:8])
        prev = row[8]
    assert len({row[8] for row in rows}) == len(rows) >= 8
    done = _check_cli(ledger_env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_event_changed_around_todoledger_is_reported(ledger_env: Path | str) -> None:
    _history(ledger_env)
    # What scenario 1's agent would like: the approval by a person becomes the agent's, in the file.
    (seq,) = _sql(ledger_env, "SELECT seq FROM events WHERE field = 'approved'")[0]
    _sql(ledger_env, "UPDATE events SET writer = ? WHERE seq = ?", ("cli:mallory", seq))
    with Ledger(str(ledger_env)) as lg:
        problems = lg.check()
        assert lg.check("other") == []  # another plan's events still chain
    assert len(problems) == 1
    assert f"event {seq} (approved," in problems[0] and "by cli:mallory" in problems[0]
    assert problems[0].endswith(
        "does not chain to the event before it: a row written, changed or removed around todoledger"
    )
    done = _check_cli(ledger_env)
    assert done.returncode == 1 and f"event {seq} (approved," in done.stdout + done.stderr


def test_an_event_inserted_or_removed_around_todoledger_is_reported(ledger_env: Path | str) -> None:
    _history(ledger_env)
    op, at = _sql(ledger_env, "SELECT op, at FROM events ORDER BY seq DESC LIMIT 1")[0]
    # An annotation needs no state change, so the replay alone cannot see it.
    _sql(
        ledger_env,
        "INSERT INTO events (op, plan, item, field, old, new, writer, at) VALUES (?, 'main', NULL, 'note', NULL, ?, ?, ?)",
        (op, '"all fine"', PERSON, at),
    )
    with Ledger(str(ledger_env)) as lg:
        (inserted,) = lg.check()
    assert "main/-: event" in inserted and "(note," in inserted
    _sql(ledger_env, "DELETE FROM events WHERE field = 'note'")
    with Ledger(str(ledger_env)) as lg:
        assert lg.check() == []  # the forged row gone, the chain follows again
    # A real event removed: the one after it no longer follows.
    (first_seq,) = _sql(ledger_env, "SELECT MIN(seq) FROM events WHERE field = 'approved'")[0]
    _sql(ledger_env, "DELETE FROM events WHERE seq = ?", (first_seq,))
    with Ledger(str(ledger_env)) as lg:
        problems = lg.check()
    assert len(problems) == 1 and "does not chain" in problems[0]


def test_concurrent_writers_keep_one_chain(ledger_env: Path | str) -> None:
    """Writers take turns (BEGIN IMMEDIATE; the advisory lock): each flush
    reads the last chain value inside its own write, so none forks."""
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with Ledger(str(ledger_env)) as lg:
                for k in range(10):
                    lg.add(f"task {n}.{k}", writer=f"claude-code:w{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Ledger(str(ledger_env)) as lg:
        assert lg.check() == []
        assert len(lg.items("main")) == 40


def test_the_migration_chains_the_events_a_ledger_already_holds(ledger_env: Path | str) -> None:
    """A ledger from before `event_chain` (the column dropped, the version set
    back): opening it chains every old event, to the very values the writes
    would have given them, and new writes chain on from there."""
    from todoledger.store.migrations import MIGRATIONS

    _history(ledger_env)
    before = _sql(ledger_env, "SELECT seq, chain FROM events ORDER BY seq")
    version = [name for name, _ in MIGRATIONS].index("event_chain")
    _sql(ledger_env, "ALTER TABLE events DROP COLUMN chain")
    _sql(ledger_env, "DELETE FROM migrations WHERE name = 'event_chain'")
    # The migrations after it are taken back too, so that the upgrade runs them again.
    later = [name for name, _ in MIGRATIONS][version + 1 :]
    assert later == [
        "check_provenance",
        "untimed_ops",
        "check_context",
        "tokens",
        "sweep_lifecycle",
        "dropped_status",
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
    _sql(ledger_env, "DROP TABLE tasks")
    _sql(ledger_env, "DROP TABLE refusal_counts")
    _sql(ledger_env, "DROP INDEX items_recent")
    _sql(ledger_env, "ALTER TABLE checks DROP COLUMN stand_in")
    _sql(ledger_env, "ALTER TABLE leases DROP COLUMN secret")
    _sql(ledger_env, "DROP TABLE ledger_settings")
    _sql(ledger_env, "DROP TABLE panel_rows")
    _sql(ledger_env, "DROP TABLE panel_lists")
    _sql(ledger_env, "DROP TABLE sweep_runners")
    _sql(ledger_env, "DROP TABLE markdown_layouts")
    _sql(ledger_env, "DROP INDEX writer_base_listed")
    _sql(ledger_env, "ALTER TABLE writer_base DROP COLUMN listed")
    _sql(ledger_env, "DROP TABLE sweep_setups")
    for column in ("approved_by", "approved_at", "approved_digest"):
        _sql(ledger_env, f"ALTER TABLE sweeps DROP COLUMN {column}")
    _sql(ledger_env, "ALTER TABLE receipts DROP COLUMN env")
    _sql(ledger_env, "DROP TABLE tokens")
    for column in ("route", "cwd", "path"):
        _sql(ledger_env, f"ALTER TABLE checks DROP COLUMN {column}")
    for column in ("provenance", "check_id", "accepted_by"):
        _sql(ledger_env, f"ALTER TABLE metrics DROP COLUMN {column}")
    for column in ("untimed", "source_msg"):
        _sql(ledger_env, f"ALTER TABLE ops DROP COLUMN {column}")
    for name in later:
        _sql(ledger_env, "DELETE FROM migrations WHERE name = ?", (name,))
    if isinstance(ledger_env, Path):
        _sql(ledger_env, f"PRAGMA user_version={version}")
    else:
        _sql(ledger_env, "UPDATE schema_version SET version = ?", (version,))
    with Ledger(str(ledger_env)) as lg:
        assert lg.check() == []
        lg.add("After the upgrade", writer=PERSON)
        assert lg.check() == []
    after = _sql(ledger_env, "SELECT seq, chain FROM events ORDER BY seq")
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert [name for (name,) in _sql(ledger_env, "SELECT name FROM migrations")].count("event_chain") == 1
