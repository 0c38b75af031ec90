"""Opening a ledger: a file path (SQLite) or a `postgresql://` URL (team
mode, store/postgres.py; psycopg is imported only then). Every entry point
(CLI, hooks, MCP, the Python API) opens through `open_store`, so each
refuses other URLs the same way instead of creating a file named after them."""

from __future__ import annotations

import os

from todoledger.core.model import LedgerError
from todoledger.store.locate import DIRNAME, url_scheme

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.store.base import Store

MEMORY = ":memory:"
POSTGRES_SCHEMES = ("postgresql", "postgres")

# What stays out of git in a `.todoledger/` folder: the database and its working
# files, the hook log and the spool of events the ledger was too busy to take.
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


def open_store(target: str, *, create: bool = True, busy_ms: int | None = None) -> Store:
    """The store at `target` (":memory:" for a scratch ledger). With
    `create=False` a missing file reads as an empty ledger and nothing is
    created; the first write to a new ledger in a `.todoledger/` folder also
    writes the folder's .gitignore."""
    scheme = url_scheme(target)
    if scheme in POSTGRES_SCHEMES:
        try:
            from todoledger.store.postgres import BUSY_TIMEOUT_MS as PG_BUSY_MS
            from todoledger.store.postgres import PostgresStore
        except ImportError:
            raise LedgerError(
                "a postgresql:// ledger needs psycopg: pip install 'todoledger[postgres]'"
            ) from None

        return PostgresStore(target, create=create, busy_ms=PG_BUSY_MS if busy_ms is None else busy_ms)
    if scheme:
        # Not the URL itself: it may carry a password.
        raise LedgerError(
            f"{scheme}:// ledgers are not supported; give a file path (TODOLEDGER_DB=/path/ledger.db)"
            " or a postgresql:// URL"
        )
    from todoledger.store.sqlite import BUSY_TIMEOUT_MS, SQLiteStore

    if target == MEMORY:
        return SQLiteStore(None)
    new = create and not os.path.exists(target)
    store = SQLiteStore(target, create=create, busy_ms=BUSY_TIMEOUT_MS if busy_ms is None else busy_ms)
    if new:
        _ignore_in_git(target)
    return store


def _ignore_in_git(target: str) -> None:
    folder = os.path.dirname(os.path.abspath(target))
    if os.path.basename(folder) != DIRNAME:
        return
    path = os.path.join(folder, ".gitignore")
    if os.path.exists(path):
        return  # the user's own rules win
    try:
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(GITIGNORE)
    except OSError:
        pass  # a read-only or racing folder: the ledger works without it
