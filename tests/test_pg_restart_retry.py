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
