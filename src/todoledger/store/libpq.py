"""The little of psycopg that `PostgresStore` uses, over the system's libpq
through ctypes: the PostgreSQL driver of the agents' hot path.

Why it exists: the agent verbs (`show --json`, `next --json`, ...) and the
hooks run as a new process on every call, and `import psycopg` cost each of
them 170-300 ms (psycopg.pq and psycopg_binary's version through
importlib.metadata, psycopg.errors and with it asyncio, typing adapters for
every type), 3x a whole call on SQLite (bench/bench_pg_call.py). This module
costs ctypes (3 ms) and loading libpq.so.5 (Debian's libpq5).

Where it is used: only in a process that opened its ledger with
`lean=True` (cli/lean.py, the hooks) before anything imported psycopg
(store/pgdriver.py decides, once per process). Everything else (the click
commands, `serve`, `mcp`, `watch`'s LISTEN, pools, `init --team`) uses
psycopg. The SQL, its transactions and locks stay in `PostgresStore`: this
module only stands in for `psycopg.connect`, `Connection.execute`,
`Cursor.fetchall/fetchone/rowcount/executemany` and psycopg's exception
classes, and it adapts values the way psycopg does (str and None as
`unknown`, int as the smallest of int2/int4/int8/numeric, float as float8,
bool as bool; results by type: integers, floats, numeric as Decimal, bool,
text). Nothing is prepared (an unnamed statement per call), which is also
what a transaction-mode pooler needs.
"""

from __future__ import annotations

import ctypes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

LIBPQ = "libpq.so.5"
CONNECTION_OK = 0
COMMAND_OK, TUPLES_OK, EMPTY_QUERY = 1, 2, 0
DIAG_SQLSTATE = ord("C")
_lib: Any = None
_fast: Any = None


