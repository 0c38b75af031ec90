"""A hook never hangs on a team ledger that cannot answer (issue 30).

Through Debian's PgBouncer with no PostgreSQL behind it (a port where nothing
listens), PgBouncer refuses the login at once: each hook returns within 3 s,
exits 0 and keeps its event in the spool. The hang the issue measured needs a
PgBouncer that has had server connections (it then accepts the login from what
it knows of the server, and queues the query until its query_wait_timeout,
120 s): a private cluster stopped, or frozen (SIGSTOP), after a first hook went
through. Before the client-side deadline (store/postgres.py `Watchdog`) a hook
then took 120 s (stopped) and over 150 s (frozen); `statement_timeout` could not
help, the server never saw the query."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import todoledger_bin
from tests.pgserver import database
from tests.privatepg import PrivatePG
from tests.test_team_pg import Bouncer, _free_port, _through, _todowrite

pytestmark = pytest.mark.sqlite_only  # its own PgBouncer in front of no server: one run


def test_a_hook_through_pgbouncer_with_postgresql_down_returns_within_3_s(tmp_path: Path) -> None:
    dead = _free_port()  # where PgBouncer looks for PostgreSQL: nothing listens there
    bouncer = Bouncer(tmp_path, server_port=dead)
    try:
        url = _through(database(), bouncer.port) + "?pgbouncer=transaction"
        project = tmp_path / "project"
        project.mkdir()
        took = []
        # The first login PgBouncer fails at once; it then waits server_login_retry (15 s)
        # before it tries again, and queues the clients that come meanwhile.
        for step in range(3):
            event = _todowrite(project, "s1", [("Train", "in_progress"), (f"Step {step}", "pending")])
            start = time.monotonic()
            done = subprocess.run(
                [todoledger_bin(), "hook", "claude-code"],
                input=json.dumps(event),
                env={**os.environ, "TODOLEDGER_DB": url},
                capture_output=True,
                text=True,
                timeout=120,
                cwd=project,
            )
            took.append(time.monotonic() - start)
            assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    finally:
        bouncer.stop()
    assert max(took) < 3.0, f"the hooks took {', '.join(f'{t:.1f}' for t in took)} s"
    spool = list((Path(os.environ["XDG_STATE_HOME"]) / "todoledger").glob("pending-*"))
    assert len(spool) == 1 and len(list(spool[0].glob("*.json"))) == 3


def _hook(project: Path, url: str, step: int) -> tuple[float, subprocess.CompletedProcess[str] | None]:
    """One TodoWrite hook; how long it took (30 s: it was still waiting, and killed)."""
    event = _todowrite(project, "s1", [("Train", "in_progress"), (f"Step {step}", "pending")])
    start = time.monotonic()
    try:
        done = subprocess.run(
            [todoledger_bin(), "hook", "claude-code"],
            input=json.dumps(event),
            env={**os.environ, "TODOLEDGER_DB": url},
            capture_output=True,
            text=True,
            timeout=30,
            cwd=project,
        )
    except subprocess.TimeoutExpired:
        return 30.0, None
    return time.monotonic() - start, done


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
def test_a_hook_returns_within_3_s_when_postgresql_goes_down_behind_a_warm_pgbouncer(
    tmp_path: Path, outage: str
) -> None:
    """Before: 120 s (stopped) and over 150 s (frozen), PgBouncer queueing the
    query; the agent kills its hook at 10 s and the event was lost. Now: within
    3 s, exit 0, the event spooled; once the server is back, `flush` lands it, once."""
    pg = PrivatePG(tmp_path)
    # server_login_retry 1 s (15 s by default, as docs/team.md advises teams to lower it): the
    # flush below lands the event once PgBouncer tries the server again.
    bouncer = Bouncer(tmp_path, server_port=pg.port, settings="server_login_retry = 1")
    frozen: list[int] = []
    try:
        url = f"postgresql://postgres@127.0.0.1:{bouncer.port}/postgres?pgbouncer=transaction"
        project = tmp_path / "project"
        project.mkdir()
        took, done = _hook(project, url, 1)  # PgBouncer now has server connections
        assert done is not None and done.returncode == 0
        if outage == "stopped":
            pg.stop_server()
        else:
            frozen = pg.freeze()
        took, done = _hook(project, url, 2)
        assert done is not None, "the hook was still waiting after 30 s"
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert took < 3.0, f"the hook took {took:.1f} s"
        spool = list((Path(os.environ["XDG_STATE_HOME"]) / "todoledger").glob("pending-*/*.json"))
        assert len(spool) == 1
        if outage == "stopped":
            pg.start()
        else:
            pg.thaw(frozen)
            frozen = []
        env = {**os.environ, "TODOLEDGER_DB": url}
        # PgBouncer waits out its server_login_retry (1 s here) after the failed login before it
        # tries the server again: until then the event still waits, then `flush` lands it.
        until = time.monotonic() + 40
        while True:
            flushed = subprocess.run(
                [todoledger_bin(), "flush"], env=env, capture_output=True, text=True, timeout=60, cwd=project
            )
            if flushed.returncode == 0 or time.monotonic() > until:
                break
            assert "1 still waiting" in flushed.stdout, flushed.stdout + flushed.stderr
            time.sleep(1)
        assert flushed.returncode == 0, flushed.stdout + flushed.stderr
        assert flushed.stdout.startswith("1 replayed"), flushed.stdout
        again = subprocess.run(
            [todoledger_bin(), "flush"], env=env, capture_output=True, text=True, timeout=60, cwd=project
        )
        assert again.returncode == 0 and "0 replayed" in again.stdout, again.stdout + again.stderr
        from todoledger import Ledger

        with Ledger(pg.url) as lg:
            contents = [i["content"] for i in lg.items()]
            writes = [o for o in lg.ops() if o["kind"] == "write"]
        assert sorted(contents) == ["Step 1", "Step 2", "Train"]
        assert len(writes) == 2  # the first hook's and the spooled one's, each once
    finally:
        if frozen:
            pg.thaw(frozen)
        bouncer.stop()
        pg.stop()


def test_a_deadline_closes_a_psycopg_connection_that_pgbouncer_keeps_waiting(tmp_path: Path) -> None:
    """The same deadline on psycopg (a process that has it loaded: the lean
    driver's fallback, a Python caller): the blocked statement returns at the
    deadline with one line, instead of PgBouncer's 120 s."""
    from todoledger import Ledger
    from todoledger.core.model import UnavailableError

    pg = PrivatePG(tmp_path)
    bouncer = Bouncer(tmp_path, server_port=pg.port)
    try:
        url = f"postgresql://postgres@127.0.0.1:{bouncer.port}/postgres?pgbouncer=transaction"
        with Ledger(url) as lg:
            lg.add("seed", writer="setup")
        pg.stop_server()
        start = time.monotonic()
        with pytest.raises(UnavailableError, match="within the caller's deadline"):
            Ledger(url, deadline=time.monotonic() + 1.0).close()
        assert time.monotonic() - start < 3.0
    finally:
        bouncer.stop()
        pg.stop()
