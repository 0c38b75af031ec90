"""Which todoledger command an agent's config should name.

An agent runs hooks, its MCP server and its shell commands with its own PATH.
A `todoledger` installed in a virtual environment (or by pipx or uv) that is
not the one on PATH would make every one of them fail, so install writes the
absolute path of the todoledger that runs it, and says so. So does a
todoledger found on PATH only because a virtual environment is active in this
shell (`source .venv/bin/activate`): the agent's hooks never activate it.
`--command` overrides. Codex runs its shell commands in a login shell, which sets PATH
anew from the profile files: its instructions name the absolute path too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

NAME = "todoledger"


def running() -> Path:
    """The todoledger executable of this process: the script that started it, else
    the one beside this interpreter (a venv's bin, pipx's and uv's tool folders)."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.name in (NAME, f"{NAME}.exe") and started.is_file():
        return started.absolute()
    return Path(sys.executable).parent / NAME


def resolve(given: str | None, agent: str, path: str | None = None) -> tuple[str, list[str]]:
    """(the command to write, notes saying why it is not the bare name)."""
    if given is not None:
        return given, []
    here = running()
    found = shutil.which(NAME, path=path if path is not None else os.environ.get("PATH"))
    same = found is not None and _same_file(Path(found), here)
    shown = shlex.quote(str(here))
    venv = os.environ.get("VIRTUAL_ENV")
    if same and venv and _inside(here, Path(venv)):
        return str(here), [
            f"this todoledger ({shown}) is on PATH only while its virtual environment is active, which "
            f"the agent's hooks never do: they name it by its absolute path (`--command` chooses another)."
        ]
    if same and agent != "codex":
        return NAME, []
    if same:
        return str(here), [
            f"Codex runs shell commands in a login shell, which sets PATH anew: its config and "
            f"instructions name todoledger as {shown} (`--command {NAME}` writes the bare name)."
        ]
    elsewhere = f"the one on PATH is {found}" if found else "none is on PATH"
    return str(here), [
        f"this todoledger ({shown}) is not on PATH ({elsewhere}): the hooks, the server and the "
        f"instructions name it by its absolute path (`--command` chooses another)."
    ]


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.absolute().is_relative_to(folder.absolute())
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.samefile(b)
    except OSError:
        return False


def runs(command: str, path: str | None) -> bool:
    """Whether the first word of `command` names an executable file (by path, or on `path`)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if not argv:
        return False
    exe = argv[0]
    if os.sep in exe:
        return os.path.isfile(exe) and os.access(exe, os.X_OK)
    return shutil.which(exe, path=path) is not None
