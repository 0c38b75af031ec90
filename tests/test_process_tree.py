"""The process-tree walk fails closed (issue 29, Why: "the process-tree walk fails
open", and "a pseudo-terminal made in the agent's shell is a person on Codex and
opencode"). Each test runs a pseudo-terminal (`script -qc`) under the agent's
shell, which the command line would otherwise take for a person at a terminal,
and asks `approve`: refused, and nothing is approved."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from todoledger import Ledger
from todoledger.core.approval import is_person
from todoledger.identity import MARKER_VARS, agent_program

from .conftest import todoledger_bin

PERSON = "cli:ann"
NON_DUMPABLE = (
    "import ctypes, subprocess, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0);"  # PR_SET_DUMPABLE, 0
    " sys.exit(subprocess.run(sys.argv[1:]).returncode)"
)
pytestmark = pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1)")


def clean_env(db: Path | str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MARKER_VARS and not k.startswith("TODOLEDGER_")}
    env.update(TODOLEDGER_DB=str(db), **extra)
    return env


def gated(db: Path) -> str:
    with Ledger(str(db)) as lg:
        return str(lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"])


def approvers(db: Path, item: str) -> list[str]:
    with Ledger(str(db)) as lg:
        return [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]


@pytest.fixture
def shared_db() -> Iterator[Path]:
    """A ledger that the user `nobody` may write (a test's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="todoledger-tree-"))
    folder.chmod(0o777)
    try:
        yield folder / "ledger.db"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


ROOT = Path(__file__).resolve().parent.parent
# The files of the packages `todoledger approve` loads (the full command line, click and all).
LOADED = (
    "import sys, todoledger.cli.main, todoledger.cli.cmd_board, todoledger.cli.entry\n"
    "print('\\n'.join(m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)))"
)
SYSTEM_PYTHON = "/usr/bin/python3"


def _same_python() -> bool:
    try:
        out = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True
        )
    except OSError:
        return False
    return out.stdout.decode().strip() == str(sys.version_info[:2])


