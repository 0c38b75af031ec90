"""A server's connections to a PostgreSQL ledger (store/postgres.py
`PostgresPool`, service.py `SharedLedger`): calls from many agents run side
by side on pooled connections instead of queueing on one; a connection the
server drops is replaced and its transaction leaves nothing behind; a pool
that stays exhausted fails the call with one line. Real PostgreSQL, a real
`serve` subprocess for the HTTP test."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import psycopg
import pytest

from todoledger import Ledger
from todoledger.core.model import BusyError, LedgerError
from todoledger.ledger.shared import SharedLedger
from todoledger.store.postgres import POOL_NAME

from .conftest import person_env, todoledger_bin
from .pgserver import ledger_url
from .test_mcp import call, free_port, http


def until(condition: Callable[[], Any], what: str, seconds: float = 30) -> Any:
    """Wait for `condition` to hold (not a timing assert: a bound on a hang)."""
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)
    return found


def backends(admin: psycopg.Connection[Any], where: str = "TRUE") -> list[tuple[Any, ...]]:
    """The pool's server processes on this database: (pid, wait_event_type, query)."""
    return admin.execute(
        "SELECT pid, wait_event_type, query FROM pg_stat_activity"
        f" WHERE datname = current_database() AND application_name = %s AND {where}",
        (POOL_NAME,),
    ).fetchall()


def waiting_for_the_ledger_lock(admin: psycopg.Connection[Any]) -> int:
    return len(backends(admin, "wait_event_type = 'Lock' AND query LIKE '%%pg_advisory_xact_lock%%'"))


@pytest.fixture
def pg_ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = ledger_url()
    Ledger(url).close()  # created and migrated, so that opening it takes no lock
    monkeypatch.setenv("TODOLEDGER_DB", url)
    yield url


def test_calls_over_http_run_side_by_side_on_pooled_connections(pg_ledger: str) -> None:
    """Three agents' writes wait for the ledger's write lock (held here), each
    on a pooled connection of its own, while a fourth agent's read goes
    through; released, all three writes land. On one shared connection the
    second write and the read would queue behind the first."""
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--pool-size", "4"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=person_env(pg_ledger),
    )
    url = f"http://127.0.0.1:{port}/mcp"
    admin = psycopg.connect(pg_ledger, autocommit=True)
    try:
        until(lambda: _answers(url, proc), "serve listening")
        admin.execute("SELECT pg_advisory_lock(hashtext(current_schema()))")
        read: dict[str, Any] = {}

        async def agent(name: str) -> None:
            async with http(url, name=name, token=None) as client:
                await call(
                    client,
                    "todowrite",
                    {"plan": name, "todos": [{"content": f"{name}'s step", "status": "pending"}]},
                )

        async def reader() -> None:
            await anyio.to_thread.run_sync(
                lambda: until(lambda: waiting_for_the_ledger_lock(admin) == 3, "three writes waiting")
            )
            async with http(url, name="reader", token=None) as client:
                with anyio.fail_after(60):  # it would wait for the lock's holder: forever
                    read["reply"] = await call(client, "todoread", {})
            admin.execute("SELECT pg_advisory_unlock(hashtext(current_schema()))")

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                for name in ("alpha", "beta", "gamma"):
                    tg.start_soon(agent, name)
                tg.start_soon(reader)

        anyio.run(main)
        assert "empty" in str(read["reply"])  # read while the writes waited: none had landed
        with Ledger(pg_ledger) as lg:
            assert sorted(p["plan"] for p in lg.plans()) == ["alpha", "beta", "gamma"]
        assert len(backends(admin)) >= 3  # the pool keeps what it opened, up to --pool-size
    finally:
        admin.close()
        proc.terminate()
        proc.wait(10)


