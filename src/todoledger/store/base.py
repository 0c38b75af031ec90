"""The storage interface, in two levels.

`Store` is what a backend implements: a connection that runs portable SQL
(`?` placeholders) in short transactions, knows its schema version and
checks its own storage. Two backends implement it: SQLite (store/sqlite.py)
and PostgreSQL (store/postgres.py, team mode, translating placeholders);
both pass tests/test_store_conformance.py.

`Repo` (store/repo.py) holds every query of the ledger over any `Store`;
the service calls Repo and Writes, never SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

Row = tuple[Any, ...]


class Store(Protocol):
    location: str
    serial_key: str  # how the backend spells an auto-numbered 64-bit key in CREATE TABLE

    def write(self, plan: str | None = None) -> AbstractContextManager[None]:
        """A serialised write transaction: all or nothing. Nested calls join the outer one.

        `plan`: the one plan the transaction writes; it waits only for other
        writers of that plan (and for cross-plan operations). None: a cross-plan
        operation, which waits for every writer and excludes them all until it
        commits. A backend that serialises every writer anyway may ignore it."""

    def lock(self, name: str) -> None:
        """Inside a write transaction: hold the ledger-wide lock `name` until it
        commits, so that writers of different plans that share something (the
        event feed, the lease tokens) take turns on it."""

    def bulk(self) -> AbstractContextManager[None]:
        """Many writes in a row: durability may be relaxed, integrity never."""

    def read(self) -> AbstractContextManager[None]:
        """A consistent snapshot for several queries."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> object:
        """Run one statement (what it returns is the backend's own: use
        `query` with RETURNING for values an insert generates)."""

    def execute_script(self, statements: list[str]) -> None: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def integrity(self) -> list[str]:
        """What the backend finds wrong with the stored data itself; empty when sound."""

    def stamp_version(self, version: int) -> None:
        """Mark the schema as another version's (tests of the version check)."""

    def tables(self) -> list[str]:
        """The ledger's tables (a copy to another backend takes them all)."""

    def columns(self, table: str) -> list[str]: ...

    def after_copy(self) -> None:
        """After rows were copied in with their keys: auto-numbering goes on after them."""

    def wait_for_change(self, timeout: float) -> bool:
        """Wait for another connection's commit: True when told of one; False after
        `timeout` s or a backend's polling pause (then look again)."""

    def reconnect(self) -> bool:
        """After a lost connection (ConnectionLost): a new one, True; False where
        there is none to make (a file; a pool's connection; one its deadline closed)."""

    def close(self) -> None: ...


class SharedStore(Protocol):
    """A ledger that a server's threads use at once (store/open.py `open_shared`)."""

    def session(self) -> AbstractContextManager[Callable[[bool], tuple[Store, str]]]:
        """One call's access: a getter of the store to use (True: to write),
        with the ledger's target (path or URL)."""

    def close(self) -> None: ...