def load() -> Any:
    """libpq, with the signatures used here; OSError where it is not installed."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(LIBPQ)
    ptr, char_p, int_ = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "PQconnectdbParams": (ptr, [ptr, ptr, int_]),
        "PQstatus": (int_, [ptr]),
        "PQsocket": (int_, [ptr]),
        "PQerrorMessage": (char_p, [ptr]),
        "PQfinish": (None, [ptr]),
        "PQuser": (char_p, [ptr]),
        "PQexec": (ptr, [ptr, char_p]),
        "PQexecParams": (ptr, [ptr, char_p, int_, ptr, ptr, ptr, ptr, int_]),
        "PQresultStatus": (int_, [ptr]),
        "PQresultErrorMessage": (char_p, [ptr]),
        "PQresultErrorField": (char_p, [ptr, int_]),
        "PQntuples": (int_, [ptr]),
        "PQnfields": (int_, [ptr]),
        "PQftype": (ctypes.c_uint, [ptr, int_]),
        "PQgetvalue": (char_p, [ptr, int_, int_]),
        "PQgetisnull": (int_, [ptr, int_, int_]),
        "PQcmdTuples": (char_p, [ptr]),
        "PQclear": (None, [ptr]),
        "PQconninfoParse": (ptr, [char_p, ctypes.POINTER(ctypes.c_char_p)]),
        "PQconninfoFree": (None, [ptr]),
        "PQsetNoticeProcessor": (ptr, [ptr, ptr, ptr]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    global _fast
    _fast = ctypes.CDLL(LIBPQ)  # the same library, its functions without argument converters
    _fast.PQgetvalue.restype = ctypes.c_char_p
    _fast.PQgetisnull.restype = ctypes.c_int
    _lib = lib
    return lib


# -- psycopg's exception classes, by SQLSTATE class (as psycopg.errors maps them) --------
class Error(Exception):
    sqlstate: str | None = None


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class OperationalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class DataError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


class _Errors:
    """`psycopg.errors`: the two classes `PostgresStore` tells apart by name."""

    class LockNotAvailable(OperationalError):
        pass

    class InsufficientPrivilege(ProgrammingError):
        pass

    class UniqueViolation(IntegrityError):
        pass


errors = _Errors
_BY_STATE: dict[str, type[Error]] = {
    "55P03": errors.LockNotAvailable,
    "42501": errors.InsufficientPrivilege,
    "23505": errors.UniqueViolation,
}
_BY_CLASS: dict[str, type[Error]] = {
    "08": OperationalError,
    "0A": NotSupportedError,
    "22": DataError,
    "23": IntegrityError,
    "28": OperationalError,
    "40": OperationalError,
    "53": OperationalError,
    "54": OperationalError,
    "55": OperationalError,
    "57": OperationalError,
    "58": OperationalError,
    "42": ProgrammingError,
    "3D": ProgrammingError,
    "3F": ProgrammingError,
    "20": ProgrammingError,
    "21": ProgrammingError,
    "44": ProgrammingError,
}


def _error(message: bytes | None, sqlstate: bytes | None) -> Error:
    state = sqlstate.decode() if sqlstate else None
    cls = (
        _BY_STATE.get(state or "")
        or _BY_CLASS.get((state or "")[:2])
        or (
            InternalError if state else OperationalError  # no SQLSTATE: the connection failed
        )
    )
    exc = cls((message or b"").decode("utf-8", "replace").strip())
    exc.sqlstate = state
    return exc


# -- values in and out, as psycopg adapts them ----------------------------------------
INT2, INT4, INT8, NUMERIC, FLOAT8, BOOL = 21, 23, 20, 1700, 701, 16


def _param(value: Any) -> tuple[int, bytes | None]:
    if value is None:
        return 0, None
    if isinstance(value, str):
        if "\x00" in value:  # libpq reads a C string: the text would end there, silently
            raise DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return 0, value.encode()
    if isinstance(value, bool):
        return BOOL, b"t" if value else b"f"
    if isinstance(value, int):
        if -(2**15) <= value < 2**15:
            oid = INT2
        elif -(2**31) <= value < 2**31:
            oid = INT4
        else:
            oid = INT8 if -(2**63) <= value < 2**63 else NUMERIC
        return oid, str(value).encode()
    if isinstance(value, float):
        return FLOAT8, repr(value).encode()
    raise ProgrammingError(f"cannot adapt type {type(value).__name__!r}")


def _numeric(raw: bytes) -> Any:
    from decimal import Decimal

    return Decimal(raw.decode())


def _bool(raw: bytes) -> bool:
    return raw == b"t"


# Result columns by type, from the bytes libpq gives (text format); any other type is text.
_LOADERS: dict[int, Any] = {
    20: int,
    21: int,
    23: int,
    26: int,  # oid
    700: float,
    701: float,
    1700: _numeric,
    16: _bool,
}


def placeholders(sql: str) -> str:
    """psycopg's `%s` as libpq's `$1, $2, ...`, `%%` as `%`; string literals untouched
    (`PostgresStore` translated `?` to `%s` outside them)."""
    out: list[str] = []
    n, i, end = 0, 0, len(sql)
    while i < end:
        ch = sql[i]
        if ch == "'":
            close = i + 1
            while close < end:
                if sql[close] == "'":
                    if close + 1 < end and sql[close + 1] == "'":
                        close += 2
                        continue
                    break
                close += 1
            out.append(sql[i : close + 1])
            i = close + 1
        elif ch == "%" and sql[i + 1 : i + 2] == "s":
            n += 1
            out.append(f"${n}")
            i += 2
        elif ch == "%" and sql[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


# -- the connection --------------------------------------------------------------------
class Cursor:
    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows, self.rowcount = rows, rowcount

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None


class _Info:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @property
    def user(self) -> str:
        found = load().PQuser(self._conn._pg) if self._conn._pg else None
        return found.decode() if found else "?"


class _ManyCursor:
    """`with conn.cursor() as cur: cur.executemany(sql, rows)`."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def __enter__(self) -> _ManyCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        for row in rows:
            self._conn.execute(sql, row)


