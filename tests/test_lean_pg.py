"""An agent's short call on a PostgreSQL ledger goes through the libpq binding
(store/libpq.py), never psycopg, whose import cost 3x a whole call on SQLite
(bench/bench_pg_call.py); and it answers exactly as the psycopg path does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from todoledger.ledger import Ledger

PROBE = (
    "import sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "drivers = [m for m in ('psycopg', 'todoledger.store.libpq') if m in sys.modules]\n"
    "sys.stderr.write('DRIVERS ' + ' '.join(drivers) + '\\n')\nsys.exit(code)\n"
)
SESSION = "lean-pg"


@pytest.fixture
def pg(ledger_env: Path | str, ledger_backend: str) -> str:
    if ledger_backend != "postgres":
        pytest.skip("the libpq binding is PostgreSQL's")
    return str(ledger_env)


def call(url: str, cwd: Path, *args: str, stdin: bytes = b"") -> tuple[bytes, list[str]]:
    env = {**os.environ, "TODOLEDGER_DB": url, "TODOLEDGER_WRITER": "agent-shell:lean-pg"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr.decode().rsplit("DRIVERS ", 1)[1].split()


def plan(url: str) -> dict[str, str]:
    with Ledger(url) as lg:
        first = lg.add("Build the drafter", writer="setup", priority="high", estimate="2h")
        second = lg.add("Benchmark it 100% — «vite»", writer="setup", depends_on=[first["id"]])
        third = lg.add("Percent %s and ? in text", writer="setup")
        lg.add("Write it up", writer="setup", parent=third["id"])
        lg.start(first["id"], writer="setup")
        lg.done(first["id"], writer="setup", evidence="ran it")
        lg.write(
            {"todos": [{"content": "session task", "status": "in_progress", "activeForm": "Doing"}]},
            writer=f"claude-code:{SESSION}",
            dialect="claude-code",
        )
    return {"first": first["id"], "second": second["id"]}


def test_the_agents_reads_use_libpq_and_print_what_psycopg_reads(pg: str, tmp_path: Path) -> None:
    plan(pg)
    with Ledger(pg) as lg:  # this process: psycopg
        expected = {
            ("show", "--json"): lg.show_json(None) + "\n",
            ("next", "--json"): json.dumps(lg.next(None, limit=5), separators=(",", ":")) + "\n",
            ("prime",): lg.prime(None),
        }
    for args, text in expected.items():
        out, drivers = call(pg, tmp_path, *args)
        assert drivers == ["todoledger.store.libpq"], args
        if args[0] == "next":
            assert json.loads(out) == json.loads(text)
        else:
            assert out.decode() == text, args


def test_the_agents_writes_and_hooks_use_libpq_and_are_recorded(pg: str, tmp_path: Path) -> None:
    ids = plan(pg)
    out, drivers = call(pg, tmp_path, "add", "Added through libpq", "--json", "--depends-on", ids["second"])
    assert drivers == ["todoledger.store.libpq"]
    added = json.loads(out)
    out, drivers = call(pg, tmp_path, "start", ids["second"], "--json")
    assert drivers == ["todoledger.store.libpq"]
    assert json.loads(out)["status"] == "in_progress"
    event = {"session_id": SESSION, "cwd": str(tmp_path), "transcript_path": ""}
    todo = {
        **event,
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": "session task", "status": "completed", "activeForm": "Doing"}]},
    }
    _, drivers = call(pg, tmp_path, "hook", "claude-code", stdin=json.dumps(todo).encode())
    assert drivers == ["todoledger.store.libpq"]
    started = json.dumps({**event, "hook_event_name": "SessionStart", "source": "compact"}).encode()
    out, drivers = call(pg, tmp_path, "hook", "claude-code", stdin=started)
    assert drivers == ["todoledger.store.libpq"]
    stop = json.dumps({**event, "hook_event_name": "Stop"}).encode()
    _, drivers = call(pg, tmp_path, "hook", "claude-code", "--gate-stop", stdin=stop)
    assert drivers == ["todoledger.store.libpq"]
    with Ledger(pg) as lg:
        items = {it["content"]: it for it in lg.show(None)["items"]}
        assert lg.prime(None, writer=f"claude-code:{SESSION}", recovering=True) in out.decode()
    assert items["session task"]["status"] == "completed"
    assert items["Added through libpq"]["depends_on"] == [ids["second"]]
    assert added["id"] == items["Added through libpq"]["id"]
    assert items["Benchmark it 100% — «vite»"]["status"] == "in_progress"


def test_a_refusal_through_libpq_reads_as_through_psycopg(pg: str, tmp_path: Path) -> None:
    """The server's errors keep their meaning: a database that does not exist is one line, not a traceback."""
    env = {**os.environ, "TODOLEDGER_DB": pg.replace("/todoledger_test", "/no_such_db_", 1).split("?")[0]}
    for args in (["show", "--json"], ["next", "--json"]):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 1
        error, drivers = done.stderr.rsplit("DRIVERS ", 1)
        assert drivers.split() == ["todoledger.store.libpq"]
        assert error.startswith("Error: ") and "cannot connect to PostgreSQL" in error
        assert "does not exist" in error and len(error.strip().splitlines()) == 1
