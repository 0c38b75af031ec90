"""SQLite backend: WAL, short BEGIN IMMEDIATE writes, named migrations."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from todoledger.core.model import BusyError, LedgerError
from todoledger.core.timefmt import now
from todoledger.store.migrations import MIGRATIONS, SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.store.base import Row

BUSY_TIMEOUT_MS = 30_000
POLL_SECONDS = 0.2


class SQLiteStore:
    serial_key = "INTEGER PRIMARY KEY"

    def __init__(
        self, path: str | os.PathLike[str] | None, *, create: bool = True, busy_ms: int = BUSY_TIMEOUT_MS
    ) -> None:
        """Open the ledger at `path`; with `create=False` a missing file is an
        empty in-memory ledger, so reading never leaves files behind."""
        self.path = os.fspath(path) if path is not None else None
        if path is None or (not create and not os.path.exists(path)):
            self.location = ":memory:"
            self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            self.location = str(path)
            try:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                self.conn = sqlite3.connect(
                    os.fspath(path),
                    isolation_level=None,
                    timeout=busy_ms / 1000,
                    check_same_thread=False,
                )
                self.conn.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode != "wal":
                    raise LedgerError(f"{path}: cannot switch the ledger to WAL mode (got {mode})")
                self.conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.DatabaseError as exc:
                raise LedgerError(f"{path}: not a usable ledger ({exc})") from None
            except OSError as exc:
                raise LedgerError(f"{path}: cannot open the ledger ({exc.strerror})") from None
        self._depth = 0
        self.busy_ms = busy_ms
        self._migrate()

    def _migrate(self) -> None:
        try:
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.location}: not a usable ledger ({exc})") from None
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.location} was written by a newer todoledger (schema {version}; this version"
                f" knows up to {SCHEMA_VERSION}): upgrade todoledger to use it"
            )
        if version == SCHEMA_VERSION:
            return
        with self.write():
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            if version == 0:
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
            for name, step in MIGRATIONS[version:]:
                step(self)
                self.conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, now()))
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def execute_script(self, statements: list[str]) -> None:
        for statement in statements:
            self.conn.execute(statement)

    @contextmanager
    def write(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise BusyError(
                f"{self.location}: another process held the ledger for {self.busy_ms / 1000:g} s ({exc}); try again"
            ) from None
        self._depth = 1
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._depth = 0

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes in a row (an import): commits skip the fsync, which WAL
        still makes safe against a crashed process; a power cut may lose the
        last commits, never corrupt the file. Re-running an import restores them."""
        if self.location == ":memory:":
            yield
            return
        self.conn.execute("PRAGMA synchronous=NORMAL")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def read(self) -> Iterator[None]:
        if self._depth:
            yield
            return
        self.conn.execute("BEGIN")
        self._depth = 1
        try:
            yield
        finally:
            self._depth = 0
            self.conn.execute("COMMIT")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = self.conn.execute(sql, params)
        return cur.lastrowid or 0

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()

    def integrity(self) -> str:
        rows = self.conn.execute("PRAGMA integrity_check").fetchall()
        return "; ".join(str(r[0]) for r in rows)

    def stamp_version(self, version: int) -> None:
        """For tests: mark the ledger as migrated by a todoledger of another version."""
        self.conn.execute(f"PRAGMA user_version={int(version)}")

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")]

    def after_copy(self) -> None:
        """Nothing to do: an INTEGER PRIMARY KEY goes on after the highest row."""

    def wait_for_change(self, timeout: float) -> bool:
        """SQLite tells no other process of a commit: `watch` polls the event
        sequence, and this is the pause between two looks (False: not told)."""
        time.sleep(min(timeout, POLL_SECONDS))
        return False

    def close(self) -> None:
        self.conn.close()
