"""SQLite backend: WAL, short BEGIN IMMEDIATE writes, named migrations."""

from __future__ import annotations

# The C module itself, not the `sqlite3` package: the package adds only the default
# datetime adapters (the ledger stores text) and costs every agent call the import of
# `datetime` (see bench/bench_core.py). The classes are the same objects (`_sqlite3.Error is sqlite3.Error`).
import _sqlite3 as sqlite3
import errno
import os
import time

from todoledger.core.model import BusyError, LedgerError
from todoledger.core.scoped import contextmanager
from todoledger.core.timefmt import now
from todoledger.store.migrations import MIGRATIONS, SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    from todoledger.store.base import Row

BUSY_TIMEOUT_MS = 30_000
READ_ONLY_FS = "read-only file system: nothing was written"
NO_PERMISSION = "the ledger is read-only (no permission to write it): nothing was written"
DISK_FULL = "disk full: nothing was written"
DAMAGED = "the ledger file is damaged: run `todoledger check`"
REPLACED = "the ledger file was removed or replaced: restart"
# SQLite's primary result codes (the low byte of an extended code).
SQLITE_BUSY = 5
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
POLL_SECONDS = 0.2
BULK_WAL_PAGES = 16_384  # 64 MB of 4 KB pages between checkpoints in a bulk import


