"""MCP Tasks' rows: their queries, in portable SQL over any `Store`.

A task's row is its whole state (ledger/tasks.py says what each column means);
the events of its transitions go through `repo.Writes` in the same transaction.
JSON columns (arguments, result, error, input requests) are stored as text.
"""

from __future__ import annotations

from todoledger.core.jsontext import compact, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.store.base import Store

COLUMNS = (
    "id",
    "tool",
    "arguments",
    "principal",
    "writer",
    "plan",
    "status",
    "message",
    "created_at",
    "updated_at",
    "ttl_ms",
    "expires_at",
    "poll_ms",
    "result",
    "error",
    "input_requests",
    "cancel",
    "cwd",
    "host",
    "pid",
    "ticks",
    "beat",
    "workers",
)
JSON_COLUMNS = frozenset({"arguments", "result", "error", "input_requests"})
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM tasks"
OPEN = ("working", "input_required")


def _row(values: tuple[Any, ...]) -> dict[str, Any]:
    out = dict(zip(COLUMNS, values, strict=True))
    for name in JSON_COLUMNS:
        if out[name] is not None:
            out[name] = loads(out[name])
    out["cancel"] = bool(out["cancel"])
    return out


def _value(name: str, value: Any) -> Any:
    if name in JSON_COLUMNS and value is not None:
        return compact(value)
    if name == "cancel":
        return int(bool(value))
    return value


class TaskRepo:
    def __init__(self, store: Store) -> None:
        self.db = store

    def add(self, row: dict[str, Any]) -> None:
        names = [n for n in COLUMNS if n in row]
        self.db.execute(
            f"INSERT INTO tasks ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
            [_value(n, row[n]) for n in names],
        )

    def get(self, task_id: str) -> dict[str, Any] | None:
        rows = self.db.query(f"{_SELECT} WHERE id = ?", (task_id,))
        return _row(rows[0]) if rows else None

    def update(self, task_id: str, **fields: Any) -> None:
        unknown = set(fields) - set(COLUMNS)
        assert not unknown, unknown
        names = list(fields)
        self.db.execute(
            f"UPDATE tasks SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
            [*(_value(n, fields[n]) for n in names), task_id],
        )

    def take_lease(
        self, task_id: str, held: tuple[Any, Any], host: str, pid: int, ticks: str | None, beat: float
    ) -> bool:
        """Make (host, pid) the task's worker if its lease is still `held` (the
        (host, pid) read before, or (None, None)): one taker wins a race."""
        old_host, old_pid = held
        self.db.execute(
            "UPDATE tasks SET host = ?, pid = ?, ticks = ?, beat = ?, workers = workers + 1"
            " WHERE id = ? AND status IN ('working', 'input_required')"
            " AND COALESCE(host, '') = ? AND COALESCE(pid, 0) = ?",
            (host, pid, ticks, beat, task_id, old_host or "", old_pid or 0),
        )
        return self.holds(task_id, host, pid)

    def holds(self, task_id: str, host: str, pid: int) -> bool:
        found = self.db.query(
            "SELECT 1 FROM tasks WHERE id = ? AND host = ? AND pid = ?", (task_id, host, pid)
        )
        return bool(found)

    def beat(self, task_id: str, host: str, pid: int, beat: float) -> dict[str, Any] | None:
        """The worker's heartbeat: a row update, never an event. The row after it,
        or None when the lease is no longer this worker's."""
        self.db.execute(
            "UPDATE tasks SET beat = ? WHERE id = ? AND host = ? AND pid = ?", (beat, task_id, host, pid)
        )
        rows = self.db.query(f"{_SELECT} WHERE id = ? AND host = ? AND pid = ?", (task_id, host, pid))
        return _row(rows[0]) if rows else None

    def listing(self, statuses: tuple[str, ...] = OPEN) -> list[dict[str, Any]]:
        marks = ", ".join("?" for _ in statuses)
        rows = self.db.query(f"{_SELECT} WHERE status IN ({marks}) ORDER BY created_at, id", statuses)
        return [_row(r) for r in rows]

    def expired(self, at: str) -> list[tuple[str, str]]:
        """(id, plan) of the finished tasks kept past their time."""
        rows = self.db.query(
            "SELECT id, plan FROM tasks WHERE expires_at IS NOT NULL AND expires_at < ?", (at,)
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    def remove(self, task_id: str) -> None:
        self.db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
