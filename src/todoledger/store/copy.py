"""Copying a whole ledger between backends, rows and keys as they are.

Every table the schema has is copied (the bookkeeping of migrations aside:
the target is migrated by this same todoledger), so tables that later
migrations add travel too. The target must be empty.
"""

from __future__ import annotations

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.store.base import Store

# The backends' own bookkeeping: each ledger keeps its own.
SKIPPED = frozenset({"migrations", "schema_version", "sqlite_sequence", "sqlite_stat1"})
# A target holding any of these is someone's ledger: never merged into.
CONTENT = ("plans", "items", "ops", "events")


def copy_rows(source: Store, target: Store) -> dict[str, int]:
    """Copy every row of `source` into the empty `target` in one transaction; the row counts per table."""
    counts: dict[str, int] = {}
    with source.read(), target.write():
        for table in CONTENT:
            if target.query(f"SELECT 1 FROM {table} LIMIT 1"):
                raise LedgerError(
                    f"{target.location} already holds a ledger ({table} is not empty): copy into an empty one"
                )
        theirs = set(target.tables())
        for table in source.tables():
            if table in SKIPPED:
                continue
            columns = source.columns(table)
            if table not in theirs or set(target.columns(table)) != set(columns):
                raise LedgerError(
                    f"{target.location} has no table {table} like the source's: the schemas differ"
                )
            names = ", ".join(columns)
            rows = source.query(f"SELECT {names} FROM {table}")
            target.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})", rows
            )
            counts[table] = len(rows)
        target.after_copy()
    return counts


def count_rows(store: Store, tables: list[str]) -> dict[str, int]:
    with store.read():
        return {table: int(store.query(f"SELECT COUNT(*) FROM {table}")[0][0]) for table in tables}