class SQLiteStore:
    serial_key = "INTEGER PRIMARY KEY"

    def __init__(
        self, path: str | os.PathLike[str] | None, *, create: bool = True, busy_ms: int = BUSY_TIMEOUT_MS
    ) -> None:
        """Open the ledger at `path`; with `create=False` a missing file is an
        empty in-memory ledger, so reading never leaves files behind. A ledger
        that cannot be written (read-only file system or no permission) opens
        read-only: reads work, writes are refused with one line."""
        self.path = os.fspath(path) if path is not None else None
        self.read_only: str | None = None  # why writes are refused, when they are
        # The file this connection opened, as (device, inode) at its path: see `_same_file`.
        self._opened: tuple[str, int, int] | None = None
        if path is None or (not create and not os.path.exists(path)):
            self.location = ":memory:"
            self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            self.location = str(path)
            target = os.fspath(path)
            try:
                if os.path.exists(target) and not _writable(target):
                    self.read_only = _why_read_only(target)
                    self.conn = _open_read_only(target, busy_ms)
                else:
                    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
                    self.conn = sqlite3.connect(
                        target, isolation_level=None, timeout=busy_ms / 1000, check_same_thread=False
                    )
                    self._pragmas(busy_ms)
                self._opened = _identity(os.path.abspath(target))
            except sqlite3.DatabaseError as exc:
                refusal = _refusal(exc, self.location, _why_read_only(target))
                raise refusal or LedgerError(f"{path}: not a usable ledger ({exc})") from None
            except OSError as exc:
                if exc.errno == errno.EROFS:
                    raise LedgerError(f"{path}: {READ_ONLY_FS}") from None
                raise LedgerError(f"{path}: cannot open the ledger ({exc.strerror})") from None
        self._depth = 0
        self.busy_ms = busy_ms
        self._migrate()

    def _pragmas(self, busy_ms: int) -> None:
        self.conn.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        # Damaged pages are caught when they are read, not trusted.
        self.conn.execute("PRAGMA cell_size_check=ON")
        # Switching to WAL writes the file: only when it is not in WAL already.
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise LedgerError(f"{self.location}: cannot switch the ledger to WAL mode (got {mode})")
        self.conn.execute("PRAGMA synchronous=FULL")

    def _migrate(self) -> None:
        try:
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            refusal = _refusal(exc, self.location, self.read_only)
            raise refusal or LedgerError(f"{self.location}: not a usable ledger ({exc})") from None
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.location} was written by a newer todoledger (schema {version}; this version"
                f" knows up to {SCHEMA_VERSION}): upgrade todoledger to use it"
            )
        if version == SCHEMA_VERSION:
            return
        with self.write():
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            if version == 0:
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
            for name, step in MIGRATIONS[version:]:
                step(self)
                self.conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, now()))
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def execute_script(self, statements: list[str]) -> None:
        for statement in statements:
            self.conn.execute(statement)

    @contextmanager
    def write(self, plan: str | None = None) -> Iterator[None]:
        """BEGIN IMMEDIATE: one writer at a time in the whole file, whatever `plan` it writes."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self.read_only:
            raise LedgerError(f"{self.location}: {self.read_only}")
        self._same_file()
        try:
            self._begin_immediate()
        except sqlite3.OperationalError as exc:
            refusal = _refusal(exc, self.location, self.read_only)
            if refusal is not None:
                raise refusal from None
            raise BusyError(
                f"{self.location}: another process held the ledger for {self.busy_ms / 1000:g} s ({exc}); try again"
            ) from None
        self._depth = 1
        try:
            yield
            # Again just before the commit: a file replaced while this write ran gets none of it
            # (the ROLLBACK below), so no write is acknowledged that the next process cannot see.
            self._same_file()
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                refusal = _refusal(exc, self.location, self.read_only)
                if refusal is not None:
                    raise refusal from None
            raise
        finally:
            self._depth = 0

    def lock(self, name: str) -> None:
        """Nothing to take: the writer already holds the whole file."""

    def _begin_immediate(self) -> None:
        """Take the write lock, waiting at most `busy_ms`, in turn with the other writers.

        SQLite's own busy handler backs off to 100 ms naps, so a writer that has
        waited long polls least often and loses the lock to newcomers again and
        again: with several processes writing one plan, one waited seconds while
        the median wait was microseconds, and on a loaded machine a writer ran
        past its busy limit and failed (see bench/bench_team.py). Here every waiter polls at the same short,
        jittered interval, so the wait is a fair draw among the waiters.
        """
        if self.location == ":memory:":
            self.conn.execute("BEGIN IMMEDIATE")
            return
        deadline = time.monotonic() + self.busy_ms / 1000
        self.conn.execute("PRAGMA busy_timeout=0")
        try:
            while True:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF == SQLITE_BUSY
                    if not busy or time.monotonic() >= deadline:
                        raise
                # 1-3 ms, different in each process: no two waiters poll in lockstep.
                time.sleep(0.001 + (time.perf_counter_ns() ^ os.getpid()) % 2000 / 1e6)
        finally:
            self.conn.execute(f"PRAGMA busy_timeout={int(self.busy_ms)}")

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes in a row (an import): commits skip the fsync, which WAL
        still makes safe against a crashed process; a power cut may lose the
        last commits, never corrupt the file. Re-running an import restores them."""
        if self.location == ":memory:":
            yield
            return
        # Checkpoints too wait: past SQLite's 1,000 pages (4 MB) one would copy the WAL into
        # the file, with two fsyncs, after nearly every batch of an import; the WAL grows to
        # BULK_WAL_PAGES instead, and what it holds is checkpointed once at the end. (A killed
        # import leaves a WAL that the next open reads: nothing in it is lost or half-applied.)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint={BULK_WAL_PAGES}")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA wal_autocheckpoint=1000")
            self.conn.execute("PRAGMA synchronous=FULL")
            if not self._depth:
                try:  # noqa: SIM105 (contextlib is kept off the agent verbs' path)
                    self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # busy readers: the next commit checkpoints

    @contextmanager
    def read(self) -> Iterator[None]:
        if self._depth:
            yield
            return
        self._same_file()
        self.execute("BEGIN")
        self._depth = 1
        try:
            yield
        except BaseException:
            # What the reader raised (a damaged page, told in one line) is the news, not the ROLLBACK.
            try:  # noqa: SIM105 (contextlib costs the agents' verbs start-up)
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        else:
            self.execute("COMMIT")
        finally:
            self._depth = 0

    def _same_file(self) -> None:
        """Refuse when the path no longer names the file this connection has open.

        A server (`serve`, `mcp`, `watch`) holds its connection for hours. When the
        file is deleted (`git clean -fdX`) or another file is renamed over it, SQLite
        goes on reading and writing the unlinked file: writes acknowledged there are
        in no file that any other process opens, and are gone at the restart. One
        stat of the path per transaction (and one more before a commit) tells it:
        a file's device and inode do not change while it stays at its path."""
        if self._opened is None:
            return
        path, dev, ino = self._opened
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise ReplacedError(f"{self.location}: {REPLACED}") from None
        except OSError:
            return  # not this check's to tell (a folder without search permission): SQLite says it
        if st.st_ino != ino or st.st_dev != dev:
            raise ReplacedError(f"{self.location}: {REPLACED}")

    # try/except inline, not a context manager: these run some ten times per write.
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            cur = self.conn.execute(sql, params)
        except (sqlite3.DatabaseError, UnicodeEncodeError) as exc:
            raise self._told(exc) from None
        return cur.lastrowid or 0

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(sql, rows)
        except (sqlite3.DatabaseError, UnicodeEncodeError) as exc:
            raise self._told(exc) from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except (sqlite3.DatabaseError, UnicodeEncodeError) as exc:
            raise self._told(exc) from None

    def _told(self, exc: sqlite3.DatabaseError | UnicodeEncodeError) -> BaseException:
        """A damaged file, a full disk or a read-only one said in one line, not a traceback;
        anything else (a bug) is raised as it is."""
        if isinstance(exc, UnicodeEncodeError):
            # The entry points refuse such text with its name; this is the last line of defence.
            return LedgerError("a text is not valid Unicode (a lone surrogate): nothing was written")
        return _refusal(exc, self.location, self.read_only) or exc

    def integrity(self) -> list[str]:
        """What SQLite finds wrong with the file itself; empty when it is sound."""
        try:
            rows = self.conn.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.DatabaseError as exc:
            return [f"the ledger file is damaged: {exc}"]
        found = [str(r[0]) for r in rows]
        return [] if found == ["ok"] else found

    def stamp_version(self, version: int) -> None:
        """For tests: mark the ledger as migrated by a todoledger of another version."""
        self.conn.execute(f"PRAGMA user_version={int(version)}")

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")]

    def after_copy(self) -> None:
        """Nothing to do: an INTEGER PRIMARY KEY goes on after the highest row."""

    def wait_for_change(self, timeout: float) -> bool:
        """SQLite tells no other process of a commit: `watch` polls the event
        sequence, and this is the pause between two looks (False: not told)."""
        time.sleep(min(timeout, POLL_SECONDS))
        return False

    def reconnect(self) -> bool:
        return False  # a file: no connection to lose

    def close(self) -> None:
        self.conn.close()


