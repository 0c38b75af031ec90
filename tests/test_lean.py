"""The agent verbs' lean path (`todoledger.cli.lean`): the same output, errors
and exit status as their click commands, without importing click or rich."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import todoledger_bin
from todoledger.core.ids import seeded
from todoledger.ledger import Ledger

CLICK = "import sys\nfrom todoledger.cli.main import cli\ncli.main(sys.argv[1:], prog_name='todoledger')\n"
LEAN_PROBE = (
    "import sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'mcp'))\n"
    "sys.stderr.write('HEAVY ' + json.dumps(heavy) + '\\n')\nsys.exit(code)\n"
)
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
CLAUDE = json.dumps({"todos": [{"content": "Written", "status": "in_progress", "activeForm": "Writing"}]})


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lean")
    db = folder / "base.db"
    with seeded("lean-base"), Ledger(db) as lg:
        a = lg.add("Alpha", writer="setup", priority="high")
        b = lg.add("Beta", writer="setup", depends_on=[a["id"]])
        lg.add("Gamma", writer="setup", parent=a["id"])
        c = lg.add("Cancelled prerequisite", writer="setup")
        lg.add("Delta", writer="setup", depends_on=[c["id"]])
        lg.cancel(c["id"], writer="setup", reason="not needed")
        lg.start(a["id"], writer="setup")
        assert b["id"]
        lg.add("Other plan item", plan="other", writer="setup")
    (folder / "payload.json").write_text(CLAUDE)
    (folder / "bad.json").write_text("{not json")
    return db


def fresh(base: Path, tmp_path: Path, backend: str) -> Path | str:
    """A copy of `base` on the backend under test, at the same place each time
    (the output names it): the file `ledger.db` beside the test, or a schema
    of the test database named after the test's folder, emptied first."""
    if backend == "sqlite":
        db = tmp_path / "ledger.db"
        for leftover in tmp_path.glob("ledger.db*"):
            leftover.unlink()
        shutil.copy(base, db)
        return db
    import psycopg

    from tests.pgserver import database, ledger_url

    schema = "lean_" + re.sub(r"\W", "_", tmp_path.name)[-40:].lower()
    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    url = ledger_url(schema)
    with Ledger(base) as lg:
        lg.copy_to(url)
    return url


def ids(db: Path) -> dict[str, str]:
    with Ledger(db) as lg:
        return {it["content"]: it["id"] for it in lg.items()}


SECRET = re.compile(r"(?<=TODOLEDGER_LEASE_SECRET=)[0-9a-f]{32}|(?<=\"lease_secret\":\")[0-9a-f]{32}")


def run(db: Path | str, code: str | None, args: list[str], stdin: str = "") -> tuple[int, str, str]:
    env = {
        **os.environ,
        "TODOLEDGER_DB": str(db),
        "TODOLEDGER_ID_SEED": "lean-run",
        "TODOLEDGER_WRITER": "agent:1",
    }
    env.pop("TODOLEDGER_PLAN", None)
    argv = [sys.executable, "-c", "import json\n" + code, *args] if code else [todoledger_bin(), *args]
    cwd = db.parent if isinstance(db, Path) else Path.cwd()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd)
    # A claim's lease secret is random in each run (128 bits): compared as a secret, not by value.
    out = SECRET.sub("<secret>", STAMP.sub("<t>", done.stdout))
    return done.returncode, out, done.stderr


CASES = [
    ["show", "--json"],
    ["show"],
    ["show", "--all"],
    ["show", "--json", "--writer", "w1"],
    ["show", "--plan=other", "--json"],
    ["next", "--json"],
    ["next"],
    ["next", "--limit", "1", "--json"],
    ["next", "--claim", "--json", "--writer", "a"],
    ["next", "--claim"],
    ["add", "New item", "--json", "--priority", "high", "--depends-on", "{Alpha}", "--depends-on", "{Beta}"],
    ["add", "--plan", "other", "Piped"],
    ["add", "Orphan", "--parent", "nope"],
    ["add", "--", "--looks like an option"],
    ["start", "{Beta}", "--json"],
    ["start", "{Beta}", "--force", "--json"],
    ["start", "{Delta}"],
    ["done", "{Alpha}", "--evidence", "tests pass", "--json"],
    ["done", "{Gamma}"],
    ["done", "nope", "--json"],
    ["write", "payload.json", "--json"],
    ["write", "--dialect", "claude-code", "-"],
    ["write", "bad.json"],
    ["write", "missing.json", "--json"],
    ["prime"],
    ["prime", "--json"],
    ["prime", "--plan", "other"],
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c))
def test_lean_and_click_agree(case: list[str], base: Path, tmp_path: Path, ledger_backend: str) -> None:
    names = ids(base)
    args = [re.sub(r"\{(\w+)\}", lambda m: names[m.group(1)], a) for a in case]
    stdin = CLAUDE if args[0] == "write" else ""
    for extra in ("payload.json", "bad.json"):
        shutil.copy(base.parent / extra, tmp_path / extra)
    click = run(fresh(base, tmp_path, ledger_backend), CLICK, args, stdin)
    probe = run(fresh(base, tmp_path, ledger_backend), LEAN_PROBE, args, stdin)
    # The console script itself on the SQLite file (it ends the process with os._exit);
    # on PostgreSQL the probe is the lean path, and every other CLI test runs the script.
    lean = (
        run(fresh(base, tmp_path, ledger_backend), None, args, stdin) if ledger_backend == "sqlite" else None
    )
    if lean is not None:
        assert lean == click
    assert "Traceback" not in click[2] and "Traceback" not in probe[2]
    assert probe[:2] == click[:2]
    assert probe[2].rsplit("HEAVY ", 1)[0] == click[2]
    heavy = json.loads(probe[2].rsplit("HEAVY ", 1)[1])
    assert heavy == []  # neither click nor rich (nor the MCP SDK) was imported


def test_what_the_lean_path_leaves_to_click() -> None:
    from todoledger.cli.lean import parse

    for args in (
        ["show", "--help"],
        ["next", "--limit"],
        ["add"],
        ["add", "a", "b"],
        ["start", "x", "--evidence", "e"],
        ["show", "-h"],
        ["plans", "--json"],
    ):
        assert parse(args) is None, args
    assert parse(["next", "--claim", "--limit=3", "--json"]) == (
        "next",
        {"claim": True, "limit": "3", "json": True},
        [],
    )


@pytest.mark.parametrize(
    "args",
    [["next", "--limit", "0", "--json"], ["add", "x", "--priority", "urgent"], ["show", "--bogus"]],
    ids=lambda a: " ".join(a),
)
def test_refused_options_get_clicks_own_message(
    args: list[str], base: Path, tmp_path: Path, ledger_backend: str
) -> None:
    code, out, err = run(fresh(base, tmp_path, ledger_backend), None, args)
    assert code == 2 and out == "" and err.startswith("Usage: todoledger")
