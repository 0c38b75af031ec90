"""The real PostgreSQL server for tests: one database per test session
(`todoledger_test_<hex>`, dropped at the end), one schema per ledger in it.

PG tests skip with a clear message only where no server is reachable, and
fail instead when `CI` is set: CI must run the suite on both backends.
"""

from __future__ import annotations

import os
import secrets

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
    schema = schema or f"l_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    return f"{url}?options=-csearch_path%3D{schema}"


def drop_database() -> None:
    if "name" not in _state:
        return
    import psycopg

    with psycopg.connect(SERVER, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {_state.pop('name')} WITH (FORCE)")
    _state.pop("url", None)
