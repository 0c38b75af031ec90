"""Every test gets its own real ledger through TODOLEDGER_DB, and a working
directory of its own, so nothing touches the developer's ledger.

The ledger is a SQLite file; each test runs twice (but in ONE_RUN_MODULES and
those marked `sqlite_only`), once more on a fresh schema of the real
PostgreSQL server (tests/pgserver.py), where `ledger_env` is then the
ledger's URL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent
# Real agents' transcripts from public repositories, vendored (MANIFEST.md there names each
# file's source, licence and blob); the tests that read them fail, never skip, without them.
PUBLIC_TRANSCRIPTS = Path(__file__).resolve().parent / "data" / "transcripts" / "public"

# Every test that touches a ledger runs twice: on a SQLite file and on a fresh
# schema of the real PostgreSQL server. Only these modules run once:
# they open no ledger (parsers, schedulers, static checks of the code), or they
# choose their backends themselves (the conformance suite, the copy between
# backends, the PostgreSQL-only tests), or, for the real agent CLIs (tests/e2e),
# the agent runs in a clean environment on its project's own ledger file.
ONE_RUN_MODULES = frozenset(
    {
        "tests.test_quality",
        "tests.test_layers",
        "tests.test_readme",
        "tests.test_dialects",
        "tests.test_schedule",
        "tests.test_graph_properties",
        "tests.test_checkspec",
        "tests.test_lint",
        "tests.test_jsonload",
        "tests.test_tool_schemas",
        "tests.test_docs",
        "tests.test_install",  # config files only: no ledger
        "tests.test_readme_runs",  # one reader, one clone: its own ledger
        "tests.test_uninstall",
        "tests.test_uninstall_edited",
        "tests.test_needs",
        "tests.test_compat_table",
        "tests.test_lean_specs",
        "tests.test_render",
        "tests.test_checks_run",
        "tests.test_board_live",
        "tests.test_agents",
        "tests.test_store_conformance",
        "tests.test_migrate",
        "tests.test_contention",
        "tests.test_postgres",
        "tests.test_pool",
        "tests.test_team_pg",
        "tests.test_plan_locks",
        "tests.e2e.test_agents",
        "tests.e2e.test_fakemodel",
        "tests.e2e.test_routes",
        "tests.e2e.test_doctor_agents",
        "tests.e2e.test_panel_agents",
        "tests.e2e.test_panel_live",
        "tests.e2e.test_loaded_machine",
        "tests.e2e.test_tasks_probe",
        "tests.e2e.test_tasks_claude",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: the test is about the SQLite file itself")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    once = metafunc.module.__name__ in ONE_RUN_MODULES
    sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
    if not once and "ledger_backend" in metafunc.fixturenames and not sqlite_only:
        metafunc.parametrize("ledger_backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def ledger_backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


TESTER_TOKEN = "tester-token-0123456789"  # a person's, in each test's tokens file (ledger_env)
TESTER = "cli:tester"


@pytest.fixture(autouse=True)
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger_backend: str) -> Iterator[Path | str]:
    db: Path | str = tmp_path / "ledger.db"
    if ledger_backend == "postgres":
        from .pgserver import ledger_url

        db = ledger_url()
    monkeypatch.setenv("TODOLEDGER_DB", str(db))
    # Where hooks log and spool beside a ledger URL: this test's own folder, not ~/.local/state.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # An agent's marker in the environment running the tests (a session run from an
    # agent's shell) would make every command the agent's: tests set it where they mean to.
    from todoledger.identity import MARKER_VARS

    for name in (
        "TODOLEDGER_PLAN",
        "TODOLEDGER_WRITER",
        "TODOLEDGER_TOKEN",
        "TODOLEDGER_DEBUG",
        *MARKER_VARS,
    ):
        monkeypatch.delenv(name, raising=False)
    # Tests run without a terminal, where a command line is `script:<user>`, not a person. A
    # test that acts as a person at the command line holds a person's token (`person_env`,
    # `act_as_person`), registered in its ledger: the route a script has to a person's
    # identity, writer `cli:tester`.
    monkeypatch.chdir(tmp_path)
    yield db
    if ledger_backend == "postgres":
        from .pgserver import recycle

        recycle(str(db))


def beside(db: Path | str) -> Path:
    """Where the hooks keep their log and spool for this ledger: beside a
    SQLite file; for a PostgreSQL URL, the user's state folder (ledger_env
    points XDG_STATE_HOME at the test's own)."""
    if isinstance(db, Path):
        return db.parent
    return Path(os.environ["XDG_STATE_HOME"]) / "todoledger"


def spool_of(db: Path | str) -> Path:
    """The folder of events a busy ledger could not take yet."""
    if isinstance(db, Path):
        return db.parent / "pending"
    found = list(beside(db).glob("pending-*"))
    assert len(found) <= 1, found
    return found[0] if found else beside(db) / "pending-none-yet"


class hold_write_lock:
    """Another process's write transaction on the ledger, held until `close()`:
    SQLite's write lock, or the PostgreSQL ledger's advisory lock."""

    def __init__(self, db: Path | str) -> None:
        if isinstance(db, Path):
            import sqlite3

            self.conn: Any = sqlite3.connect(db, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            import psycopg

            self.conn = psycopg.connect(db, autocommit=True)
            self.conn.execute("SELECT pg_advisory_lock(hashtext(current_schema()))")

    def close(self) -> None:
        if isinstance(self.conn, __import__("sqlite3").Connection):
            self.conn.execute("ROLLBACK")
        self.conn.close()  # PostgreSQL drops a closed session's locks


def todoledger_bin() -> str:
    path = BIN / "todoledger"
    return str(path) if path.exists() else "todoledger"


def hashed_tokens(path: Path, lines: str) -> Path:
    """A `serve --tokens` file at `path`: `lines` (`TOKEN IDENTITY [ROLE]`, tokens in
    plain text) written, then hashed in place by `todoledger token hash-file`, as a
    person makes one; the file keeps only the tokens' hashes."""
    import subprocess

    path.write_text(lines, encoding="utf-8")
    done = subprocess.run(
        [todoledger_bin(), "token", "hash-file", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return path


def with_test_clock(db: Path | str) -> None:
    """Create the ledger at `db` as `todoledger init --test-clock` does: TODOLEDGER_NOW
    fixes its clock (on any other ledger the real clock stands)."""
    from todoledger import Ledger

    with Ledger(str(db)) as lg:
        lg.start_test_clock()


def register_tester(db: Path | str) -> None:
    """The person `cli:tester`'s token, registered in the ledger at `db` as a person
    registers one (`todoledger token add`; here the Python API, as that person)."""
    from todoledger import Ledger

    with Ledger(str(db)) as lg:
        if lg.token_holder(TESTER_TOKEN) is None:
            lg.add_token("tester", token=TESTER_TOKEN, writer=TESTER)


def person_env(db: Path | str, **extra: str) -> dict[str, str]:
    """A command line acting as the person `cli:tester`, by their registered token."""
    register_tester(db)
    return subprocess_env(db, TODOLEDGER_TOKEN=TESTER_TOKEN, **extra)


def act_as_person(db: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process acts as the person `cli:tester` (its token in TODOLEDGER_TOKEN)."""
    register_tester(db)
    monkeypatch.setenv("TODOLEDGER_TOKEN", TESTER_TOKEN)


def subprocess_env(db: Path | str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TODOLEDGER_DB"] = str(db)
    env.update(extra)
    return env


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .pgserver import drop_database

    drop_database()
