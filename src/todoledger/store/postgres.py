"""PostgreSQL backend (team mode) through psycopg 3.

A ledger is one schema of a database: the first schema on the connection's
search path (`public` unless the URL says `?options=-csearch_path%3Dteam`).

Writers take transaction-level advisory locks, then read and write at READ
COMMITTED. A write that touches one plan (`write(plan)`: every agent's list,
add, update, claim) takes the ledger's lock SHARED and the plan's lock
(schema, plan) exclusive: writers of two plans go side by side, and two
writers of one plan queue, so a whole-list merge (read the plan, merge in
Python, write the result) never interleaves with another of its plan.
Holding the plan's lock, a writer sees every earlier commit to its plan and
no later one can start. A cross-plan operation (`write()`: import, migrate,
copy, undo, approvals, tokens, reclaiming every plan's leases, schema
migrations) takes the ledger's lock exclusive: it waits for every plan's
writers and keeps them all out until it commits. The ledger's lock is the
one key `hashtext(schema)` it always was, so a todoledger from before
per-plan locks still excludes (and is excluded by) these writers.
SERIALIZABLE with retries would also be correct, but the service's
transaction bodies are not re-runnable (they yield to the caller, and merges
buffer events), and under contention most of the work would be thrown away
on each retry; the locks queue writers instead, in arrival order, and a wait
longer than the busy timeout is a BusyError as on SQLite. Readers take no
lock: a REPEATABLE READ snapshot.

The event feed stays gapless (`watch --since N` never skips an event) and
the tamper-evident chain stays one chain: see `PostgresStore.lock`.
"""

from __future__ import annotations

import _thread
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress

from todoledger.core.model import BusyError, ConnectionLost, LedgerError, UnavailableError
from todoledger.core.timefmt import now
from todoledger.store.migrations import MIGRATIONS, SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import psycopg

    from todoledger.store.base import Row
else:
    from todoledger.store.pgdriver import driver

    # psycopg, or in an agent's short call its stand-in over libpq (store/libpq.py):
    # the same names, so that every statement, lock and error below is the same code.
    psycopg = driver()

BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10
_TRANSLATED: dict[str, str] = {}  # `?` SQL to psycopg's, shared by every store of the process
CHANNEL = "todoledger"  # NOTIFY channel; the payload names the ledger's schema
READ_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"
NOT_UNICODE = "a text is not valid Unicode (a lone surrogate): nothing was written"

# The ready query (what `next` offers) joins items to their blockers and children.
# Planned on statistics from before a large write (autovacuum analyzes a minute
# or more later), it loops over every item for every item: `next` on a fresh plan
# takes time growing with the square of its items (see bench/bench_team.py). So a process that has added
# this many rows, plus a tenth of what the tables held when last analyzed,
# analyzes them itself after its commit.
_GROWING = ("INSERT INTO items", "INSERT INTO deps")
ANALYZE_AFTER_ROWS = 50
_growth_lock = _thread.allocate_lock()  # `threading` is an import an agent's short call need not pay
_growth: dict[str, list[int]] = {}  # ledger -> [rows added since analyzed, items then]


def redact(url: str) -> str:
    """The URL without its password (in the authority or the query)."""
    import urllib.parse  # here, not at the top: an agent's short call that says nothing needs none

    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "postgresql://(unparsable URL)"
    user = f"{parts.username}@" if parts.username else ""
    # The query stays (it may name the ledger's schema), but for anything secret.
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if "pass" not in k.lower()]
    query = f"?{urllib.parse.urlencode(kept)}" if kept else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}{query}"


# `?pgbouncer=transaction` (or `statement`): the URL goes through a pooler that hands
# each transaction to any of its server connections, where a statement prepared by
# one client exists for the next (psycopg's `_pg3_0`, DuplicatePreparedStatement):
# nothing is prepared, and nothing session-level is relied on (see `PostgresStore`).
POOLER_PARAM = "pgbouncer"
POOLER_MODES = ("transaction", "statement", "session")


