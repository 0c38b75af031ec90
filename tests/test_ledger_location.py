"""Where the ledger is, said truthfully: before it exists (B9), what git
should not see of it (B9), and ledger URLs no backend serves yet (B10)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import todoledger_bin
from tests.test_mcp import refuse, stdio
from todoledger import Ledger, LedgerError
from todoledger.hooks import run_hook

# A server that is not there (port 1 refuses at once): a password must never be echoed.
PG_URL = "postgresql://alice:s3cret@127.0.0.1:1/plans"
REFUSED = "postgresql://alice@127.0.0.1:1/plans: cannot connect to PostgreSQL"
TODOS = {"todos": [{"content": "Fix the race", "status": "pending", "activeForm": "Fixing the race"}]}


def cli(
    cwd: Path, *args: str, db: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TODOLEDGER_DB"}
    if db is not None:
        env["TODOLEDGER_DB"] = db
    return subprocess.run(
        [todoledger_bin(), *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder.resolve()


def files(folder: Path) -> set[str]:
    return {
        str(p.relative_to(folder)) for p in folder.rglob("*") if ".git" not in p.relative_to(folder).parts
    }


# B9 ------------------------------------------------------------------------------
def test_show_before_any_write_says_where_the_first_write_creates_the_ledger(project: Path) -> None:
    shown = cli(project, "show")
    assert shown.returncode == 0, shown.stderr
    where = project / ".todoledger" / "ledger.db"
    assert f"ledger: {where} (not created yet: the first write creates it)" in shown.stdout
    assert ":memory:" not in shown.stdout
    assert files(project) == set()  # reading created nothing
    cli(project, "add", "Fix the race")
    assert f"ledger: {where}\n" in cli(project, "show").stdout + "\n"


def test_the_first_write_keeps_the_database_and_its_files_out_of_git(project: Path) -> None:
    added = cli(project, "add", "Fix the race")
    assert added.returncode == 0, added.stderr
    ignore = project / ".todoledger" / ".gitignore"
    assert ignore.is_file()
    folder = project / ".todoledger"
    (folder / "pending").mkdir(exist_ok=True)
    candidates = [
        "ledger.db",
        "ledger.db-wal",
        "ledger.db-shm",
        "hook.log",
        "hook.log.1",
        "pending/00001-42.json",
        ".gitignore",
        "plan.jsonl",
    ]
    check = subprocess.run(
        ["git", "check-ignore", "--no-index", *[f".todoledger/{c}" for c in candidates]],
        cwd=project,
        capture_output=True,
        text=True,
    )
    ignored = set(check.stdout.split())
    assert ignored == {f".todoledger/{c}" for c in candidates[:6]}
    status = subprocess.run(
        ["git", "status", "--porcelain", "-uall"], cwd=project, capture_output=True, text=True
    )
    assert status.stdout.split() == ["??", ".todoledger/.gitignore"]  # all git sees is the rule itself


def test_a_gitignore_of_the_users_own_is_kept(project: Path) -> None:
    (project / ".todoledger").mkdir()
    (project / ".todoledger" / ".gitignore").write_text("# mine\n")
    assert cli(project, "add", "Fix the race").returncode == 0
    assert (project / ".todoledger" / ".gitignore").read_text() == "# mine\n"


def test_a_ledger_outside_a_todoledger_folder_writes_no_gitignore(tmp_path: Path) -> None:
    with Ledger(tmp_path / "elsewhere" / "plans.db") as lg:
        lg.add("Fix the race")
    assert "plans.db" in files(tmp_path / "elsewhere")
    assert not any(name.endswith(".gitignore") for name in files(tmp_path))


# B10 -----------------------------------------------------------------------------
@pytest.mark.parametrize("args", [("show",), ("add", "Fix the race"), ("show", "--json"), ("plans",)])
def test_an_unreachable_postgresql_server_is_one_line_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = cli(tmp_path, *args, db=PG_URL)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {REFUSED} (") and done.stderr.count("\n") == 1
    assert "s3cret" not in done.stdout + done.stderr
    assert files(tmp_path) == set()


def test_any_url_scheme_is_refused_by_the_python_api(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    for url in ("sqlite:///x.db", "mysql://h/db", "MYSQL://h/db"):
        with pytest.raises(LedgerError, match=r"^\w+:// ledgers are not supported; give a file path"):
            Ledger(url)
    assert files(tmp_path) == set()


def test_a_hook_logs_the_refusal_and_lets_the_agent_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TODOLEDGER_DB", PG_URL)
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    work = tmp_path / "work"
    work.mkdir()
    event = {
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "session_id": "s1",
        "cwd": str(work),
        "tool_input": TODOS,
    }
    out = io.StringIO()
    assert run_hook(["claude-code"], stdin=io.BytesIO(json.dumps(event).encode()), stdout=out) == 0
    assert out.getvalue() == ""
    log = (state / "todoledger" / "hook.log").read_text()
    assert REFUSED in log and "s3cret" not in log
    assert files(work) == set()


def test_the_mcp_server_refuses_a_url_in_one_sentence(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio(tmp_path / "unused.db", TODOLEDGER_DB=PG_URL) as c:
            for tool, args in (("todowrite", TODOS), ("todoread", {})):
                message = await refuse(c, tool, args)
                assert REFUSED in message and "s3cret" not in message

    anyio.run(main)
    assert files(tmp_path) == set()


def test_an_empty_git_folder_above_is_no_project(tmp_path: Path) -> None:
    """Codex's sandbox leaves an empty `.git` (and `.codex`, `.agents`) folder in each
    writable root, /tmp included: a folder under it is its own project all the same,
    while a real repository (a `.git` with HEAD, or a `.git` file) still is one."""
    from todoledger.store.locate import project_root

    (tmp_path / ".git").mkdir()  # what Codex's sandbox leaves in /tmp
    work = tmp_path / "scratch" / "p"
    work.mkdir(parents=True)
    assert project_root(str(work)) == str(work)
    env = {k: v for k, v in os.environ.items() if k != "TODOLEDGER_DB"}
    made = subprocess.run(
        [todoledger_bin(), "init"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0 and (work / ".todoledger" / "ledger.db").exists(), made.stderr
    assert not (tmp_path / ".todoledger").exists()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert project_root(str(work)) == str(tmp_path)
    (work / ".git").write_text("gitdir: /elsewhere/.git/worktrees/p\n")  # a worktree's .git file
    assert project_root(str(work)) == str(work)
