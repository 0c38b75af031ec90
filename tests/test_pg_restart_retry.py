"""Agent calls through PgBouncer while PostgreSQL restarts (issue 30): no call
fails, and no write is applied twice. A private throwaway cluster
(tests/privatepg.py) is restarted, never the machine's shared server."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import todoledger_bin
from tests.privatepg import PrivatePG
from tests.test_team_pg import Bouncer
from todoledger import Ledger

pytestmark = pytest.mark.sqlite_only  # its own cluster and PgBouncer: one run


@pytest.fixture
def private_pg(tmp_path: Path) -> Iterator[PrivatePG]:
    pg = PrivatePG(tmp_path)
    yield pg
    pg.stop()


def restarts(pg: PrivatePG) -> None:
    for _ in range(3):
        time.sleep(1.0)
        pg.restart()


def test_calls_through_pgbouncer_survive_a_restart(private_pg: PrivatePG, tmp_path: Path) -> None:
    bouncer = Bouncer(tmp_path, server_port=private_pg.port)
    failures: list[str] = []
    try:
        url = f"postgresql://postgres@127.0.0.1:{bouncer.port}/postgres?pgbouncer=transaction"
        env = {**os.environ, "TODOLEDGER_DB": url, "TODOLEDGER_WRITER": "agent:restart"}
        with Ledger(private_pg.url) as lg:
            lg.add("seed", writer="setup")
        restarter = threading.Thread(target=restarts, args=(private_pg,))
        for k in range(100):
            if k == 10:  # restarts while the calls go on, as in the field
                restarter.start()
            verb = ["add", f"step {k}"] if k % 2 else ["show", "--json"]
            done = subprocess.run(
                [todoledger_bin(), *verb], env=env, capture_output=True, text=True, timeout=60
            )
            if done.returncode != 0:
                failures.append(f"{k} {verb[0]}: {done.stderr.strip()}")
    finally:
        if restarter.ident is not None:
            restarter.join()
        bouncer.stop()
    assert failures == []
    with Ledger(private_pg.url) as lg:
        contents = [i["content"] for i in lg.items()]
    assert sorted(c for c in contents if c.startswith("step ")) == sorted(
        f"step {k}" for k in range(1, 100, 2)
    )


# -- a long-lived process's connection, closed by a restart (issue 30) ----------------------
# A process that holds its connection (a Python `Ledger`, a server's own) met "server closed
# the connection unexpectedly" on its first call after a restart. Now that call is tried once
# more on a new connection: a read always, a write where nothing of it had been sent, or with
# its idempotency key. On psycopg here, and on the lean libpq driver in a process of its own
# (pgdriver.py picks it only where psycopg is not loaded).

LEAN_SCRIPT = """
import json, sys
from todoledger import Ledger
lg = Ledger(sys.argv[1], lean=True)
print(type(lg.store.conn).__module__, flush=True)
for line in sys.stdin:
    verb, _, text = line.strip().partition(" ")
    try:
        if verb == "add":
            lg.add(text, writer="agent:lean")
            print("ok", flush=True)
        elif verb == "keyed-write":
            with lg.keyed(text):
                r = lg.write({"todos": [{"content": "seed", "status": "pending"},
                                        {"content": text, "status": "pending"}]}, writer="agent:lean")
            print("skipped" if r.skipped else "applied", flush=True)
        else:
            print(json.dumps(sorted(i["content"] for i in lg.items())), flush=True)
    except Exception as exc:
        print(f"error {type(exc).__name__}: {exc}", flush=True)
"""


class LeanProcess:
    """A Python process holding one lean (libpq) `Ledger` open, told what to do line by line."""

    def __init__(self, url: str) -> None:
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-c", LEAN_SCRIPT, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.ask(None) == "todoledger.store.libpq"

    def ask(self, line: str | None) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


def test_a_long_lived_psycopg_ledger_goes_on_after_a_restart(private_pg: PrivatePG) -> None:
    """Before: `items()` after the restart raised UnavailableError (server closed the connection)."""
    with Ledger(private_pg.url) as lg:
        lg.add("before", writer="agent:long")
        private_pg.restart()
        assert [i["content"] for i in lg.items()] == ["before"]  # a read: tried again
        private_pg.restart()
        lg.add("after", writer="agent:long")  # its BEGIN met the closed connection: nothing was sent
        assert sorted(i["content"] for i in lg.items()) == ["after", "before"]


def test_a_long_lived_lean_ledger_goes_on_after_a_restart(private_pg: PrivatePG) -> None:
    lean = LeanProcess(private_pg.url)
    try:
        assert lean.ask("add before") == "ok"
        private_pg.restart()
        assert lean.ask("items") == '["before"]'
        private_pg.restart()
        assert lean.ask("add after") == "ok"
        assert lean.ask("items") == '["after", "before"]'
    finally:
        lean.close()


def test_a_write_whose_commit_landed_but_whose_reply_was_lost_is_applied_once(
    private_pg: PrivatePG,
) -> None:
    """The commit reached the server, the reply never reached the client (the
    proxy cut it): with its idempotency key the call is tried again, finds the
    key and applies nothing; the caller hears what was recorded. Without a key a
    write that had begun is not tried again (it might apply twice): it fails in one line."""
    from tests.cutproxy import CutProxy
    from todoledger.core.model import ConnectionLost

    proxy = CutProxy(private_pg.port)
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres"
    try:
        with Ledger(url) as lg:
            lg.add("seed", writer="agent:w")
            proxy.armed.set()
            with lg.keyed():
                result = lg.write(
                    {
                        "todos": [
                            {"content": "seed", "status": "pending"},
                            {"content": "listed once", "status": "pending"},
                        ]
                    },
                    writer="agent:w",
                )
            assert proxy.cuts == 1 and result.skipped
            proxy.armed.set()
            with lg.keyed():
                added = lg.add("added once", writer="agent:w")
            assert proxy.cuts == 2 and added["content"] == "added once"  # what was recorded
            proxy.armed.set()
            with pytest.raises(ConnectionLost):
                lg.add("unkeyed", writer="agent:w")
            assert proxy.cuts == 3
        lean = LeanProcess(url)
        try:
            proxy.armed.set()
            assert lean.ask("keyed-write lean-key-1") == "skipped"
            assert proxy.cuts == 4
        finally:
            lean.close()
        with Ledger(private_pg.url) as lg:
            contents = sorted(i["content"] for i in lg.items())
            keyed_ops = [o for o in lg.ops()]
        assert contents == ["added once", "lean-key-1", "listed once", "seed", "unkeyed"]
        assert len(keyed_ops) == 5  # seed, three cut writes (each applied once) and the lean one
    finally:
        proxy.close()
