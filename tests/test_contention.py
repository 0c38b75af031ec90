"""Team contention on both backends (tests/contention.py): 16 processes as
two hosts, each with its own connection. TODOLEDGER_CONTENTION_SECONDS sets
the run's length (8 s here, to keep the suite short; bench/bench_team.py runs 60 s)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from todoledger import Ledger
from todoledger.core.model import LedgerError

from .contention import run, verify
from .pgserver import ledger_url

SECONDS = float(os.environ.get("TODOLEDGER_CONTENTION_SECONDS", "8"))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sixteen_processes_on_two_hosts_lose_nothing_and_never_double_claim(
    backend: str, tmp_path: Path
) -> None:
    if backend == "sqlite":
        path = str(tmp_path / "team.db")
        targets = (path, path)
    else:
        url = ledger_url()
        targets = (url, url.replace("127.0.0.1", "localhost"))  # host B spells the server differently
    results = run(targets, SECONDS)
    figures = verify(targets[0], results)
    print(backend, figures)
    # The run exercised what it checks: claims, lapsed leases released, writes carrying tokens.
    # (How many fenced-out holders come back within a short run depends on the machine's
    # load; test_leases refuses one deterministically, and `verify` found no write by one.)
    assert figures["claims"] > 16 and figures["releases_on_expiry"] > 0
    assert figures["fenced_writes"] + figures["fenced_refusals"] > 0
    assert figures["list_writes"] > 16 and figures["single_updates"] > 16


def test_a_connection_killed_mid_transaction_leaves_nothing_half_written() -> None:
    import psycopg

    url = ledger_url()
    with Ledger(url) as lg:
        lg.write({"todos": [{"content": "kept", "status": "pending"}]}, writer="a")
    victim = Ledger(url)
    pid = victim.store.conn.info.backend_pid  # type: ignore[attr-defined]
    with pytest.raises(LedgerError, match=r"lost the connection to PostgreSQL"), victim.batch():
        victim.write(
            {"todos": [{"content": f"half {n}", "status": "pending"} for n in range(200)]}, writer="b"
        )
        with psycopg.connect(url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        victim.write({"todos": [{"content": "after the kill", "status": "pending"}]}, writer="b")
    victim.close()
    with Ledger(url) as lg:
        assert [i["content"] for i in lg.items()] == ["kept"]
        assert lg.check() == [] and len(lg.history()) == 1 and len(lg.ops()) == 1
        lg.write({"todos": [{"content": "next writer", "status": "pending"}]}, writer="c")  # the lock is free
        assert len(lg.items()) == 2