@pytest.mark.sqlite_only
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not _same_python(),
    reason="needs root, setpriv and a system Python of this minor version",
)
def test_a_non_dumpable_wrapper_run_as_a_normal_user_is_an_agent_above(shared_db: Path) -> None:
    """Before: as a normal user, a wrapper that calls prctl(PR_SET_DUMPABLE, 0) hid
    the shell above it (its environment cannot be read), and the walk took the
    unreadable ancestor for "no agent above": `approved ... by cli:nobody`."""
    item = gated(shared_db)
    for path in shared_db.parent.iterdir():
        path.chmod(0o666)
    # This venv's interpreter, and the checkout itself (a CI clone in a folder of mode 0700),
    # may sit where nobody cannot reach: the system's Python of the same minor version runs a
    # copy of todoledger and of the packages its command line loads, in the shared folder.
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    readable = shared_db.parent / "py"
    shutil.copytree(ROOT / "src" / "todoledger", readable / "todoledger")
    loaded = subprocess.run(
        [sys.executable, "-c", LOADED],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    ).stdout.split()
    for name in sorted({Path(f).relative_to(site).parts[0] for f in loaded if f.startswith(str(site))}):
        source = site / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, readable / name)
    for path in readable.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    readable.chmod(0o755)
    tl = shared_db.parent / "todoledger"
    tl.write_text(
        f"#!/bin/sh\nPYTHONPATH={readable} exec {SYSTEM_PYTHON} -c"
        ' \'import sys; from todoledger.cli.entry import main; sys.argv[0] = "todoledger"; main()\' "$@"\n'
    )
    tl.chmod(0o755)
    # The agent's shell (here, as nobody, its markers already unset), then the wrapper,
    # then a pseudo-terminal. `; :` keeps the shell a process of its own.
    line = f'{SYSTEM_PYTHON} -c "$WRAP" script -qc "$TL approve $ITEM" /dev/null; :'
    ran = subprocess.run(
        ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "bash", "-c", line],
        env=clean_env(shared_db, WRAP=NON_DUMPABLE, TL=str(tl), ITEM=item, HOME="/tmp"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "approve: a person must run it, not agent-shell:unseen" in ran.stdout, ran.stdout + ran.stderr
    assert not any(is_person(w) for w in approvers(shared_db, item))


def test_a_chain_deeper_than_the_walk_is_an_agent_above(ledger_env: Path | str, tmp_path: Path) -> None:
    """Before: 70 processes between the marked shell and the pseudo-terminal put the
    shell past the walk's 64, and the walk said "no agent above"."""
    with Ledger() as lg:
        item = str(lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"])
    nest = tmp_path / "nest.sh"
    nest.write_text(
        'if [ "$1" -gt 0 ]; then sh "$0" $(($1 - 1)); exit $?; fi\nscript -qc "$TL approve $ITEM" /dev/null\n'
    )
    ran = subprocess.run(
        ["bash", "-c", 'env -u CLAUDECODE sh "$0" 70; :', str(nest)],
        env=clean_env(ledger_env, CLAUDECODE="1", TL=todoledger_bin(), ITEM=item),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "approve: a person must run it, not agent-shell:unseen" in ran.stdout, ran.stdout + ran.stderr
    with Ledger() as lg:
        assert not any(is_person(e["writer"]) for e in lg.history(item=item) if e["field"] == "approved")


@pytest.mark.parametrize("agent", ["codex", "opencode"])
def test_a_marked_shell_that_execs_its_last_command_still_has_the_agent_above(
    ledger_env: Path | str, tmp_path: Path, agent: str
) -> None:
    """Before: `T=todoledger; env -u <markers> script -qc "$T approve ID" /dev/null`
    from Codex's or opencode's shell tool approved as `cli:root`: `bash -c` runs its
    last command in place of the marked shell, so no marked process was left above
    it, and the agent's own process carries no marker. The agent here is a program
    by the agent's name (a shell, so the test needs no agent) that starts its shell tool
    as the agents do: `bash -c COMMAND` with the marker set."""
    with Ledger() as lg:
        item = str(lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"])
    program = tmp_path / agent
    program.symlink_to(shutil.which("bash") or "/bin/bash")
    marker = "CODEX_THREAD_ID=t1" if agent == "codex" else "OPENCODE=1"
    unset = "-u CODEX_THREAD_ID" if agent == "codex" else "-u OPENCODE"
    command = f'T={todoledger_bin()}; env {unset} script -qc "$T approve {item}" /dev/null'
    ran = subprocess.run(
        [str(program), "-c", f'{marker} bash -c "$0"; :', command],
        env=clean_env(ledger_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"approve: a person must run it, not agent-shell:{agent}" in ran.stdout, ran.stdout + ran.stderr
    with Ledger() as lg:
        assert not any(is_person(e["writer"]) for e in lg.history(item=item) if e["field"] == "approved")


def test_the_agents_programs_are_known_by_their_command_lines() -> None:
    known = {
        b"claude\0--resume\0": "claude-code",
        b"node\0/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js\0": "claude-code",
        b"/opt/codex/bin/codex-x86_64-unknown-linux-musl\0exec\0": "codex",
        b"node\0/home/u/.npm/bin/codex\0": "codex",
        b"/usr/bin/node\0/usr/lib/node_modules/@google/gemini-cli/dist/index.js\0": "gemini",
        b"/home/u/.opencode/bin/opencode\0": "opencode",
    }
    for cmdline, kind in known.items():
        assert agent_program(cmdline) == kind, cmdline
    for other in (
        b"bash\0-c\0claude\0",
        b"less\0claude-notes.md\0",
        b"vim\0codex.txt\0",
        b"script\0-qc\0x\0",
    ):
        assert agent_program(other) is None, other
