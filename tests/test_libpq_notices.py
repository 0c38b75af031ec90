"""libpq's own notices never reach the user's screen (issue 30): the lean
PostgreSQL client (store/libpq.py, the agents' short calls and the hooks)
left libpq's default notice processor in place, which writes every server
notice to stderr, the FATAL a restart sends included, above todoledger's own
one-line error. psycopg never lets them through; now neither does the lean one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.pgserver import ledger_url

PROBE = """
import sys
import psycopg
from todoledger.store.libpq import OperationalError, connect

url = sys.argv[1]
conn = connect(url, autocommit=True)
conn.execute("DO $$ BEGIN RAISE NOTICE 'probe notice'; RAISE WARNING 'probe warning'; END $$")
pid = conn.execute("SELECT pg_backend_pid()").fetchall()[0][0]
with psycopg.connect(url, autocommit=True) as admin:  # as a restart ends every session
    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
try:
    conn.execute("SELECT 1")
except OperationalError as exc:
    print("ERROR " + str(exc).splitlines()[0])
"""


@pytest.mark.sqlite_only  # it talks to PostgreSQL itself, once
def test_the_lean_client_keeps_libpqs_notices_off_the_screen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ledger_url()], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ERROR ")  # the error still raises, as one line
    assert done.stderr == ""  # no NOTICE, WARNING or FATAL line of libpq's own