class Connection:
    def __init__(self, pg: int) -> None:
        self._pg: int | None = pg
        self._sql: dict[str, bytes] = {}
        self.info = _Info(self)

    @property
    def closed(self) -> bool:
        return self._pg is None or load().PQstatus(self._pg) != CONNECTION_OK

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        lib = load()
        if self._pg is None:
            raise OperationalError("the connection is closed")
        if params:
            text = self._sql.get(sql)
            if text is None:
                text = self._sql[sql] = placeholders(sql).encode()
            adapted = [_param(p) for p in params]
            count = len(adapted)
            types = (ctypes.c_uint * count)(*(oid for oid, _ in adapted))
            values = (ctypes.c_char_p * count)(*(v for _, v in adapted))
            res = lib.PQexecParams(self._pg, text, count, types, values, None, None, 0)
        else:
            res = lib.PQexec(self._pg, sql.encode())
        if not res:
            raise _error(lib.PQerrorMessage(self._pg), None)
        try:
            status = lib.PQresultStatus(res)
            if status == TUPLES_OK:
                rows = _rows(lib, res)
                return Cursor(rows, len(rows))
            if status in (COMMAND_OK, EMPTY_QUERY):
                counted = lib.PQcmdTuples(res)
                return Cursor([], int(counted) if counted else -1)
            raise _error(lib.PQresultErrorMessage(res), lib.PQresultErrorField(res, DIAG_SQLSTATE))
        finally:
            lib.PQclear(res)

    def fileno(self) -> int:
        """The connection's socket (psycopg's `fileno`), for a deadline's watchdog."""
        if self._pg is None:
            raise OperationalError("the connection is closed")
        return int(load().PQsocket(self._pg))

    def cursor(self) -> _ManyCursor:
        return _ManyCursor(self)

    def close(self) -> None:
        if self._pg is not None:
            load().PQfinish(self._pg)
            self._pg = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rows(lib: Any, res: int) -> list[tuple[Any, ...]]:
    """Every row of a result, each value loaded by its column's type. A plan's read
    is thousands of values: libpq's PQgetvalue is called without argument
    converters (`_fast`), which costs a seventh of a call through them, and a
    column at a time through `map`, so that no Python code runs per value but
    where a value is empty (an empty text or a NULL: libpq says which)."""
    from itertools import repeat

    width, count = lib.PQnfields(res), lib.PQntuples(res)
    handle = ctypes.c_void_p(res)
    getvalue, isnull = _fast.PQgetvalue, _fast.PQgetisnull
    indexes = range(count)
    columns = []
    for c in range(width):
        load = _LOADERS.get(lib.PQftype(res, c), bytes.decode)
        raw = list(map(getvalue, repeat(handle, count), indexes, repeat(c, count)))
        if b"" in raw:
            columns.append([None if not v and isnull(handle, r, c) else load(v) for r, v in enumerate(raw)])
        else:
            columns.append(list(map(load, raw)))
    return list(zip(*columns, strict=True))


def connect(conninfo: str, **kwargs: Any) -> Connection:
    """`psycopg.connect(conninfo, autocommit=True, connect_timeout=..., application_name=...)`:
    libpq runs each statement in its own transaction unless the store begins one,
    which is psycopg's autocommit; `prepare_threshold` is moot (nothing is prepared)."""
    lib = load()
    why = ctypes.c_char_p()
    parsed = lib.PQconninfoParse(conninfo.encode(), ctypes.byref(why))
    if not parsed:
        raise ProgrammingError((why.value or b"invalid connection string").decode("utf-8", "replace"))
    lib.PQconninfoFree(parsed)
    pairs = [("dbname", conninfo), ("client_encoding", "UTF8")]
    for key in ("connect_timeout", "application_name"):
        if kwargs.get(key) is not None:
            pairs.append((key, str(kwargs[key])))
    keys = (ctypes.c_char_p * (len(pairs) + 1))(*(k.encode() for k, _ in pairs), None)
    values = (ctypes.c_char_p * (len(pairs) + 1))(*(v.encode() for _, v in pairs), None)
    pg = lib.PQconnectdbParams(keys, values, 1)
    if not pg:
        raise OperationalError("out of memory")
    if lib.PQstatus(pg) != CONNECTION_OK:
        message = lib.PQerrorMessage(pg)
        lib.PQfinish(pg)
        raise _error(b"connection failed: " + (message or b""), None)
    lib.PQsetNoticeProcessor(pg, _quiet(), None)
    return Connection(pg)


_QUIET: list[Any] = []


def _quiet() -> Any:
    """A notice processor that says nothing. libpq's own writes every notice to
    stderr: a server's NOTICE, and the FATAL a restart sends before it closes the
    connection, reached the user's screen above todoledger's own one-line error
    (issue 30), as psycopg never lets them. The errors still raise, in one line."""
    if not _QUIET:
        processor = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)(lambda _arg, _message: None)
        _QUIET.append(ctypes.cast(processor, ctypes.c_void_p))
        _QUIET.append(processor)  # kept alive: libpq holds a pointer to it
    return _QUIET[0]
