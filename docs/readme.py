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

README.md itself is one reader's terminal (`reader`, `Terminal`): its commands
run in order in one bash, in one folder named as a clone is (`todoledger`), so
that a variable an example sets (an id it captured) is there for the next one;
stdin is a terminal, so the writer is the person `cli:you`, as for a reader
typing them. tests/test_readme_runs.py runs the same commands in a fresh copy
of the clone; docs/development.md says how it compares the outputs.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
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


def drop_team_schema() -> None:
    """The README's team example starts on a server without its schema (`init --team` creates it)."""
    import psycopg

    with psycopg.connect(TEAM_URL.partition("?")[0], autocommit=True, connect_timeout=5) as conn:
        conn.execute("DROP SCHEMA IF EXISTS readme_team CASCADE")


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


READER = "todoledger"  # the README's folder: a clone's name (`git clone .../todoledger`)


def reader_env(home: Path) -> dict[str, str]:
    """A reader's environment: none of todoledger's variables, HOME of their own, the system's
    PATH (the first block's `source .venv/bin/activate` adds the venv), no browser to open."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("TODOLEDGER_", "VIRTUAL_ENV"))}
    out.update(
        PATH=os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"]),
        HOME=str(home),
        USER="you",
        LOGNAME="you",
        NO_COLOR="1",
        COLUMNS="120",
        BROWSER="true",  # `serve --open`: no browser window from a test
    )
    return out


class Terminal:
    """One bash, fed command after command as a person types them: variables and `cd`
    persist, stdin is a terminal (a pty), stdout and stderr come back together."""

    END = b"\0todoledger-readme-done\n"

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self._master, slave = os.openpty()
        read_fd, self._commands = os.pipe()
        loop = (
            f"while IFS= read -r -d '' line <&{read_fd}; do eval \"$line\"; "
            "printf '\\n\\0todoledger-readme-done\\n'; done"
        )
        self.proc = subprocess.Popen(
            ["bash", "-c", loop],
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(read_fd,),
            start_new_session=True,
        )
        os.close(slave)
        os.close(read_fd)

    def run(self, command: str, timeout: float = 900) -> list[str]:
        """The lines `command` printed."""
        import selectors

        assert self.proc.stdout is not None
        os.write(self._commands, command.encode() + b"\0")
        out, deadline = b"", time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not out.endswith(self.END):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError(f"{command!r} still runs after {timeout:.0f} s")
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError(f"the shell ended during {command!r}")
                out += chunk
        text = out[: -len(self.END)].decode(errors="replace")
        return text.removesuffix("\n").splitlines() if text.strip("\n") else []

    def close(self) -> None:
        os.close(self._commands)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._master)


_TERMINALS: dict[str, Terminal] = {}


def clone(dest: Path) -> Path:
    """What `git clone` of this working tree gives: its tracked and new (not ignored) files,
    committed in a repository of their own; no .venv, no ledger."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file() and not source.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    quiet = {
        "GIT_AUTHOR_NAME": "r",
        "GIT_AUTHOR_EMAIL": "r@x",
        "GIT_COMMITTER_NAME": "r",
        "GIT_COMMITTER_EMAIL": "r@x",
        "HOME": str(dest.parent),
        "PATH": os.environ["PATH"],
    }
    for git in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "clone"]):
        subprocess.run(["git", *git], cwd=dest, env=quiet, check=True, capture_output=True)
    return dest


def reader(*commands: str | tuple[str, int], head: int | None = None) -> str:
    """Like `shell`, for README.md: the commands typed in the reader's one terminal, in order."""
    if READER not in _TERMINALS:
        folder = clone(_root() / READER)
        # The first block's venv, activated: this environment's, seen at the clone's `.venv` (what
        # `install` writes, the venv's absolute command, then reads as a reader's would).
        (folder / ".venv").symlink_to(BIN.parent, target_is_directory=True)
        env_ = reader_env(_root() / "home") | {"TODOLEDGER_ID_SEED": f"readme-{READER}"}
        env_.update(
            VIRTUAL_ENV=str(folder / ".venv"), PATH=f"{folder / '.venv' / BIN.name}{os.pathsep}{env_['PATH']}"
        )
        _TERMINALS[READER] = term = Terminal(folder, env_)
        atexit.register(term.close)
    term = _TERMINALS[READER]
    shown = []
    for c in commands:
        command, keep = (c, head) if isinstance(c, str) else c
        lines = [ln.rstrip().replace(str(_root()), "..") for ln in term.run(command)]
        if keep is not None and len(lines) > keep + 1:
            lines = [*lines[:keep], f"... ({len(lines) - keep} more lines)"]
        shown.append("\n".join([f"$ {command}", *lines]))
    return "```\n" + "\n".join(shown) + "\n```\n"


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