def _answers(url: str, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    try:
        httpx2.get(url, timeout=1)
        return True
    except httpx2.TransportError:
        return False


def _write(shared: SharedLedger, content: str) -> None:
    with shared.session() as ledger:
        # Each its own writer: its whole list adds to the others'.
        ledger(True).write({"todos": [{"content": content, "status": "pending"}]}, writer=content)


def _state(url: str) -> tuple[Any, ...]:
    with Ledger(url) as lg:
        return lg.plans(), [i["content"] for i in lg.items("main")], len(lg.ops("main"))


def test_a_killed_pooled_connection_is_replaced_and_its_call_applied_once(pg_ledger: str) -> None:
    shared = SharedLedger(pool_size=2)
    admin = psycopg.connect(pg_ledger, autocommit=True)
    locker = psycopg.connect(pg_ledger, autocommit=True)
    try:
        _write(shared, "Train the model")
        # An idle pooled connection dropped by the server: the next call gets a new one.
        idle = until(lambda: backends(admin), "an idle pooled connection")
        for pid, *_ in idle:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        _write(shared, "Evaluate the model")
        before = _state(pg_ledger)
        assert before[1] == ["Train the model", "Evaluate the model"]

        # A connection dropped in the middle of a write: the write has stored its
        # op and items and waits to store its events (that table is locked here).
        # The server rolls the transaction back; the call's store borrows a new
        # connection and the write (keyed by its session) runs once more (issue 30).
        failed: list[BaseException] = []

        def write_then_retry() -> None:
            try:
                _write(shared, "Deploy the model")
            except BaseException as exc:
                failed.append(exc)

        # (pg_stat_activity is read on another connection: in a transaction it is a snapshot.)
        with locker.transaction():
            locker.execute("LOCK TABLE events IN EXCLUSIVE MODE")
            thread = threading.Thread(target=write_then_retry)
            thread.start()
            stuck = until(
                lambda: backends(admin, "wait_event_type = 'Lock' AND query LIKE 'INSERT INTO events%%'"),
                "the write waiting to store its events",
            )
            admin.execute("SELECT pg_terminate_backend(%s)", (stuck[0][0],))
            # The retry waits for the same lock on a new connection: the killed one is gone.
            until(
                lambda: [
                    b
                    for b in backends(admin, "wait_event_type = 'Lock' AND query LIKE 'INSERT INTO events%%'")
                    if b[0] != stuck[0][0]
                ],
                "the write tried again on a new connection",
            )
            assert thread.is_alive() and failed == []
        thread.join(30)
        assert failed == []
        _plans, items, ops = _state(pg_ledger)
        # Applied once: the killed attempt left nothing half-written, the retry all of it.
        assert items == [*before[1], "Deploy the model"] and ops == before[2] + 1

        _write(shared, "Ship the model")  # the pool goes on
        assert _state(pg_ledger)[1] == [
            "Train the model",
            "Evaluate the model",
            "Deploy the model",
            "Ship the model",
        ]
    finally:
        admin.close()
        locker.close()
        shared.close()


@contextmanager
def all_connections_held(shared: SharedLedger) -> Iterator[None]:
    """Another call holds the pool's one connection until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with shared.session() as ledger:
            ledger(False).plans()
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(60)
        yield
    finally:
        release.set()
        holder.join(30)


def test_an_exhausted_pool_makes_a_call_fail_with_one_line_after_the_busy_timeout(pg_ledger: str) -> None:
    shared = SharedLedger(pool_size=1, busy_ms=1500)
    try:
        with all_connections_held(shared), pytest.raises(BusyError) as caught:
            _write(shared, "Waits for a connection")
        message = str(caught.value)
        assert "all 1 connections of this server to PostgreSQL stayed busy for 1.5 s" in message
        assert "--pool-size" in message and "\n" not in message
        assert _state(pg_ledger)[1] == []
    finally:
        shared.close()


def test_an_exhausted_pool_makes_a_call_wait_for_a_connection(pg_ledger: str) -> None:
    shared = SharedLedger(pool_size=1)
    try:
        with all_connections_held(shared):
            pool = shared._open().pool  # type: ignore[attr-defined]
            queued = pool.get_stats().get("requests_queued", 0)
            waiter = threading.Thread(target=_write, args=(shared, "Waited for a connection"))
            waiter.start()
            until(lambda: pool.get_stats().get("requests_queued", 0) == queued + 1, "the call queued")
            assert waiter.is_alive()
        waiter.join(30)
        assert _state(pg_ledger)[1] == ["Waited for a connection"]
    finally:
        shared.close()


def test_an_unreachable_server_is_one_line_per_call_and_the_next_call_tries_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ledger_url()  # skips (fails in CI) without a server
    monkeypatch.setenv("TODOLEDGER_DB", "postgresql://postgres:s3cret@127.0.0.1:1/postgres")
    shared = SharedLedger()
    for _ in range(2):
        with pytest.raises(LedgerError) as caught:
            _write(shared, "Anything")
        message = str(caught.value)
        assert "cannot connect to PostgreSQL" in message and "s3cret" not in message and "\n" not in message


def test_a_bad_pool_size_is_one_line(pg_ledger: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TODOLEDGER_POOL_SIZE", "lots")
    with pytest.raises(LedgerError, match="TODOLEDGER_POOL_SIZE='lots': expected a number of connections"):
        _write(SharedLedger(), "Anything")
