"""The example outputs of README.md and of the docs pages, produced by running the real commands.

README.md and the pages in PAGES hold cog blocks (cogapp, as sqlite-utils does)
that call the functions below. After a change to what a command prints,
regenerate with

    .venv/bin/python docs/readme.py --update      (same as: .venv/bin/cog -r README.md docs/...)

and tests/test_readme.py fails (`cog --check`) while a page differs.

Each named session is a scratch project in a temporary folder, with `tests`
pointing at this repository's tests/ folder (the forensics examples read the
public transcripts vendored in tests/data/transcripts/public/, as they would
from a clone's root: nothing refers to a folder outside the clone). Its
commands run one by one through bash, as shown, with the real `todoledger` of
this environment and:
- TODOLEDGER_DB=.todoledger/ledger.db (so outputs name no temporary path),
- TODOLEDGER_ID_SEED=readme-<session>: the same ids on every run,
- TODOLEDGER_NOW: a fixed clock, for outputs that show times (each session's
  ledger is created as `todoledger init --test-clock` creates one: no other
  ledger honours it),
- HOME in the scratch folder (install's records stay there) and a PATH of
  this environment's scripts and the system's, so no agent CLI of this
  machine shows up in an output.
Sessions are shared by every page of one run: each page names its own.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NOW = "2026-02-12T12:00:00.000Z"
_SESSIONS: dict[str, Path] = {}
_SCRATCH: list[Path] = []


# The pages whose examples this module generates (docs/docgen.py generates docs/cli.md and
# docs/ARCHITECTURE.md from the code).
PAGES = ("README.md", "docs/ledger.md", "docs/verification.md", "docs/mcp.md", "docs/forensics.md")


def _root() -> Path:
    if not _SCRATCH:
        scratch = Path(tempfile.mkdtemp(prefix="todoledger-readme-"))
        atexit.register(shutil.rmtree, scratch, True)
        (scratch / "home").mkdir()
        _SCRATCH.append(scratch)
    return _SCRATCH[0]


def session(name: str) -> Path:
    """The scratch project of a session, created on first use."""
    if name not in _SESSIONS:
        folder = _root() / name
        folder.mkdir()
        (folder / "tests").symlink_to(ROOT / "tests")  # as from a clone's root
        _register_you(folder / ".todoledger" / "ledger.db")
        _SESSIONS[name] = folder
    return _SESSIONS[name]


README_TOKEN = "readme-you-0123456789"  # a person's token: the examples run as the person `cli:you`


def _register_you(db: Path) -> None:
    """The person `cli:you`'s token, registered in the session's ledger as a person
    registers one (`todoledger token add`): the route a script has to a person's
    identity (docs/security.md)."""
    from todoledger import Ledger

    db.parent.mkdir(parents=True, exist_ok=True)
    with Ledger(db) as lg:
        lg.start_test_clock()
        lg.add_token("you", token=README_TOKEN, writer="cli:you")


def env(name: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
    out.update(
        PATH=os.pathsep.join([str(BIN), "/usr/bin", "/bin"]),
        HOME=str(_root() / "home"),
        TODOLEDGER_DB=".todoledger/ledger.db",
        TODOLEDGER_ID_SEED=f"readme-{name}",
        TODOLEDGER_NOW=NOW,
        TODOLEDGER_TOKEN=README_TOKEN,
        NO_COLOR="1",
        COLUMNS="120",
    )
    return out


def file(name: str, path: str, content: str | dict[str, Any]) -> str:
    """Put a file in the session's project (not shown); returns nothing to insert."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    (session(name) / path).write_text(text)
    return ""


def seed_call(msg: int) -> str:
    """The todo call of the demo quoted from the seeds at message `msg`, as the agent sent it."""
    from todoledger.demo import CALLS

    return next(c.payload for c in CALLS if c.msg == msg)


TEAM_URL = "postgresql://postgres@127.0.0.1:5432/postgres?options=-csearch_path%3Dreadme_team"


def team(name: str, *commands: str | tuple[str, int], head: int | None = None) -> str:
    """Like `shell`, in a session whose project finds its ledger by its team setting (no
    TODOLEDGER_DB): the PostgreSQL server the tests use (TEAM_URL), schema `readme_team`
    dropped first, so that `init --team` creates it."""
    import psycopg

    base = TEAM_URL.partition("?")[0]
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        conn.execute("DROP SCHEMA IF EXISTS readme_team CASCADE")
    _TEAM.add(name)
    try:
        run(name, f"todoledger init --team '{TEAM_URL}'")  # not shown: the README says what it does
        return shell(name, *commands, head=head)
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute("DROP SCHEMA IF EXISTS readme_team CASCADE")


