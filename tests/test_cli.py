"""The real `todoledger` executable: output, --json documents, clear errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import person_env, subprocess_env, todoledger_bin

SEED_PAYLOAD = (
    '{"todos":[{"content":"Check if SGLang EAGLE3 server is still running on container","priority":"high",'
    '"status":"in_progress"},{"content":"SCP and run benchmark_eagle3.py on container (16 draft tokens)",'
    '"priority":"high","status":"pending"},{"content":"Benchmark with 10 draft tokens","priority":"high",'
    '"status":"pending"},{"content":"Benchmark with 5 draft tokens","priority":"high","status":"pending"}]}'
)


def run(
    db: Path, *args: str, stdin: str | bytes | None = None, check: bool = True, person: bool = False
) -> subprocess.CompletedProcess[str]:
    """The real console script without a terminal; `person`: as cli:tester, by their token."""
    data = stdin.decode("utf-8", "replace") if isinstance(stdin, bytes) else stdin
    proc = subprocess.run(
        [todoledger_bin(), *args],
        input=data,
        capture_output=True,
        text=True,
        env=person_env(db) if person else subprocess_env(db),
        timeout=60,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_json(db: Path, *args: str, stdin: str | None = None) -> Any:
    return json.loads(run(db, *args, "--json", stdin=stdin).stdout)


def test_write_show_next_done_history_undo(ledger_env: Path) -> None:
    res = run_json(ledger_env, "write", "--writer", "opencode:s1", "-", stdin=SEED_PAYLOAD)
    assert res["dialect"] == "opencode" and len(res["ids"]) == 4
    view = run_json(ledger_env, "show")
    assert view["plan"] == "main" and view["revision"] == 1
    first = view["items"][0]
    assert set(first) >= {"id", "content", "status", "priority", "parent", "depends_on", "blocked", "ready"}
    assert first["status"] == "in_progress"
    nxt = run_json(ledger_env, "next")
    assert [n["content"] for n in nxt][:1] == [
        "SCP and run benchmark_eagle3.py on container (16 draft tokens)"
    ]
    done = run_json(ledger_env, "done", first["id"], "--evidence", "GET /health 200")
    assert done["status"] == "completed" and done["evidence"] == "GET /health 200"
    hist = run_json(ledger_env, "history", first["id"])
    assert [(h["field"], h["new"]) for h in hist][-2:] == [
        ("status", "completed"),
        ("evidence", "GET /health 200"),
    ]
    assert set(hist[0]) >= {"at", "item", "field", "old", "new", "writer"}
    undo = run_json(ledger_env, "undo")
    assert undo["kind"] == "done"
    assert run_json(ledger_env, "show")["items"][0]["status"] == "in_progress"
    human = run(ledger_env, "show").stdout
    assert "Check if SGLang EAGLE3" in human and "revision" in human


def test_default_command_shows_the_plan(ledger_env: Path) -> None:
    run(ledger_env, "add", "Train EAGLE-3 (4 GPUs, 5 epochs)", "--priority", "high")
    assert "Train EAGLE-3" in run(ledger_env).stdout


def test_add_with_parent_after_and_dependencies(ledger_env: Path) -> None:
    phase = run_json(ledger_env, "add", "Phase 0: Quick probe")
    one = run_json(ledger_env, "add", "Phase 0.1: Kill servers", "--parent", phase["id"])
    three = run_json(ledger_env, "add", "Phase 0.3: Launch", "--parent", phase["id"])
    two = run_json(
        ledger_env, "add", "Phase 0.2: Prepare drafter", "--after", one["id"], "--parent", phase["id"]
    )
    run(ledger_env, "dep", "add", three["id"], two["id"])
    items = run_json(ledger_env, "show")["items"]
    assert [i["content"] for i in items] == [
        "Phase 0: Quick probe",
        "Phase 0.1: Kill servers",
        "Phase 0.2: Prepare drafter",
        "Phase 0.3: Launch",
    ]
    assert items[3]["depends_on"] == [two["id"]] and items[3]["blocked"] is True
    cycle = run(ledger_env, "dep", "add", two["id"], three["id"], check=False)
    assert cycle.returncode == 1
    assert (
        cycle.stderr.strip()
        == f"Error: dependency cycle: {two['id']} -> {three['id']} -> {two['id']} (each waits for the next)"
    )


def test_claim_marks_in_progress_for_writer(ledger_env: Path) -> None:
    run(ledger_env, "add", "A")
    claimed = run_json(ledger_env, "next", "--claim", "--writer", "agent-7")
    assert claimed[0]["status"] == "in_progress" and claimed[0]["updated_by"] == "agent-7"
    assert run_json(ledger_env, "next", "--claim") == []


def test_export_import_files(ledger_env: Path, tmp_path: Path) -> None:
    run(ledger_env, "write", "-", stdin=SEED_PAYLOAD)
    out = tmp_path / "plan.jsonl"
    run(ledger_env, "export", str(out))
    lines = out.read_text().splitlines()
    assert len(lines) == 4
    other = tmp_path / "other.db"
    res = run_json(other, "import", str(out))
    assert res["added"] == 4
    run(other, "export", str(tmp_path / "again.jsonl"))
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()


def test_prime_text(ledger_env: Path) -> None:
    run(ledger_env, "write", "-", stdin=SEED_PAYLOAD)
    text = run(ledger_env, "prime").stdout
    assert text.startswith("todoledger plan 'main' (revision 1): 3 pending, 1 in_progress.")
    assert "In progress:" in text and "Ready next:" in text


def test_lint_reports_where_and_what(ledger_env: Path) -> None:
    bad = '{"todos":[{"content":"Benchmark 16 speculative tokens","priority":"pending","priority":"high"}]}'
    proc = run(ledger_env, "lint", "-", stdin=bad, check=False)
    assert proc.returncode == 1
    assert 'error: todos[0]: duplicate key "priority"' in proc.stdout
    ok = run(ledger_env, "lint", "-", stdin=SEED_PAYLOAD)
    assert ok.stdout.strip() == "ok: no findings"


@pytest.mark.parametrize(
    ("stdin", "args", "message"),
    [
        ("{not json", ("write", "-"), "invalid JSON"),
        (
            '{"todos":[{"content":"x","priority":"pending","priority":"high"}]}',
            ("write", "-"),
            "duplicate key",
        ),
        ('{"items":[1]}', ("write", "-"), "unknown payload"),
        ('{"todos":[]}', ("write", "--dialect", "klingon", "-"), "Invalid value for '--dialect'"),
        ("\xff\xfe garbage", ("write", "-"), "invalid JSON"),
        ("x" * (3 * 1024 * 1024), ("write", "-"), "limit is 2 MB"),
        ("", ("done", "nosuch"), "no item 'nosuch'"),
        ("", ("undo", "--plan", "empty"), "nothing to undo in plan 'empty'"),
        ("{bad", ("import", "-"), "line 1: invalid JSON"),
    ],
    # Short ids: pytest puts the test's id in PYTEST_CURRENT_TEST, and a 3 MB id makes
    # the environment too long for exec.
    ids=lambda value: value[:24] if isinstance(value, str) else None,
)
def test_bad_input_gets_one_clear_line_and_changes_nothing(
    ledger_env: Path, stdin: str, args: tuple[str, ...], message: str
) -> None:
    run(ledger_env, "add", "keep me")
    before = run(ledger_env, "export").stdout
    proc = run(ledger_env, *args, stdin=stdin, check=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error:") and message in proc.stderr
    assert run(ledger_env, "export").stdout == before


def test_no_traceback_on_corrupt_ledger(tmp_path: Path) -> None:
    db = tmp_path / "corrupt.db"
    db.write_bytes(b"this is not sqlite" * 100)
    proc = run(db, "show", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "not a usable ledger" in proc.stderr
    assert db.read_bytes() == b"this is not sqlite" * 100


def test_demo_command_shows_the_campaign(ledger_env: Path) -> None:
    out = run(ledger_env, "demo").stdout
    assert (
        'msg 4329 (seed 003): refused, nothing applied: rejected: todos[3]: duplicate key "priority"' in out
    )
    assert "plan demo-qwen" in out and "todoledger report demo" in out
    again = run(ledger_env, "demo").stdout
    assert "already loaded" in again and "refused" not in again


def test_terminal_escapes_in_content_are_neutralised(ledger_env: Path) -> None:
    run(ledger_env, "add", "evil \x1b[31mred\x1b[0m [bold]markup[/bold]")
    out = run(ledger_env, "show").stdout
    assert "\x1b[31m" not in out and "[bold]markup[/bold]" in out


SHARED = {"--plan", "--writer", "--json"}
WRITES = SHARED  # commands that record a change
OPTIONS = {
    "show": SHARED,  # --writer: the items join what that writer has seen
    "plans": {"--json"},
    "next": SHARED,  # --writer: who claims
    "start": WRITES,
    "done": WRITES,
    "cancel": WRITES,
    "restore": WRITES,
    "add": WRITES,
    "dep add": WRITES,
    "dep remove": WRITES,
    "undo": WRITES,
    "write": WRITES,
    "import": WRITES,
    "history": {"--plan", "--json"},
    "prime": {"--plan", "--json"},
    "check": {"--plan", "--json"},
    "demo": {"--plan", "--json"},
    "export": {"--plan"},
    "lint": {"--json"},
    "hook": set(),
}


def test_shared_options_appear_only_where_they_mean_something() -> None:
    import click

    from todoledger.cli.main import cli

    ctx = click.Context(cli)
    found: dict[str, set[str]] = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        subs = command.commands.items() if isinstance(command, click.Group) else [("", command)]
        for sub, cmd in subs:
            opts = {o for p in cmd.params for o in p.opts}
            found[f"{name} {sub}".strip()] = opts & SHARED
    assert {k: v for k, v in found.items() if k in OPTIONS} == OPTIONS
    for name in (
        "install",
        "ingest",
        "report",
        "stats",
    ):  # their own sets, no --plan/--writer from a decorator
        assert "--writer" not in found[name]


def test_an_option_a_command_does_not_take_is_refused(ledger_env: Path) -> None:
    refused = run(ledger_env, "export", "--json", check=False)
    assert refused.returncode == 2 and "No such option '--json'" in refused.stderr
    refused = run(ledger_env, "history", "--writer", "me", check=False)
    assert refused.returncode == 2 and "No such option '--writer'" in refused.stderr


def test_python_dash_m_todoledger_is_the_command(tmp_path: Path) -> None:
    """`python -m todoledger` runs the CLI (issue 31: it did not run)."""
    import sys

    env = subprocess_env(tmp_path / "ledger.db")
    out = subprocess.run(
        [sys.executable, "-m", "todoledger", "add", "From python -m"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0 and "added" in out.stdout and "From python -m" in out.stdout, out.stderr
