"""Every test gets its own real SQLite ledger file through TODOLEDGER_DB, and
a working directory of its own, so nothing touches the developer's ledger."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    db = tmp_path / "ledger.db"
    monkeypatch.setenv("TODOLEDGER_DB", str(db))
    for name in ("TODOLEDGER_PLAN", "TODOLEDGER_WRITER", "TODOLEDGER_TOKEN", "TODOLEDGER_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield db


def todoledger_bin() -> str:
    path = BIN / "todoledger"
    return str(path) if path.exists() else "todoledger"


def subprocess_env(db: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TODOLEDGER_DB"] = str(db)
    env.update(extra)
    return env


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .pgserver import drop_database

    drop_database()