class DamagedError(LedgerError):
    """The ledger file itself is damaged (SQLite reports corruption)."""


class ReplacedError(LedgerError):
    """The ledger file this process opened was deleted, or another file now
    has its path: nothing more is read or written through this connection
    (a new process opens what is at the path now)."""


def _identity(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return path, st.st_dev, st.st_ino


def _refusal(exc: sqlite3.Error, location: str, read_only: str | None) -> LedgerError | None:
    """The one line to tell for the file-level errors a user can act on; None
    for anything else (a bug, which must stay loud)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == SQLITE_FULL or (code == SQLITE_IOERR and "full" in str(exc)):
        return LedgerError(f"{location}: {DISK_FULL}")
    if code == SQLITE_READONLY:
        return LedgerError(f"{location}: {read_only or _why_read_only(location)}")
    if code == SQLITE_CANTOPEN and location != ":memory:" and _on_read_only_fs(location):
        return LedgerError(f"{location}: {READ_ONLY_FS}")
    if code == SQLITE_CORRUPT:
        return DamagedError(f"{location}: {DAMAGED}")
    if code == SQLITE_NOTADB:
        return LedgerError(f"{location}: not a usable ledger ({exc})")
    return None


def _writable(path: str) -> bool:
    # access() also answers EROFS for root on a read-only mount, which chmod cannot show.
    folder = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK)


def _on_read_only_fs(path: str) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _why_read_only(path: str) -> str:
    return READ_ONLY_FS if _on_read_only_fs(path) else NO_PERMISSION


def _open_read_only(path: str, busy_ms: int) -> sqlite3.Connection:
    """Read-only: `mode=ro` reads a WAL ledger when its -wal and -shm files are
    there; a cleanly closed one has none and they cannot be created here, so it
    is opened immutable, which is exact when no WAL holds newer pages."""
    import urllib.parse  # here: the hook path opens writable ledgers and never needs it

    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    conn = sqlite3.connect(
        f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=busy_ms / 1000, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA user_version").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        wal = path + "-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            raise
    return sqlite3.connect(
        f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False
    )
