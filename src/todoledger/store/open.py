"""Opening a ledger: a file path (SQLite) or a `postgresql://` URL (team
mode, store/postgres.py; psycopg is imported only then). Every entry point
(CLI, hooks, MCP, the Python API) opens through `open_store`, so each
refuses other URLs the same way instead of creating a file named after them."""

from __future__ import annotations

import os

from todoledger.core.model import LedgerError
from todoledger.core.scoped import contextmanager
from todoledger.store.locate import DIRNAME, GITIGNORE, url_scheme
from todoledger.store.settings import watch_clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from todoledger.store.base import SharedStore, Store

MEMORY = ":memory:"
POSTGRES_SCHEMES = ("postgresql", "postgres")

# What stays out of git in a `.todoledger/` folder: the database and its working
# files, the hook log and the spool of events the ledger was too busy to take.


def open_store(
    target: str,
    *,
    create: bool = True,
    busy_ms: int | None = None,
    lean: bool = False,
    deadline: float | None = None,
) -> Store:
    """The store at `target` (":memory:" for a scratch ledger). With
    `create=False` a missing file reads as an empty ledger and nothing is
    created; the first write to a new ledger in a `.todoledger/` folder also
    writes the folder's .gitignore. `lean`: a short agent call (a lean verb, a
    hook), which reaches PostgreSQL through the libpq binding (store/pgdriver.py).
    `deadline` (time.monotonic): past it, a PostgreSQL connection is closed
    under whatever waits on it (a hook's 2 s; see store/postgres.py `Watchdog`);
    a SQLite file has its busy timeout."""
    scheme = url_scheme(target)
    if scheme in POSTGRES_SCHEMES:
        if lean:
            from todoledger.store.pgdriver import lean as use_lean_driver

            use_lean_driver()
        try:
            from todoledger.store.postgres import BUSY_TIMEOUT_MS as PG_BUSY_MS
            from todoledger.store.postgres import PostgresStore
        except ImportError:
            raise LedgerError(
                "a postgresql:// ledger needs psycopg: pip install 'todoledger[postgres]'"
            ) from None

        pg = PostgresStore(
            target, create=create, busy_ms=PG_BUSY_MS if busy_ms is None else busy_ms, deadline=deadline
        )
        watch_clock(pg)
        return pg
    if scheme:
        # Not the URL itself: it may carry a password.
        raise LedgerError(
            f"{scheme}:// ledgers are not supported; give a file path (TODOLEDGER_DB=/path/ledger.db)"
            " or a postgresql:// URL"
        )
    from todoledger.store.sqlite import BUSY_TIMEOUT_MS, SQLiteStore

    if target == MEMORY:
        store = SQLiteStore(None)
        watch_clock(store)
        return store
    new = create and not os.path.exists(target)
    store = SQLiteStore(target, create=create, busy_ms=BUSY_TIMEOUT_MS if busy_ms is None else busy_ms)
    if new:
        _ignore_in_git(target)
    watch_clock(store)
    return store