def connection_args(url: str) -> tuple[str, str | None]:
    """The URL libpq reads (todoledger's own `pgbouncer` parameter taken out)
    and the pooler mode it named: "transaction", "statement", or None for a
    direct connection (or a pooler in session mode, which behaves as one)."""
    head, sep, query = url.partition("?")
    if not sep or POOLER_PARAM not in query:
        return url, None
    import urllib.parse

    kept, mode = [], None
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if urllib.parse.unquote_plus(key).strip().lower() != POOLER_PARAM:
            kept.append(part)
            continue
        mode = urllib.parse.unquote_plus(value).strip().lower()
        if mode not in POOLER_MODES:
            raise LedgerError(
                f"{redact(url)}: pgbouncer={mode!r}: expected one of {', '.join(POOLER_MODES)}"
                " (the pooler's pool_mode)"
            )
    stripped = head + ("?" + "&".join(kept) if kept else "")
    return stripped, None if mode == "session" else mode


def application_name(conninfo: str) -> str | None:
    """What `pg_stat_activity` shows for this process's connection: the writer
    (PGAPPNAME, which a hook sets to its agent's writer, else the writer of
    this process as `todoledger.identity` finds it); None where the URL names
    its own `application_name`, which wins."""
    if "application_name" in conninfo or os.environ.get("PGAPPNAME"):
        return None
    try:
        from todoledger.identity import local_writer

        name = local_writer()[:63]  # the server keeps 63 bytes (NAMEDATALEN)
        name.encode()
        return name
    except (LedgerError, UnicodeEncodeError):
        # A TODOLEDGER_WRITER the command refuses (not valid Unicode, say): the
        # command says so itself in one line, so the connection must not fail first.
        return "todoledger"


def connect_kwargs(conninfo: str, pooler: str | None, timeout: int = CONNECT_TIMEOUT_S) -> dict[str, Any]:
    """psycopg's arguments for a ledger connection: autocommit (the store opens
    its own transactions), a connect timeout, the writer as application_name,
    and, through a transaction pooler, no prepared statements."""
    kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": timeout}
    name = application_name(conninfo)
    if name:
        kwargs["application_name"] = name
    if pooler:
        kwargs["prepare_threshold"] = None
    return kwargs


def _connect_error(location: str, exc: psycopg.Error) -> LedgerError:
    """One line for a connection that failed; an outage (refused, timed out, the
    server starting or full) is an UnavailableError, a wrong password or an
    unknown database a plain refusal: waiting does not mend those."""
    message = f"{location}: cannot connect to PostgreSQL ({_first_line(exc)})"
    sqlstate = getattr(exc, "sqlstate", None) or ""
    text = str(exc).lower()
    refused_by_rule = sqlstate.startswith(("28", "3D", "42")) or any(
        m in text for m in ("password authentication failed", "does not exist", "no pg_hba.conf", "role ")
    )
    return LedgerError(message) if refused_by_rule else UnavailableError(message)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line.removeprefix("connection failed: ")


def translate(sql: str) -> str:
    """`?` placeholders to psycopg's `%s`, a literal `%` doubled; string literals untouched.
    Without `re`, whose import an agent's short call would pay (store/libpq.py)."""
    if "'" not in sql:
        return sql.replace("%", "%%").replace("?", "%s")
    out = []
    for n, part in enumerate(sql.split("'")):
        # Even parts lie outside string literals; a doubled quote inside one leaves an empty part.
        out.append(part.replace("%", "%%").replace("?", "%s") if n % 2 == 0 else part)
    return "'".join(out)


def _ddl(sql: str) -> str:
    """Text columns compare byte by byte, as in SQLite: the same order whatever the server's locale."""
    head = sql.lstrip().upper()
    if head.startswith(("CREATE TABLE", "ALTER TABLE")):
        import re

        return re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', sql)
    return sql


