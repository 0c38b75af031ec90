"""A hook never hangs on a team ledger that cannot answer (issue 30): through
Debian's PgBouncer with no PostgreSQL behind it (a port where nothing listens),
each hook returns within 3 s, exits 0 and keeps its event in the spool, also
while PgBouncer waits out its server_login_retry after the first failure.
(This guards the behaviour; the 60 s hang the issue measured was not reproduced
with a refused server port, and no client-side timer closes the connection yet.)"""

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