def create_team_ledger(url: str) -> Store:
    """A team's ledger at the PostgreSQL `url`: the schema its search path names
    first (`?options=-csearch_path%3Dteam`; `public` otherwise) created if it is
    missing, then the ledger's tables. One line for a URL with a password (it is
    written into the project), one the server refuses, or a role that may not create."""
    from todoledger.store.locate import has_password

    if url_scheme(url) not in POSTGRES_SCHEMES:
        raise LedgerError("--team takes a postgresql:// URL (postgresql://user@host/database)")
    if has_password(url):
        raise LedgerError(
            "the URL carries a password, and init writes it into the project: give the password"
            " through PGPASSWORD, ~/.pgpass or a service file instead (docs/team.md)"
        )
    try:
        import psycopg

        from todoledger.store.postgres import connect_kwargs, connection_args, redact
    except ImportError:
        raise LedgerError(
            "a postgresql:// ledger needs psycopg: pip install 'todoledger[postgres]'"
        ) from None
    conninfo, pooler = connection_args(url)
    try:
        with psycopg.connect(conninfo, **connect_kwargs(conninfo, pooler)) as conn:
            row = conn.execute(
                "SELECT current_schema(), current_setting('search_path'), current_user"
            ).fetchone()
            if row is not None and row[0] is None:
                first = str(row[1]).split(",")[0].strip()
                if first.startswith('"') and first.endswith('"'):
                    first = first[1:-1].replace('""', '"')
                if not first or first == "$user":
                    first = str(row[2])
                try:
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{first.replace(chr(34), chr(34) * 2)}"')
                except psycopg.errors.InsufficientPrivilege:
                    raise LedgerError(
                        f"the role {row[2]} may not create the schema {first} in this database:"
                        " a database owner creates it (CREATE SCHEMA) and grants it"
                    ) from None
    except psycopg.Error as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise LedgerError(f"{redact(url)}: cannot connect to PostgreSQL ({first_line})") from None
    return open_store(url)


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


def open_shared(
    where: Callable[[], str], *, pool_size: int | None = None, busy_ms: int | None = None
) -> SharedStore:
    """The ledger for a server's many threads (MCP over HTTP, the board):
    `where()` says where it is. PostgreSQL: a pool of up to `pool_size`
    connections (else TODOLEDGER_POOL_SIZE, else 10), calls run side by side.
    SQLite: one connection that calls take in turn (`OneAtATime`)."""
    target = where()
    if url_scheme(target) in POSTGRES_SCHEMES:
        size = pool_size if pool_size is not None else _pool_size_from_env()
        try:
            import psycopg_pool  # noqa: F401

            from todoledger.store.postgres import PostgresPool
        except ImportError:
            raise LedgerError(
                "a server on a postgresql:// ledger needs psycopg and psycopg_pool:"
                " pip install 'todoledger[postgres]'"
            ) from None
        if busy_ms is None:
            return PostgresPool(target, size=size)
        return PostgresPool(target, size=size, busy_ms=busy_ms)
    return OneAtATime(where, busy_ms)


def _pool_size_from_env() -> int:
    from todoledger.store.postgres import POOL_SIZE

    text = os.environ.get("TODOLEDGER_POOL_SIZE", "").strip()
    if not text:
        return POOL_SIZE
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise LedgerError(f"TODOLEDGER_POOL_SIZE={text!r}: expected a number of connections from 1 to 1000")
    return int(text)


class OneAtATime:
    """A SQLite ledger in a server: one connection, one call at a time.

    SQLite lets one writer in at a time anyway (its file lock), and a call's
    work is Python (merges, views) that the GIL runs one thread at a time, so
    a connection per thread would gain little but busy waits between a
    server's own threads; the lock queues them instead, in arrival order.
    Until the file exists, reads see an empty ledger and create nothing; the
    first write creates it (and a file another process created is picked up)."""

    def __init__(self, where: Callable[[], str], busy_ms: int | None = None) -> None:
        self._where = where
        self._busy_ms = busy_ms
        import threading  # servers only: the agent verbs open a store without it

        self._lock = threading.Lock()
        self._store: Store | None = None
        self._target = ""
        self._writable = False

    @contextmanager
    def session(self) -> Iterator[Callable[[bool], tuple[Store, str]]]:
        with self._lock:
            yield self._get

    def _get(self, write: bool) -> tuple[Store, str]:
        if self._store is not None and self._writable:
            return self._store, self._target
        path = self._where()
        if write or os.path.exists(path):
            if self._store is not None:
                self._store.close()
            self._store, self._target, self._writable = open_store(path, busy_ms=self._busy_ms), path, True
        elif self._store is None:
            self._store, self._target = open_store(path, create=False, busy_ms=self._busy_ms), path
        return self._store, self._target

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
                self._writable = False