class PostgresStore:
    serial_key = "BIGSERIAL PRIMARY KEY"
    _location: str | None

    @property
    def location(self) -> str:
        """The URL without its password, as every message names the ledger: worked
        out when first said (urllib.parse is an import a call that says nothing
        would pay for nothing)."""
        if self._location is None:
            self._location = redact(self._given)
        return self._location

    @location.setter
    def location(self, value: str) -> None:
        self._location = value

    def __init__(
        self, url: str, *, create: bool = True, busy_ms: int = BUSY_TIMEOUT_MS, deadline: float | None = None
    ) -> None:
        """`deadline`: a time (time.monotonic) past which this store gives up on
        the server (a hook's): see `Watchdog`."""
        self._given, self._location = url, None
        self.url, self.pooler = connection_args(url)
        self.busy_ms = busy_ms
        self._watchdog: Watchdog | None = None
        self._pool: PostgresPool | None = None  # a pool's store: `borrowed`
        self._lent = False  # a pool's store holds a connection of the pool
        self.conn = self._connect(deadline)
        if deadline is not None:
            self._watchdog = Watchdog(self, deadline)
        self._sql = _TRANSLATED
        self._depth = 0
        self._scope: str | None = None  # the plan of the write transaction open now (None: the ledger)
        self._reading = False
        self._begin_pending = False
        self._borrowed = False
        self._grown = 0  # rows added to the ready query's tables in this transaction
        self._bulk = False
        # Through `_run`: a connection lost already (a killed backend) is an outage, one line.
        schema = self._run("SELECT current_schema()").fetchone()
        if schema is None or schema[0] is None:
            self.conn.close()
            raise LedgerError(f"{self.location}: the search path names no existing schema; create it first")
        self.schema = str(schema[0])
        self.create = create
        self._migrate()

    def _connect(self, deadline: float | None = None) -> psycopg.Connection[Any]:
        # No longer than the caller may wait for the ledger (a hook: 2 s, agents kill hooks soon after);
        # libpq waits 2 s at the least.
        timeout = max(2, min(CONNECT_TIMEOUT_S, round(self.busy_ms / 1000)))
        if deadline is not None:
            timeout = max(2, min(timeout, int(deadline - time.monotonic() + 0.999)))
        try:
            return psycopg.connect(self.url, **connect_kwargs(self.url, self.pooler, timeout))
        except psycopg.ProgrammingError:
            # psycopg's message quotes the URL, password and all.
            raise LedgerError(f"{self.location}: not a valid PostgreSQL URL") from None
        except psycopg.Error as exc:
            raise _connect_error(self.location, exc) from None

    def _answering(self, deadline: float | None) -> psycopg.Connection[Any]:
        """A new connection that has answered a query, for the one retry of a call whose
        connection was lost. A restart drops connections more than once: a pooler lends
        one whose server side the same restart ends a moment later, and a server that
        is starting again refuses. So this waits for an answer (pauses of 0.1 s, growing
        to 1 s) as long as the caller waits for a busy ledger, or to its deadline: the
        call itself is still run again only once."""
        limit = time.monotonic() + max(2.0, self.busy_ms / 1000)
        if deadline is not None:
            limit = min(limit, deadline)
        pause = 0.1
        while True:
            try:
                new = self._connect(deadline)
            except UnavailableError:
                new = None
            if new is not None:
                try:
                    new.execute("SELECT 1")
                    return new
                except psycopg.Error:
                    with suppress(psycopg.Error):
                        new.close()
            if time.monotonic() + pause > limit:
                raise ConnectionLost(
                    f"{self.location}: lost the connection to PostgreSQL, and no new one answered"
                )
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    @classmethod
    def borrowed(cls, conn: psycopg.Connection[Any], pool: PostgresPool) -> PostgresStore:
        """A store over a pooled connection to a ledger the pool opened (and
        migrated) already; closing it leaves the connection to the pool, and
        `give_back` returns it there."""
        self = cls.__new__(cls)
        self._pool, self._lent = pool, True
        self.url, self.location, self.busy_ms, self.create = pool.url, pool.location, pool.busy_ms, True
        self.pooler = pool.pooler
        self.conn, self.schema = conn, pool.schema
        self._sql, self._depth, self._borrowed, self._reading = _TRANSLATED, 0, True, False
        self._scope = None
        self._begin_pending = False
        self._grown, self._bulk = 0, False
        self._watchdog = None
        return self

    # schema ----------------------------------------------------------------
    def _version(self) -> int:
        found = self._run("SELECT to_regclass('schema_version')").fetchone()
        if found is None or found[0] is None:
            return 0
        row = self._run("SELECT version FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        version = self._version()
        if version > SCHEMA_VERSION:
            self.conn.close()
            raise LedgerError(
                f"{self.location} was written by a newer todoledger (schema {version}; this version"
                f" knows up to {SCHEMA_VERSION}): upgrade todoledger to use it"
            )
        if version == SCHEMA_VERSION:
            return
        if self.pooler:
            # Through a transaction pooler a session lock may be taken on one server
            # connection and released on another: the write's transaction lock
            # instead, and the version read again under it.
            self._migrate_locked()
            return
        # The lock first, then a transaction: one begun before the wait would
        # look the tables up in a catalog cache from before another opener's
        # migration committed, and migrate again.
        self._run("SELECT pg_advisory_lock(hashtext(current_schema()))")
        try:
            self._migrate_locked()
        finally:
            if not self.conn.closed:
                self._run("SELECT pg_advisory_unlock(hashtext(current_schema()))")

    def _migrate_locked(self) -> None:
        with self.write():
            version = self._version()  # another process may have migrated while we waited
            if version == 0:
                self.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                self.execute("INSERT INTO schema_version (version) VALUES (0)")
                self.execute(
                    _ddl(
                        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                    )
                )
            for name, step in MIGRATIONS[version:]:
                step(self)
                self.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, now()))
            self.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    def stamp_version(self, version: int) -> None:
        """For tests: mark the ledger as migrated by a todoledger of another version."""
        self.execute("UPDATE schema_version SET version = ?", (version,))

    def execute_script(self, statements: list[str]) -> None:
        for statement in statements:
            self.execute(_ddl(statement))

    # transactions ------------------------------------------------------------
    @contextmanager
    def write(self, plan: str | None = None) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self.conn.closed:  # lost in an earlier call: a new one, where the store may make it
            self.reconnect()
        self._run("BEGIN")
        self._depth, self._scope = 1, plan
        try:
            self._run(f"SET LOCAL lock_timeout = {int(self.busy_ms)}")
            if plan is None:
                self._take("SELECT pg_advisory_xact_lock(hashtext(current_schema()))", (), "the ledger")
            else:
                self._take(
                    "SELECT pg_advisory_xact_lock_shared(hashtext(current_schema())),"
                    " pg_advisory_xact_lock(hashtext(current_schema()), hashtext(?))",
                    (plan,),
                    f"plan {plan!r}",
                )
            yield
            # Delivered at commit, to every `watch` on this ledger, on any machine.
            self._run("SELECT pg_notify(?, current_schema())", (CHANNEL,))
        except BaseException:
            self._grown = 0
            self._rollback()
            raise
        else:
            self._run("COMMIT")
        finally:
            self._depth, self._scope = 0, None
        if self._grown:
            self._after_growth()

    def lock(self, name: str) -> None:
        """Hold the ledger-wide lock `name` until this transaction commits; a
        cross-plan transaction holds the whole ledger already.

        The feed: `events.seq` is one counter across plans, and `watch --since
        N` prints what is committed past N. With writers of several plans at
        once, a number taken early could commit after a higher one was
        printed, and the feed would skip it for good. So a transaction takes
        the lock "feed" just before it inserts its events (`Writes.flush`, the
        last thing before COMMIT) and keeps it through the commit: numbers are
        drawn, and become visible, in commit order, and a feed that has read
        event N has read every lower one that will ever exist (a rolled-back
        number is a gap that never fills, which skips nothing). The section
        is short, the insert and the commit, so plans wait for each other
        only that long. The same turn makes "the event before" of the
        tamper-evident chain the last one committed. Waiting for the lowest
        number still in flight instead would hold every feed back behind the
        slowest writer, and needs a table of transactions in flight; the short
        section costs each write one lock round trip.

        Keys are (hashtext(schema), hashtext(name)), the space of the plan
        locks: a plan whose name hashes alike makes its writers take turns
        with the feed, never deadlock (the locks are always taken in the
        order ledger, plan, named, and a backend's own locks never conflict)."""
        if self._scope is None:
            return
        self._take(
            "SELECT pg_advisory_xact_lock(hashtext(current_schema()), hashtext(?))",
            (f"todoledger:{name}",),
            f"the ledger's {name}",
        )

    def _take(self, sql: str, params: Sequence[Any], what: str) -> None:
        """Wait for a lock, at most the busy timeout."""
        try:
            self._run(sql, params)
        except psycopg.errors.LockNotAvailable:
            raise BusyError(
                f"{self.location}: another writer held {what} for {self.busy_ms / 1000:g} s; try again"
            ) from None

    def _after_growth(self) -> None:
        grown, self._grown = self._grown, 0
        if self._bulk:  # analyzed once at its end
            return
        key = f"{self.location}#{self.schema}"
        with _growth_lock:
            counts = _growth.setdefault(key, [0, 0])
            counts[0] += grown
            due = counts[0] >= ANALYZE_AFTER_ROWS + counts[1] // 10
            if due:
                counts[0] = 0
        if not due:
            return
        try:  # the write has committed: statistics that could not be taken now wait for autovacuum
            for table in ("items", "deps"):
                self._run(f'ANALYZE "{table}"')
            rows = self.query("SELECT reltuples FROM pg_class WHERE oid = 'items'::regclass")
            with _growth_lock:
                counts[1] = max(0, int(rows[0][0])) if rows else 0
        except (psycopg.Error, LedgerError):
            import logging

            logging.getLogger("todoledger").debug("ANALYZE after a large write failed", exc_info=True)

    def _rollback(self) -> None:
        if self.conn.closed:
            return
        with suppress(psycopg.Error):  # the connection is gone: the server rolled back already
            self.conn.execute("ROLLBACK")

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Commits do not wait for the WAL flush: a server crash may lose the
        last commits (never half of one); re-running an import restores them."""
        session = not self.pooler  # a pooler's next transaction may run on another server connection
        if session:
            self._run("SET synchronous_commit = off")
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            if not self.conn.closed:
                if session:
                    self._run("SET synchronous_commit = on")
                self.analyze()

    @contextmanager
    def read(self) -> Iterator[None]:
        """A REPEATABLE READ snapshot. Its BEGIN goes out with the first
        statement (`_begun`), and a read that ran none sends nothing."""
        if self._depth:
            yield
            return
        if self.conn.closed:  # lost in an earlier call: a new one, where the store may make it
            self.reconnect()
        self._depth, self._reading, self._begin_pending = 1, True, True
        try:
            yield
        except BaseException:
            if not self._begin_pending:
                self._rollback()
            raise
        else:
            if not self._begin_pending:
                self._run("COMMIT")
        finally:
            self._depth, self._reading, self._begin_pending = 0, False, False

    def _begun(self, sql: str, params: Sequence[Any] | None) -> psycopg.Cursor[Any]:
        """The read's BEGIN, then the statement: in one round trip where the
        driver pipelines (psycopg over libpq 14 or later), as `next` on
        PostgreSQL is mostly round trips (bench/bench_team.py `bench_next`).
        Not through a pooler, which is left the plain protocol."""
        self._begin_pending = False
        pipeline = getattr(self.conn, "pipeline", None)
        if pipeline is None or self.pooler or not psycopg.Pipeline.is_supported():
            self.conn.execute(READ_BEGIN)
            return self.conn.execute(sql, params)
        with pipeline():
            self.conn.execute(READ_BEGIN)
            cursor = self.conn.execute(sql, params)
        return cursor

    # statements --------------------------------------------------------------
    def _translated(self, sql: str) -> str:
        found = self._sql.get(sql)
        if found is None:
            found = self._sql[sql] = translate(sql)
        return found

    def _run(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        if sql.startswith(_GROWING):
            self._grown += 1
        try:
            if self._begin_pending:
                return self._begun(self._translated(sql) if params else sql, params or None)
            return self.conn.execute(self._translated(sql) if params else sql, params or None)
        except psycopg.OperationalError as exc:
            if isinstance(exc, psycopg.errors.LockNotAvailable):
                raise
            if self.conn.closed or exc.sqlstate is None or exc.sqlstate.startswith(("08", "57")):
                raise self._lost(exc) from None
            raise
        except psycopg.errors.InsufficientPrivilege as exc:
            raise self._not_permitted(exc) from None
        except psycopg.DataError as exc:
            raise LedgerError(f"{self.location}: PostgreSQL refused a value ({_first_line(exc)})") from None
        except UnicodeEncodeError:
            # As the SQLite store says it (a TODOLEDGER_PLAN of bytes that are not UTF-8):
            # the entry points refuse such text with its name; this is the last line of defence.
            raise LedgerError(NOT_UNICODE) from None

    def _not_permitted(self, exc: psycopg.Error) -> LedgerError:
        """One line for a statement the server's grants refuse: who, and what."""
        try:
            role = self.conn.info.user
        except psycopg.Error:
            role = "?"
        what = "write to" if self._depth and not self._reading else "read"
        return LedgerError(
            f"the role {role} may not {what} this ledger ({self.location}: {_first_line(exc)})"
        )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._run(sql, params).rowcount

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if sql.startswith(_GROWING):
            self._grown += len(rows)
        if self._begin_pending:
            self._begin_pending = False
            self._run(READ_BEGIN)
        try:
            with self.conn.cursor() as cur:
                cur.executemany(self._translated(sql), rows)
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise self._not_permitted(exc) from None
        except psycopg.DataError as exc:
            raise LedgerError(f"{self.location}: PostgreSQL refused a value ({_first_line(exc)})") from None
        except UnicodeEncodeError:
            # As the SQLite store says it (a TODOLEDGER_PLAN of bytes that are not UTF-8):
            # the entry points refuse such text with its name; this is the last line of defence.
            raise LedgerError(NOT_UNICODE) from None

    def _lost(self, exc: psycopg.Error) -> UnavailableError:
        """One line for a connection that broke: the deadline's doing (no retry: the
        caller's time is up), or the server's (ConnectionLost: a new one may work)."""
        watchdog = self._watchdog
        if watchdog is not None and watchdog.fired:
            return UnavailableError(
                f"{self.location}: no answer from PostgreSQL within the caller's deadline;"
                " the connection was closed"
            )
        return ConnectionLost(f"{self.location}: lost the connection to PostgreSQL ({_first_line(exc)})")

    def reconnect(self) -> bool:
        """A new connection in place of one the server closed (a restart, a killed
        backend), for the next transaction: a pool's store gives the broken one
        back (the pool throws it away) and borrows a checked one, waiting for the
        server as long as the pool waits for a connection. False for one its
        deadline closed (the caller's time is up), or inside a transaction. The
        server rolled back whatever the old one had open."""
        watchdog = self._watchdog
        if self._depth or (watchdog is not None and watchdog.fired):
            return False
        if self._pool is not None:
            self.give_back()
            self.conn = self._pool.lend(fresh=True)
            self._lent = True
            return True
        if self._borrowed:
            return False
        new = self._answering(watchdog.deadline if watchdog is not None else None)
        if watchdog is not None:
            watchdog.swap(new)
        else:
            old, self.conn = self.conn, new
            with suppress(psycopg.Error):
                old.close()
        return True

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return [tuple(r) for r in self._run(sql, params).fetchall()]

    # backend-specific services -------------------------------------------------
    def integrity(self) -> list[str]:
        """The server keeps its own files sound; what this ledger can check is
        its schema: the version its migrations say, every index usable. Empty
        when sound."""
        problems: list[str] = []
        applied = self.query("SELECT COUNT(*) FROM migrations")[0][0]
        version = self._version()
        if applied != version:
            problems.append(f"schema version {version} but {applied} migrations recorded")
        for (name,) in self.query(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready)"
        ):
            problems.append(f"index {name} is not valid")
        orphans = self.query(
            "SELECT COUNT(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM ops o WHERE o.op = e.op)"
        )
        if orphans[0][0]:
            problems.append(f"{orphans[0][0]} events belong to no op")
        return problems

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self.query(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
        ]

    def columns(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self.query(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                (table,),
            )
        ]

    def after_copy(self) -> None:
        """Auto-numbered keys go on after the highest copied one; the planner
        learns the copied data at once (autovacuum would take a while)."""
        for table, column in self.query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND column_default LIKE 'nextval(%'"
        ):
            self._run(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                f" GREATEST((SELECT MAX({column}) FROM {table}), 1), (SELECT MAX({column}) FROM {table}) IS NOT NULL)"
            )
        self.analyze()

    def analyze(self) -> None:
        """Plan queries for new data now, not at autovacuum's next round."""
        for table in self.tables():
            self._run(f'ANALYZE "{table}"')

    def wait_for_change(self, timeout: float) -> bool:
        """Block until a transaction commits to this ledger (any process, any
        machine: LISTEN/NOTIFY): True; or `timeout` seconds pass: False."""
        try:
            listener = self._listener()
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                for note in listener.notifies(timeout=left, stop_after=1):
                    if note.payload == self.schema:
                        return True
        except psycopg.OperationalError as exc:
            # A killed backend, a restart or a failover: the caller reconnects
            # (`todoledger watch`); the next listener is a new connection.
            found = getattr(self, "_listen_conn", None)
            if found is not None:
                found.close()
            raise UnavailableError(
                f"{self.location}: lost the connection to PostgreSQL ({_first_line(exc)})"
            ) from None
        return False

    def _listener(self) -> psycopg.Connection[Any]:
        found: psycopg.Connection[Any] | None = getattr(self, "_listen_conn", None)
        if found is None or found.closed:
            found = psycopg.connect(self.url, **connect_kwargs(self.url, self.pooler))
            found.execute(f"LISTEN {CHANNEL}")
            self._listen_conn = found
        return found

    def give_back(self) -> None:
        """A pool's store: its connection back to the pool (once; the pool resets or
        replaces a broken one). Its next use borrows another (`reconnect`)."""
        if self._pool is not None and self._lent:
            self._lent = False
            self._pool.pool.putconn(self.conn)

    def close(self) -> None:
        listener = getattr(self, "_listen_conn", None)
        if listener is not None:
            listener.close()
        if self._borrowed:
            return
        if self._watchdog is not None:
            self._watchdog.disarm(self.conn.close)
        else:
            self.conn.close()


