"""A hook never hangs on a team ledger that cannot answer (issue 30): through
PgBouncer with PostgreSQL down, PgBouncer takes the connection and queues the
query for as long as its own timeouts say (a minute and more), and a hook
waited with it until the agent's hook timeout killed it, the event lost. The
hook's client-side deadline (2 s in all, connection and queueing included: a
timer that closes the connection) ends the wait, and the event is spooled."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import todoledger_bin
from tests.pgserver import database
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
