"""Where the ledger lives: TODOLEDGER_DB, else the nearest `.todoledger/`
above the working directory, else the git root's `.todoledger/`.

Plain `os.path`: this runs on every hook call, and pathlib costs more to
import than the lookup itself.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DIRNAME = ".todoledger"
FILENAME = "ledger.db"


def ledger_file(cwd: str | os.PathLike[str] | None = None) -> str:
    override = os.environ.get("TODOLEDGER_DB")
    if override:
        return os.path.expanduser(override)
    start = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    for folder in _upwards(start):
        if os.path.isdir(os.path.join(folder, DIRNAME)):
            return os.path.join(folder, DIRNAME, FILENAME)
    for folder in _upwards(start):
        if os.path.exists(os.path.join(folder, ".git")):
            return os.path.join(folder, DIRNAME, FILENAME)
    return os.path.join(start, DIRNAME, FILENAME)


def ledger_path(cwd: str | os.PathLike[str] | None = None) -> Path:
    from pathlib import Path

    return Path(ledger_file(cwd))


def _upwards(start: str) -> list[str]:
    folders = [start]
    while True:
        parent = os.path.dirname(folders[-1])
        if parent == folders[-1]:
            return folders
        folders.append(parent)