class Watchdog:
    """A client-side deadline for one store's connection (issue 30): when it
    passes with the connection still open, the connection's socket is shut
    down, so that whatever call waits on it returns at once with a lost
    connection (an UnavailableError: a hook spools its event).

    Why a timer and not `statement_timeout`: through PgBouncer with PostgreSQL
    down, PgBouncer accepts the connection and queues the query until its own
    `query_wait_timeout` (120 s by default); the server never sees it, so no
    server-side timeout runs, and a hook hung 120 s (tests/test_hook_deadline_pg.py).
    The socket is shut down, not closed: the driver still owns the descriptor
    (and frees it in `close`), and a blocked read sees the end of the stream.

    A thread of `_thread` (`threading` is an import a hook need not pay), which
    waits on a lock that `disarm` releases; the lock `_fd` keeps the descriptor
    from being closed (and reused) while the thread shuts it down."""

    def __init__(self, store: PostgresStore, deadline: float) -> None:
        self.store, self.deadline = store, deadline
        self.fired = False
        self._armed = _thread.allocate_lock()
        self._armed.acquire()
        self._fd = _thread.allocate_lock()
        _thread.start_new_thread(self._wait, ())

    def _wait(self) -> None:
        if self._armed.acquire(timeout=max(0.0, self.deadline - time.monotonic())):
            return  # disarmed in time
        with self._fd:
            conn = self.store.conn
            if conn.closed:
                return
            self.fired = True
            try:
                fd = conn.fileno()
                import socket  # only when the deadline fires

                dup = socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM)
                try:
                    dup.shutdown(socket.SHUT_RDWR)
                finally:
                    dup.close()
            except (OSError, ValueError, psycopg.Error):
                pass  # closed meanwhile: nothing waits on it

    def swap(self, conn: psycopg.Connection[Any]) -> None:
        """The store's new connection in place of its old one, closed (`reconnect`)."""
        with self._fd:
            old, self.store.conn = self.store.conn, conn
            with suppress(psycopg.Error):
                old.close()

    def disarm(self, then: Callable[[], None]) -> None:
        """Stop the timer and run `then` (the connection's close) before it could fire."""
        with self._fd:
            if self._armed.locked():
                self._armed.release()
            then()


