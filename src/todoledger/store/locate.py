"""Where the ledger lives: TODOLEDGER_DB, else the nearest project setting
above the working directory (`.todoledger/config.toml` or `pyproject.toml`'s
`[tool.todoledger]`, `ledger = "postgresql://..."`: a team's ledger, named
without a password), else the nearest `.todoledger/` folder, else the git
root's `.todoledger/`.

Plain `os.path`: this runs on every hook call, and pathlib costs more to
import than the lookup itself.
"""

from __future__ import annotations

import os

DIRNAME = ".todoledger"
FILENAME = "ledger.db"
CONFIG = "config.toml"
ENV = "TODOLEDGER_DB"
# The .gitignore written into a new .todoledger/ folder.
GITIGNORE = """\
# todoledger: the ledger database and its working files stay out of git.
# To keep a plan in git, commit an export instead: todoledger export > plan.jsonl
*.db
*.db-wal
*.db-shm
*.db-journal
hook.log
hook.log.1
pending/
"""


def url_scheme(target: str) -> str | None:
    """`postgresql` for `postgresql://...`; None for a file path (`C:\\x` included)."""
    scheme, sep, _ = target.partition("://")
    if sep and scheme[:1].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme):
        return scheme.lower()
    return None


def ledger_file(cwd: str | os.PathLike[str] | None = None) -> str:
    """The ledger's file, or the URL a setting names (opening refuses those it cannot serve)."""
    return ledger_source(cwd)[0]


def ledger_source(cwd: str | os.PathLike[str] | None = None) -> tuple[str, str]:
    """The ledger's file or URL, and where that came from: "TODOLEDGER_DB", the
    path of the project setting that names it, or "" (found by its folder).
    A setting that is unreadable or carries a password is one LedgerError."""
    override = os.environ.get(ENV)
    if override:
        return (override if url_scheme(override) else os.path.expanduser(override)), ENV
    start = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    for folder in _upwards(start):
        config = os.path.join(folder, DIRNAME, CONFIG)
        if os.path.isfile(config):
            found = _setting(config, folder, ())
            if found is not None:
                return found, config
        pyproject = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(pyproject):
            found = _setting(pyproject, folder, ("tool", "todoledger"))
            if found is not None:
                return found, pyproject
        if os.path.isdir(os.path.join(folder, DIRNAME)):
            return os.path.join(folder, DIRNAME, FILENAME), ""
    return os.path.join(project_root(start), DIRNAME, FILENAME), ""


def is_git_top(folder: str) -> bool:
    """Is `folder` a git work tree's top: its `.git` a repository (a folder with
    HEAD) or a file (worktrees, submodules)? An empty `.git` folder is not one:
    Codex's sandbox leaves empty `.git`, `.codex` and `.agents` folders in each
    writable root, /tmp included, and every folder under /tmp would then read as
    one project."""
    marker = os.path.join(folder, ".git")
    return os.path.isfile(marker) or os.path.exists(os.path.join(marker, "HEAD"))


def project_root(start: str) -> str:
    """The git work tree's top above `start` (`is_git_top`), else `start` itself:
    where a new ledger goes."""
    for folder in _upwards(start):
        if is_git_top(folder):
            return folder
    return start


def _setting(path: str, folder: str, table: tuple[str, ...]) -> str | None:
    """The `ledger` key of the file's table (a URL, or a file path relative to the
    project), None where the file names none."""
    from todoledger.core.model import LedgerError

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read the ledger setting ({exc.strerror})") from None
    if table and b"[tool.todoledger]" not in data:  # most pyproject.toml files: no parse
        return None
    import tomllib

    try:
        found: object = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: not valid TOML ({exc})") from None
    for key in table:
        found = found.get(key) if isinstance(found, dict) else None
    value = found.get("ledger") if isinstance(found, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise LedgerError(f"{path}: `ledger` must be a postgresql:// URL or a file path")
    value = value.strip()
    if url_scheme(value):
        if has_password(value):
            raise LedgerError(
                f"{path}: the ledger URL carries a password; a file in the repository must not:"
                " remove it and give it through PGPASSWORD, ~/.pgpass or a service file (docs/team.md)"
            )
        return value
    return os.path.join(folder, os.path.expanduser(value))


def has_password(url: str) -> bool:
    """True for a URL with a password in its authority or its query."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password:
            return True
        query = urllib.parse.parse_qsl(parts.query)
    except ValueError:
        return "password" in url.lower()
    return (
        any("pass" in k.lower() for k, _ in query) or "password=" in urllib.parse.unquote(parts.query).lower()
    )


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
