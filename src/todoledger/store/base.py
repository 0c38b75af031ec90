"""The storage interface: a connection that runs portable SQL in short
transactions. SQLite is embedded; PostgreSQL implements the same protocol."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

Row = tuple[Any, ...]


class Store(Protocol):
    backend: str
    location: str

    def write(self) -> AbstractContextManager[None]:
        """A serialised write transaction: all or nothing."""

    def bulk(self) -> AbstractContextManager[None]:
        """Many writes in a row: durability may be relaxed, integrity never."""

    def read(self) -> AbstractContextManager[None]:
        """A consistent snapshot for several queries."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the new row id for an insert into a keyed table."""

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def integrity(self) -> list[str]:
        """What the backend finds wrong with the stored data itself; empty when sound."""

    def close(self) -> None: ...
