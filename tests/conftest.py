"""Every test gets its own real ledger through TODOLEDGER_DB, and a working
directory of its own, so nothing touches the developer's ledger.

The ledger is a SQLite file; in the modules of PG_MODULES each test runs
twice, once more on a fresh schema of the real PostgreSQL server
(tests/pgserver.py), where `ledger_env` is then the ledger's URL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

# The service-level suites that run on both backends. test_cli.py stays on SQLite:
# its commands are the same code over the same Ledger, and each test's
# subprocesses would open PostgreSQL connections for little more coverage.
PG_MODULES = frozenset(
    {
        "test_service",
        "test_truth",
        "test_merge_properties",
        "test_merge_edge_cases",
        "test_leases",
        "test_watch",
        "test_serve_tokens",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: the test is about the SQLite file itself")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
    if module in PG_MODULES and "ledger_backend" in metafunc.fixturenames and not sqlite_only:
        metafunc.parametrize("ledger_backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def ledger_backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(autouse=True)
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger_backend: str) -> Iterator[Path | str]:
    db: Path | str = tmp_path / "ledger.db"
    if ledger_backend == "postgres":
        from .pgserver import ledger_url

        db = ledger_url()
    monkeypatch.setenv("TODOLEDGER_DB", str(db))
    for name in ("TODOLEDGER_PLAN", "TODOLEDGER_WRITER", "TODOLEDGER_TOKEN", "TODOLEDGER_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield db


def todoledger_bin() -> str:
    path = BIN / "todoledger"
    return str(path) if path.exists() else "todoledger"


def subprocess_env(db: Path | str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TODOLEDGER_DB"] = str(db)
    env.update(extra)
    return env


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .pgserver import drop_database

    drop_database()
