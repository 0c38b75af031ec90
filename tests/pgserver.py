"""The real PostgreSQL server for tests: one database per test session
(`todoledger_test_<hex>`, dropped at the end), one schema per ledger in it.

PG tests skip with a clear message only where no server is reachable, and
fail instead when `CI` is set: CI must run the suite on both backends.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

import pytest

SERVER = os.environ.get("TODOLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
_state: dict[str, str] = {}


def _admin_url(database: str) -> str:
    base, _, _ = SERVER.rpartition("/")
    return f"{base}/{database}"


def database() -> str:
    """The session's database URL, created on first use (with byte-order text
    comparison, as any ledger's columns declare anyway)."""
    if "url" in _state:
        return _state["url"]
    if "unreachable" in _state:
        _unavailable(_state["unreachable"])
    try:
        import psycopg

        name = f"todoledger_test_{secrets.token_hex(6)}"
        with psycopg.connect(SERVER, autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
            )
    except Exception as exc:
        _state["unreachable"] = (
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        )
        _unavailable(_state["unreachable"])
    _state["name"] = name
    _state["url"] = _admin_url(name)
    return _state["url"]


def _unavailable(why: str) -> None:
    message = f"no PostgreSQL server reachable at {SERVER} ({why})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}: CI runs every test on both backends", pytrace=False)
    pytest.skip(message)


def ledger_url(schema: str | None = None) -> str:
    """A fresh (or, given its name, the same) ledger: a schema of the session database."""
    import psycopg

    url = database()
    if schema is None and _recycled:
        return _recycled.pop()
    schema = schema or f"l_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    return f"{url}?options=-csearch_path%3D{schema}"


# Creating a ledger's tables takes the server most of a second on a busy
# machine, for every test. A test's ledger is emptied instead when the test
# ends (rows deleted, numbering restarted) and handed to the next test of this
# process as fresh: only when it holds the tables of the current schema
# version and nothing else, and no session of the test holds on to it.
_recycled: list[str] = []
_reference: list[str] = []  # the tables, columns and indexes of a freshly migrated ledger


def _shape(conn: Any, schema: str) -> str:
    columns = conn.execute(
        "SELECT table_name, column_name, data_type, column_default FROM information_schema.columns"
        " WHERE table_schema = %s ORDER BY 1, 2",
        (schema,),
    ).fetchall()
    indexes = conn.execute(
        "SELECT indexname, regexp_replace(indexdef, ' ON [a-z0-9_]+\\.', ' ON ') FROM pg_indexes"
        " WHERE schemaname = %s ORDER BY 1",
        (schema,),
    ).fetchall()
    versions = conn.execute("SELECT * FROM schema_version").fetchall()
    migrated = conn.execute("SELECT COUNT(*) FROM migrations").fetchall()
    return repr((columns, indexes, versions, migrated)).replace(schema, "<schema>")


def recycle(url: str) -> None:
    """Empty a test's ledger for the next test, or drop it if it is not as migrated."""
    import psycopg

    schema = url.rpartition("%3D")[2]
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SET lock_timeout = 2000")
            if not _reference:
                from todoledger import Ledger

                fresh = ledger_url()
                Ledger(fresh).close()
                with psycopg.connect(fresh, autocommit=True) as ref:
                    _reference.append(_shape(ref, fresh.rpartition("%3D")[2]))
                _recycled.append(fresh)
            if _shape(conn, schema) != _reference[0]:
                raise LookupError("not a ledger as migrated")
            with conn.transaction():
                for (table,) in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                    " AND table_name NOT IN ('schema_version', 'migrations')",
                    (schema,),
                ).fetchall():
                    conn.execute(f'DELETE FROM "{table}"')
                for (sequence,) in conn.execute(
                    "SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = %s",
                    (schema,),
                ).fetchall():
                    conn.execute(f'ALTER SEQUENCE "{sequence}" RESTART')
        _recycled.append(url)
    except (psycopg.Error, LookupError):
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        except psycopg.Error:
            pass


def drop_database() -> None:
    if "name" not in _state:
        return
    import psycopg

    with psycopg.connect(SERVER, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {_state.pop('name')} WITH (FORCE)")
    _state.pop("url", None)