_TEAM: set[str] = set()


def run(name: str, command: str, *, head: int | None = None, script: bool = False) -> str:
    """`$ command` and what it prints (stdout and stderr, as a terminal shows them).

    `head` keeps the first lines and says how many more there were. A `script`
    (the Python examples, on a ledger of their own) runs as the user `you`
    without a token, as a reader's script would: its writer is `script:you`."""
    tokenless = script or "todoledger serve" in command  # serve reads TODOLEDGER_TOKEN as its own token
    run_env = {k: v for k, v in env(name).items() if k != "TODOLEDGER_TOKEN" or not tokenless}
    if script:
        run_env.update(LOGNAME="you", USER="you")
    if name in _TEAM:
        del run_env["TODOLEDGER_DB"]
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=session(name),
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.rstrip("\n").splitlines()
    lines = [ln.rstrip().replace(str(_root()), "..") for ln in lines]
    if head is not None and len(lines) > head + 1:
        lines = [*lines[:head], f"... ({len(lines) - head} more lines)"]
    return "\n".join([f"$ {command}", *lines])


def shell(name: str, *commands: str | tuple[str, int], head: int | None = None) -> str:
    """A fenced block of commands run in order in one session, with their outputs;
    a (command, lines) pair keeps that many lines of its own output (`head` for all others)."""
    shown = [run(name, c, head=head) if isinstance(c, str) else run(name, c[0], head=c[1]) for c in commands]
    return "```\n" + "\n".join(shown) + "\n```\n"


def python(name: str, code: str) -> str:
    """The code as a Python block and, run as a script in the session's project, what it prints.
    A ledger file the code names (`Ledger("plan.db")`) is made first with a test clock, as
    `init --test-clock` makes one, so that TODOLEDGER_NOW fixes its times too."""
    import re

    from todoledger import Ledger

    for path in re.findall(r'Ledger\("([^"]+\.db)"\)', code):
        target = session(name) / path
        if not target.exists():
            with Ledger(str(target)) as lg:
                lg.start_test_clock()
    file(name, "example.py", code)
    out = run(name, f"{sys.executable} example.py", script=True).split("\n", 1)[1:]
    return f"```python\n{code.rstrip()}\n```\n\nprints:\n\n```\n{''.join(out)}\n```\n"


def mcp_replies(name: str, *calls: tuple[str, dict[str, Any]]) -> str:
    """The JSON text of each MCP tool reply (what the server sends as `content[0].text`),
    from the tools layer in this process against the session's ledger."""
    from todoledger.core.ids import seeded
    from todoledger.core.model import LedgerError
    from todoledger.mcp.server import _result
    from todoledger.mcp.tools import PlanTools

    saved = {k: os.environ.get(k) for k in ("TODOLEDGER_DB", "TODOLEDGER_NOW")}
    os.environ.update(TODOLEDGER_DB=str(session(name) / ".todoledger" / "ledger.db"), TODOLEDGER_NOW=NOW)
    tools = PlanTools(cwd=session(name))
    out = []
    try:
        for n, (tool, args) in enumerate(calls):
            with seeded(f"readme-{name}-mcp-{n}"):
                try:
                    reply = getattr(tools, tool)(args, "mcp:inspector-cli:readme")
                except LedgerError as exc:  # the server answers with the sentence, marked isError
                    out.append(f"(isError) {exc}")
                    continue
            out.append(_result(reply).content[0].text)  # type: ignore[union-attr]
    finally:
        tools.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return "```\n" + "\n".join(out) + "\n```\n"


def main(argv: list[str]) -> int:
    """`--update` rewrites the outputs; otherwise check them. A path other than README.md may follow."""
    from cogapp import Cog  # type: ignore[import-untyped]

    files = [a for a in argv if not a.startswith("--")] or [str(ROOT / page) for page in PAGES]
    hint = "the README or a docs page is out of date: run `.venv/bin/python docs/readme.py --update`"
    mode = ["-r"] if "--update" in argv else ["--check", "--diff", "--check-fail-msg", hint]
    return int(Cog().main(["cog", *mode, *files]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
