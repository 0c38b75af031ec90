"""Where the ledger lives: TODOLEDGER_DB, else the nearest `.todoledger/`
above the working directory, else the git root's `.todoledger/`.

Plain `os.path`: this runs on every hook call, and pathlib costs more to
import than the lookup itself.
"""

from __future__ import annotations

import os

DIRNAME = ".todoledger"
FILENAME = "ledger.db"


def url_scheme(target: str) -> str | None:
    """`postgresql` for `postgresql://...`; None for a file path (`C:\\x` included)."""
    scheme, sep, _ = target.partition("://")
    if sep and scheme[:1].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme):
        return scheme.lower()
    return None


def ledger_file(cwd: str | os.PathLike[str] | None = None) -> str:
    """The ledger's file, or the URL TODOLEDGER_DB names (opening refuses those it cannot serve)."""
    override = os.environ.get("TODOLEDGER_DB")
    if override:
        return override if url_scheme(override) else os.path.expanduser(override)
    start = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    for folder in _upwards(start):
        if os.path.isdir(os.path.join(folder, DIRNAME)):
            return os.path.join(folder, DIRNAME, FILENAME)
    for folder in _upwards(start):
        if os.path.exists(os.path.join(folder, ".git")):
            return os.path.join(folder, DIRNAME, FILENAME)
    return os.path.join(start, DIRNAME, FILENAME)


def _upwards(start: str) -> list[str]:
    folders = [start]
    while True:
        parent = os.path.dirname(folders[-1])
        if parent == folders[-1]:
            return folders
        folders.append(parent)


def spool_dir(cwd: str | None) -> str:
    """Where hook events wait that the ledger could not take (hooks/__init__.py):
    beside a ledger file; for a URL, the user's state folder, one per ledger."""
    where = ledger_file(cwd)
    if "://" in where:
        import zlib

        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        return os.path.join(state, "todoledger", f"pending-{zlib.crc32(where.encode()):08x}")
    return os.path.join(os.path.dirname(where), "pending")


def waiting(cwd: str | None) -> tuple[int, str]:
    """How many hook events wait in the spool, and its folder."""
    folder = spool_dir(cwd)
    try:
        return sum(1 for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")), folder
    except OSError:
        return 0, folder


def spooled_line(cwd: str | None) -> str | None:
    """What `show`, the board and `doctor` say while hook events wait, else None."""
    count, folder = waiting(cwd)
    if not count:
        return None
    return (
        f"{count} hook event{'s' if count != 1 else ''} wait in {folder} (the ledger was unavailable):"
        " todoledger flush"
    )
