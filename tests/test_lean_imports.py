"""The agent verbs load only what their plan needs: a plan without checks
answers every verification question with one query, and the checks' modules
(checkspec, the verification service) stay unloaded. With a check, the same
verbs load them and tell its real state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from todoledger.ledger import Ledger

CHECKS_MODULES = (
    "todoledger.ledger.gates",
    "todoledger.ledger.receipts",
    "todoledger.core.checkspec",
    "todoledger.store.checks",
)
PROBE = (
    "import json, sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    f"loaded = [m for m in {CHECKS_MODULES!r} if m in sys.modules]\n"
    "sys.stderr.write('LOADED ' + json.dumps(loaded) + '\\n')\nsys.exit(code)\n"
)


def probe(db: Path, *args: str) -> tuple[str, list[str]]:
    env = {**os.environ, "TODOLEDGER_DB": str(db), "TODOLEDGER_WRITER": "agent:1"}
    env.pop("TODOLEDGER_PLAN", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=db.parent,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stderr.rsplit("LOADED ", 1)[1])
    return done.stdout, loaded


def test_verbs_on_a_plan_without_checks_load_no_checks_module(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        first = lg.add("Build the drafter", writer="setup")
        second = lg.add("Benchmark it", writer="setup", depends_on=[first["id"]])
        lg.done(first["id"], writer="setup")
    out, loaded = probe(db, "show", "--json")
    assert loaded == []
    states = {it["id"]: it["verification"] for it in json.loads(out)["items"]}
    assert states == {first["id"]: "reported", second["id"]: None}
    for args in (
        ["next", "--json"],
        ["prime"],
        ["start", second["id"], "--json"],
        ["done", second["id"], "--json"],
    ):
        _, loaded = probe(db, *args)
        assert loaded == [], args
    with Ledger(db) as lg:
        assert lg.get(second["id"])["status"] == "completed"


def test_a_plan_with_a_check_still_gets_its_checks(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        gated = lg.add("Write the report", writer="setup")
        after = lg.add("Send it", writer="setup", depends_on=[gated["id"]])
        lg.add_check(gated["id"], f"file:{tmp_path / 'report.md'}", writer="cli:setup")  # a person's gate
        lg.update(gated["id"], status="completed", writer="cli:setup", force=True, force_reason="test setup")
    out, loaded = probe(db, "show", "--json")
    assert "todoledger.ledger.gates" in loaded
    rows = {it["id"]: it for it in json.loads(out)["items"]}
    assert rows[gated["id"]]["verification"] == "failed"  # its gate ran at the forced completion
    assert rows[after["id"]]["ready"] is False  # held: its prerequisite is not verified
    out, _ = probe(db, "next", "--json")
    assert after["id"] not in [it["id"] for it in json.loads(out)]
    (tmp_path / "report.md").write_text("done\n")
    # `done` runs the gate of a checked item (no shortcut past it): the file now exists.
    with Ledger(db) as lg:
        lg.update(gated["id"], status="pending", writer="cli:setup")
    _, loaded = probe(db, "done", gated["id"], "--json")
    assert "todoledger.ledger.receipts" in loaded
    out, _ = probe(db, "show", "--json")
    assert {it["id"]: it["verification"] for it in json.loads(out)["items"]}[gated["id"]] == "verified"


def test_the_console_script_flushes_everything_before_it_exits(tmp_path: Path) -> None:
    """The console script skips the interpreter's teardown (cli/entry.py `_exit`):
    a large output must still arrive whole, through a pipe, with the exit code."""
    from tests.conftest import todoledger_bin

    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        lg.import_jsonl(
            [json.dumps({"id": f"t{k:04d}", "content": f"item {k} " + "x" * 200}) for k in range(1000)]
        )
    env = {**os.environ, "TODOLEDGER_DB": str(db)}
    env.pop("TODOLEDGER_PLAN", None)
    done = subprocess.run([todoledger_bin(), "show", "--json"], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0
    assert len(json.loads(done.stdout)["items"]) == 1000
    refused = subprocess.run(
        [todoledger_bin(), "start", "nope", "--json"], capture_output=True, env=env, timeout=60
    )
    assert refused.returncode == 1
    assert refused.stderr.decode().startswith("Error: no item 'nope'")


HEAVY_STDLIB = ("json", "re", "contextlib", "enum", "datetime", "_strptime", "dataclasses", "typing")
STDLIB_PROBE = (
    "import sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    f"loaded = [m for m in {HEAVY_STDLIB!r} if m in sys.modules]\n"
    "sys.stderr.write('LOADED ' + ' '.join(loaded) + '\\n')\nsys.exit(code)\n"
)


def test_the_agent_verbs_load_no_heavy_standard_module(tmp_path: Path) -> None:
    """`json` (its regular expressions), `re`, `contextlib`, `datetime` each cost
    the agents' verbs a good part of a bare interpreter's start: none is loaded
    by reading the plan, claiming, adding, starting or finishing an item."""
    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        first = lg.add("Build the drafter", writer="setup", uses=["gpu"], estimate="2h")
        second = lg.add("Benchmark it", writer="setup", depends_on=[first["id"]])
        third = lg.add("Write it up", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(db), "TODOLEDGER_WRITER": "agent:1"}
    env.pop("TODOLEDGER_PLAN", None)
    for args in (
        ["show", "--json"],
        ["show", "--json", "--writer", "agent:1"],
        ["next", "--json"],
        ["prime"],
        ["show"],
        ["next", "--claim", "--json"],
        ["add", "Another", "--json"],
        ["start", second["id"], "--json", "--force"],
        ["done", third["id"], "--evidence", "written", "--json"],
    ):
        probe = [sys.executable, "-c", STDLIB_PROBE, *args]
        done = subprocess.run(probe, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stderr.rsplit("LOADED ", 1)[1].split() == [], args


def test_a_console_write_leaves_the_wal_for_the_next_call(tmp_path: Path) -> None:
    """The console script ends a lean verb with `os._exit` and leaves the ledger
    open: closing it would checkpoint and delete the WAL (three fsyncs), and the
    next call would create it again. What the verb wrote is committed: the next
    process reads it, and the ledger checks whole."""
    from tests.conftest import todoledger_bin

    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        first = lg.add("Build the drafter", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(db), "TODOLEDGER_WRITER": "agent:1"}
    env.pop("TODOLEDGER_PLAN", None)
    for args in (["start", first["id"], "--json"], ["add", "Benchmark it", "--json"]):
        done = subprocess.run([todoledger_bin(), *args], capture_output=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "ledger.db-wal").exists()  # not checkpointed away on the way out
    shown = subprocess.run([todoledger_bin(), "show", "--json"], capture_output=True, env=env, timeout=60)
    items = {it["content"]: it["status"] for it in json.loads(shown.stdout)["items"]}
    assert items == {"Build the drafter": "in_progress", "Benchmark it": "pending"}
    checked = subprocess.run([todoledger_bin(), "check"], capture_output=True, text=True, env=env, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_console_hook_leaves_the_wal_for_the_next_call(tmp_path: Path) -> None:
    """As the lean verbs: a hook run by the console script leaves its SQLite ledger open
    for `os._exit` (hooks/__init__.py `_Opened`), so its commit is not followed by a
    checkpoint (three fsyncs) and the next hook does not create the WAL again. What it
    wrote is committed: the next process reads it, and the ledger checks whole."""
    from tests.conftest import todoledger_bin

    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        lg.add("Build the drafter", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(db)}
    env.pop("TODOLEDGER_PLAN", None)
    for status in ("in_progress", "completed"):
        todos = {"todos": [{"content": "Build the drafter", "status": status, "activeForm": "Building"}]}
        event = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "TodoWrite"}
        done = subprocess.run(
            [todoledger_bin(), "hook", "claude-code"],
            input=json.dumps({**event, "tool_input": todos}).encode(),
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "ledger.db-wal").exists()  # not checkpointed away on the way out
        shown = subprocess.run([todoledger_bin(), "show", "--json"], capture_output=True, env=env, timeout=60)
        assert {it["content"]: it["status"] for it in json.loads(shown.stdout)["items"]} == {
            "Build the drafter": status
        }
    checked = subprocess.run([todoledger_bin(), "check"], capture_output=True, text=True, env=env, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


PANEL_PROBE = (
    "import json, sys, io\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "loaded = [m for m in sys.modules if m.startswith('todoledger.panel')]\n"
    "sys.stderr.write('LOADED ' + json.dumps(loaded) + '\\n')\n"
)


def test_without_a_panel_hooks_and_show_import_nothing_of_it(tmp_path: Path) -> None:
    """Claude Code's task panel (install --panel) costs nothing where it is not installed."""
    db = tmp_path / "ledger.db"
    with Ledger(db) as lg:
        lg.add("Build the drafter", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(db), "HOME": str(tmp_path)}
    env.pop("CLAUDE_CODE_TASK_LIST_ID", None)
    todos = {"todos": [{"content": "Build the drafter", "status": "in_progress", "activeForm": "Building"}]}
    events = [
        {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s", "cwd": str(tmp_path)},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "TodoWrite",
            "tool_input": todos,
            "session_id": "s",
            "cwd": str(tmp_path),
        },
    ]
    for args, stdin in [
        (["show", "--json"], ""),
        *((["hook", "claude-code"], json.dumps(e)) for e in events),
    ]:
        done = subprocess.run(
            [sys.executable, "-c", PANEL_PROBE, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        loaded = json.loads(done.stderr.rsplit("LOADED ", 1)[1])
        assert loaded == [], (args, loaded)
    with Ledger(db) as lg:
        assert lg.items()[0]["status"] == "in_progress"  # the hook did run


# The hooks run on every tool call, start and stop (bench/bench_hooks.py: each at most 2.5x
# `python -c pass`). `collections` and `functools` are not listed: `_sqlite3` imports them.
HOOK_HEAVY = (
    *HEAVY_STDLIB,
    "hashlib",
    "_hashlib",
    "pathlib",
    "importlib",
    "inspect",
    "uuid",
    "fcntl",
    "math",
)
HOOK_PROBE = (
    "import sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    f"loaded = [m for m in {HOOK_HEAVY!r} if m in sys.modules]\n"
    "panel = [m for m in sys.modules if m.startswith('todoledger.panel')]\n"
    "sys.stderr.write('LOADED ' + ' '.join(loaded) + ' | ' + ' '.join(panel) + '\\n')\n"
)


@pytest.mark.sqlite_only  # store/postgres.py imports contextlib itself
@pytest.mark.parametrize("panel", [False, True])
def test_the_hooks_load_no_heavy_standard_module_with_or_without_a_panel(
    ledger_env: Path, tmp_path: Path, panel: bool
) -> None:
    """SessionStart, a TodoWrite mirror that commits, and Stop load none of `json`
    (the event is read by core/jsontext.py), `re`, `hashlib`, `pathlib`, `importlib`,
    `dataclasses`...; with Claude Code's task panel installed (issue 30: the hooks keep
    their budgets with the panel sync on) neither, and Stop loads nothing of the panel."""
    from todoledger.install import run

    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    home.mkdir()
    env = {**os.environ, "TODOLEDGER_DB": str(ledger_env), "HOME": str(home)}
    env.pop("TODOLEDGER_PLAN", None)
    env.pop("CLAUDE_CODE_TASK_LIST_ID", None)
    if panel:
        run("claude-code", project=project, home=home, panel=True, plan="main")
        from todoledger.panel import target

        found = target(str(project), home)
        assert found is not None
        env["CLAUDE_CODE_TASK_LIST_ID"] = found.list_id
    with Ledger(ledger_env) as lg:
        lg.add("Fix the loader", writer="setup")
    todos = {"todos": [{"content": "Fix the loader", "status": "in_progress", "activeForm": "Fixing"}]}
    base = {"session_id": "s1", "cwd": str(project)}
    events = [
        ({**base, "hook_event_name": "SessionStart", "source": "startup"}, "SessionStart"),
        ({**base, "hook_event_name": "SessionStart", "source": "resume"}, "SessionStart, rows as shown"),
        (
            {**base, "hook_event_name": "PostToolUse", "tool_name": "TodoWrite", "tool_input": todos},
            "TodoWrite",
        ),
        ({**base, "hook_event_name": "Stop", "stop_hook_active": False}, "Stop"),
    ]
    for event, name in events:
        done = subprocess.run(
            [sys.executable, "-c", HOOK_PROBE, "hook", "claude-code"],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            timeout=60,
        )
        loaded, _, panel_modules = done.stderr.rsplit("LOADED ", 1)[1].partition("|")
        panel_modules = panel_modules.strip()
        if name == "SessionStart":
            assert "Fix the loader" in done.stdout
            # The first sync writes the panel's rows (their JSON is json's indented form).
            continue
        assert loaded.split() == [], (name, loaded)
        if name == "Stop" or not panel:
            assert panel_modules == "", (name, panel_modules)
        elif name == "SessionStart, rows as shown":
            assert "todoledger.panel.sync" in panel_modules  # the sync did run, and wrote nothing
    with Ledger(ledger_env) as lg:
        assert lg.items()[0]["status"] == "in_progress"  # the mirror did commit