POOL_SIZE = 10  # connections a server opens at most to a PostgreSQL ledger
POOL_NAME = "todoledger-pool"


class PostgresPool:
    """A server's connections to one PostgreSQL ledger (psycopg_pool), so that
    requests from many agents run side by side instead of queueing on one
    connection; the ledger's own advisory lock still serialises the writers.

    A call borrows a connection for its whole length (`session`); the pool
    checks it before handing it out, so one the server dropped (a restart,
    `pg_terminate_backend`) is replaced instead of failing the call. One lost
    during a call (a restart mid-call, or between the check and the query) is
    thrown away (the server rolled its transaction back: nothing is
    half-written), and the call's store borrows another (`PostgresStore.reconnect`)
    for the one retry ledger/retry.py allows: a read always, a write by its
    route's idempotency key. When all `size` connections stay busy for the busy
    timeout, the call fails with one line saying so."""

    def __init__(self, url: str, *, size: int = POOL_SIZE, busy_ms: int = BUSY_TIMEOUT_MS) -> None:
        from psycopg_pool import ConnectionPool

        first = PostgresStore(url, busy_ms=busy_ms)  # one clear line if unreachable; migrates
        self.url, self.location, self.schema, self.busy_ms = first.url, first.location, first.schema, busy_ms
        self.pooler = first.pooler
        first.close()
        self.size = size
        import logging

        # Reconnection attempts are reported to the caller as one line, not logged as tracebacks.
        logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
        logging.getLogger("psycopg.pool").propagate = False
        # Named, so that pg_stat_activity tells a server's connections apart.
        kwargs = connect_kwargs(self.url, self.pooler) | {"application_name": POOL_NAME}
        if "application_name" in self.url:
            del kwargs["application_name"]
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=size,
            kwargs=kwargs,
            check=ConnectionPool.check_connection,
            timeout=busy_ms / 1000,
            name="todoledger",
            open=False,
        )
        self.pool.open()

    @contextmanager
    def session(self) -> Iterator[Callable[[bool], tuple[PostgresStore, str]]]:
        """A getter of this call's store: the first use borrows a connection,
        held until the call ends (or replaced, once lost: `PostgresStore.reconnect`)."""
        found: list[PostgresStore] = []

        def get(write: bool) -> tuple[PostgresStore, str]:
            if not found:
                found.append(PostgresStore.borrowed(self.lend(), self))
            return found[0], self.url

        try:
            yield get
        finally:
            if found:
                found[0].give_back()

    def lend(self, *, fresh: bool = False) -> psycopg.Connection[Any]:
        """A checked connection of the pool (`putconn` gives it back): one line
        where none comes within the busy timeout. `fresh`, after a lost connection:
        one opened after now. A restart closes every connection, but one that
        passes the pool's check may yet be closed by the same shutdown a moment
        later (its backend not yet told); so the pool drops every connection it
        holds (and each one lent now, when it comes back) and opens new ones,
        which the server accepts only once it is up again (else each broken one
        fails the pool's check in turn, and psycopg_pool waits 1, 2, 4... s
        between checks)."""
        from psycopg_pool import PoolTimeout

        drain = getattr(self.pool, "drain", None)  # psycopg_pool 3.2 and later
        if fresh and drain is not None:
            drain()
        try:
            return self.pool.getconn()
        except PoolTimeout:
            raise self._unavailable() from None

    def _unavailable(self) -> LedgerError:
        try:
            psycopg.connect(self.url, connect_timeout=2).close()
        except psycopg.Error as exc:
            return _connect_error(self.location, exc)
        return BusyError(
            f"{self.location}: all {self.size} connections of this server to PostgreSQL stayed busy for"
            f" {self.busy_ms / 1000:g} s; try again (serve --pool-size sets how many)"
        )

    def close(self) -> None:
        self.pool.close()
