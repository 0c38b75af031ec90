"""Checks, receipts and metrics: their queries, in portable SQL over any `Store`.

The matching events (`check`, `receipt`, `metric`, `trust`, `forced`
annotations) go through `repo.Writes` in the same transaction.
"""

from __future__ import annotations

from todoledger.core.jsontext import compact, loads
from todoledger.core.model import LedgerError
from todoledger.core.verification import CheckRow, Receipt

# Not `json` (stored text is read by core/jsontext.py; only a write imports json): a read of a
# gated plan (`show --json`, `next`, SessionStart) has no other use for it (issue 30).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from todoledger.store.base import Row, Store

_COMPLETED, _IN_PROGRESS = compact("completed"), compact("in_progress")  # as stored: JSON text
_CHECK_COLUMNS = "id, plan, item, role, spec, options, trusted_hash, created_by, at, trusted_by, route, cwd, path, stand_in"
_RECEIPT_COLUMNS = "check_id, item, spec, result, code, duration_ms, output, at, asked_by, tree, env"


# (spec, options as stored) -> the parsed check and its digest: a plan's gates repeat a few
# specs, and each read of a gated plan parsed and hashed every one (issue 30: `show --json`
# of 300 gated items). A Check is immutable, so one parse serves every row that stores it.
_PARSED: dict[tuple[str, str], tuple[Any, str]] = {}


def _check(row: Row) -> CheckRow | None:
    from todoledger.core.checkspec import parse  # here: plans without checks never need it

    key = (row[4], row[5])
    found = _PARSED.get(key)
    if found is None:
        try:
            check = parse(row[4], loads(row[5]))
        except (LedgerError, ValueError):
            return None  # written by a newer version with a kind this one does not know: never run it
        if len(_PARSED) > 4096:  # a long-lived server: bounded
            _PARSED.clear()
        found = _PARSED[key] = (check, check.digest())
    check, digest = found
    trusted = row[6] is not None and row[6] == digest
    # In CheckRow's field order (id, plan, item, role, check, trusted, created_by, at,
    # trusted_by, route, cwd, path, stand_in): a gated plan's read makes one a check.
    return CheckRow(
        row[0],
        row[1],
        row[2],
        row[3],
        check,
        trusted,
        row[7],
        row[8],
        row[9] if trusted else None,
        row[10],
        row[11],
        row[12],
        bool(row[13]),
    )


def _receipt(row: Row) -> Receipt:
    return Receipt(
        check=row[0],
        item=row[1],
        spec=row[2],
        result=row[3],
        code=row[4],
        duration_ms=int(row[5]),
        output=row[6],
        at=row[7],
        by=row[8],
        tree=loads(row[9]) if row[9] else None,
        env=loads(row[10]) if row[10] else None,
    )


class CheckRepo:
    def __init__(self, store: Store) -> None:
        self.db = store

    # checks ----------------------------------------------------------------
    def add(self, row: CheckRow, *, trusted_by: str | None) -> None:
        import json

        digest = row.check.digest() if trusted_by else None
        self.db.execute(
            f"INSERT INTO checks ({_CHECK_COLUMNS}, trusted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.plan,
                row.item,
                row.role,
                row.check.text(),
                json.dumps(row.check.options(), sort_keys=True),
                digest,
                row.created_by,
                row.at,
                trusted_by,
                row.route,
                row.cwd,
                row.path,
                1 if row.stand_in else 0,
                row.at if trusted_by else None,
            ),
        )

    def clear_stand_in(self, check_id: str) -> None:
        self.db.execute("UPDATE checks SET stand_in = 0 WHERE id = ?", (check_id,))

    def remove(self, check_id: str) -> None:
        self.db.execute("DELETE FROM checks WHERE id = ?", (check_id,))

    def checks(self, plan: str, items: Sequence[str] | None = None) -> list[CheckRow]:
        sql = f"SELECT {_CHECK_COLUMNS} FROM checks WHERE plan = ?"
        params: list[Any] = [plan]
        if items is not None:
            if not items:
                return []
            sql += f" AND item IN ({','.join('?' * len(items))})"
            params += list(items)
        rows = [_check(r) for r in self.db.query(sql + " ORDER BY at, id", params)]
        return [r for r in rows if r is not None]

    def get(self, check_id: str) -> CheckRow | None:
        rows = self.db.query(f"SELECT {_CHECK_COLUMNS} FROM checks WHERE id = ?", (check_id,))
        return _check(rows[0]) if rows else None

    def any_in(self, plan: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM checks WHERE plan = ? LIMIT 1", (plan,)))

    def trust(self, check: CheckRow, by: str, at: str) -> None:
        self.db.execute(
            "UPDATE checks SET trusted_hash = ?, trusted_by = ?, trusted_at = ? WHERE id = ?",
            (check.check.digest(), by, at, check.id),
        )

    def provenance(self) -> list[tuple[str, str, str, str | None]]:
        """Every check's (id, plan, author, who trusted it), for `check`."""
        return [
            (str(r[0]), str(r[1]), str(r[2]), None if r[3] is None else str(r[3]))
            for r in self.db.query("SELECT id, plan, created_by, trusted_by FROM checks ORDER BY plan, id")
        ]

    def receipt_results(self) -> list[tuple[str, str, list[str]]]:
        """Per check, its plan and its receipts' results in the order written, for `check`."""
        out: dict[str, tuple[str, list[str]]] = {}
        for check_id, plan, result in self.db.query(
            "SELECT check_id, plan, result FROM receipts ORDER BY seq"
        ):
            out.setdefault(str(check_id), (str(plan), []))[1].append(str(result))
        return [(k, plan, results) for k, (plan, results) in out.items()]

    # receipts --------------------------------------------------------------
    def add_receipt(self, plan: str, r: Receipt) -> None:
        import json

        self.db.execute(
            f"INSERT INTO receipts ({_RECEIPT_COLUMNS}, plan) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.check,
                r.item,
                r.spec,
                r.result,
                r.code,
                r.duration_ms,
                r.output,
                r.at,
                r.by,
                json.dumps(r.tree, sort_keys=True) if r.tree is not None else None,
                json.dumps(r.env, sort_keys=True) if r.env is not None else None,
                plan,
            ),
        )

    def latest_receipts(self, plan: str) -> dict[tuple[str, str], Receipt]:
        """(check id, spec that ran) -> its latest receipt: a changed spec starts with none."""
        rows = self.db.query(
            f"SELECT {_RECEIPT_COLUMNS} FROM receipts WHERE seq IN"
            " (SELECT MAX(seq) FROM receipts WHERE plan = ? GROUP BY check_id, spec)",
            (plan,),
        )
        return {(r[0], r[2]): _receipt(r) for r in rows}

    def receipts(self, plan: str, item: str | None = None) -> list[Receipt]:
        sql = f"SELECT {_RECEIPT_COLUMNS} FROM receipts WHERE plan = ?"
        params: list[Any] = [plan]
        if item is not None:
            sql += " AND item = ?"
            params.append(item)
        return [_receipt(r) for r in self.db.query(sql + " ORDER BY seq", params)]

    # metrics ---------------------------------------------------------------
    def add_metric(
        self,
        plan: str,
        item: str,
        name: str,
        value: float,
        writer: str,
        at: str,
        *,
        provenance: str = "typed",
        check_id: str | None = None,
    ) -> int:
        """Store one value; returns its run index (1 for the first value of that name on the item).
        `provenance`: typed (a writer said so) or measured (by `check_id`'s run)."""
        rows = self.db.query("SELECT COUNT(*) FROM metrics WHERE item = ? AND name = ?", (item, name))
        run = int(rows[0][0]) + 1
        self.db.execute(
            "INSERT INTO metrics (plan, item, name, value, run, writer, at, provenance, check_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (plan, item, name, value, run, writer, at, provenance, check_id),
        )
        return run

    def metric_values(self, item: str, name: str) -> list[float]:
        return [
            float(r[0])
            for r in self.db.query(
                "SELECT value FROM metrics WHERE item = ? AND name = ? ORDER BY seq", (item, name)
            )
        ]

    def metric_runs(self, item: str, name: str) -> list[tuple[float, str, str | None, str | None, str]]:
        """(value, provenance, measuring check, accepted by, writer) of each value, oldest first."""
        return [
            (float(r[0]), r[1] or "typed", r[2], r[3], r[4])
            for r in self.db.query(
                "SELECT value, provenance, check_id, accepted_by, writer FROM metrics"
                " WHERE item = ? AND name = ? ORDER BY seq",
                (item, name),
            )
        ]

    def accept_metrics(self, item: str, name: str, by: str) -> int:
        """A person accepts the typed values of this metric on the item; returns how many."""
        rows = self.db.query(
            "SELECT COUNT(*) FROM metrics WHERE item = ? AND name = ? AND COALESCE(provenance, 'typed') = 'typed'"
            " AND accepted_by IS NULL",
            (item, name),
        )
        self.db.execute(
            "UPDATE metrics SET accepted_by = ? WHERE item = ? AND name = ?"
            " AND COALESCE(provenance, 'typed') = 'typed' AND accepted_by IS NULL",
            (by, item, name),
        )
        return int(rows[0][0])

    def metrics(self, plan: str, item: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT item, name, value, run, writer, at, provenance, check_id, accepted_by FROM metrics WHERE plan = ?"
        params: list[Any] = [plan]
        if item is not None:
            sql += " AND item = ?"
            params.append(item)
        return [
            {
                "item": r[0],
                "name": r[1],
                "value": r[2],
                "run": r[3],
                "writer": r[4],
                "at": r[5],
                "provenance": r[6] or "typed",
                **({"check": r[7]} if r[7] else {}),
                **({"accepted_by": r[8]} if r[8] else {}),
            }
            for r in self.db.query(sql + " ORDER BY seq", params)
        ]

    def completers(self, plan: str) -> dict[str, str]:
        """item -> the writer who last set it completed (the claimant of its completion)."""
        rows = self.db.query(
            "SELECT item, writer FROM events WHERE plan = ? AND field = 'status' AND new = ?"
            " AND item IS NOT NULL ORDER BY seq",
            (plan, _COMPLETED),
        )
        return {r[0]: r[1] for r in rows}

    def failure_counts(self, plan: str) -> dict[str, int]:
        """check id -> receipts that saw it fail or not run: whether a check was ever seen failing."""
        rows = self.db.query(
            "SELECT check_id, COUNT(*) FROM receipts WHERE plan = ? AND result <> 'holds' GROUP BY check_id",
            (plan,),
        )
        return {r[0]: int(r[1]) for r in rows}

    def completed_by(self, writer: str) -> list[tuple[str, str]]:
        """(plan, item) of items that `writer` or its subagents (`writer:...`) set to completed."""
        rows = self.db.query(
            "SELECT DISTINCT plan, item FROM events WHERE field = 'status' AND new = ? AND item IS NOT NULL"
            " AND (writer = ? OR substr(writer, 1, ?) = ?)",
            (_COMPLETED, writer, len(writer) + 1, writer + ":"),
        )
        return [(r[0], r[1]) for r in rows]

    def started_at(self, item: str) -> str | None:
        """When the item first went in_progress (its start), else None."""
        rows = self.db.query(
            "SELECT MIN(at) FROM events WHERE item = ? AND field = 'status' AND new = ?",
            (item, _IN_PROGRESS),
        )
        return rows[0][0] if rows and rows[0][0] else None

    # sweeps ----------------------------------------------------------------
    def add_sweep(
        self, plan: str, name: str, parent: str, definition: dict[str, Any], by: str, at: str
    ) -> None:
        import json

        self.db.execute(
            "INSERT INTO sweeps (plan, name, parent, definition, created_by, at) VALUES (?, ?, ?, ?, ?, ?)",
            (plan, name, parent, json.dumps(definition, sort_keys=True), by, at),
        )

    def sweep(self, plan: str, name: str) -> tuple[str, dict[str, Any]] | None:
        """(parent item, definition) of a sweep."""
        import json

        rows = self.db.query(
            "SELECT parent, definition FROM sweeps WHERE plan = ? AND name = ?", (plan, name)
        )
        return (rows[0][0], json.loads(rows[0][1])) if rows else None

    def sweeps_of(self, plan: str) -> list[tuple[str, str]]:
        """(name, parent item) of each sweep of a plan, oldest first."""
        return [
            (r[0], r[1])
            for r in self.db.query(
                "SELECT name, parent FROM sweeps WHERE plan = ? ORDER BY at, name", (plan,)
            )
        ]

    def add_sweep_item(
        self,
        plan: str,
        sweep: str,
        item: str,
        params: dict[str, str],
        baseline: bool,
        run_check: str,
        position: int,
    ) -> None:
        import json

        self.db.execute(
            "INSERT INTO sweep_items (plan, sweep, item, params, baseline, run_check, position)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (plan, sweep, item, json.dumps(params), int(baseline), run_check, position),
        )

    def sweep_items(self, plan: str, sweep: str) -> list[tuple[str, dict[str, str], bool, str]]:
        """(item, params, is_baseline, run check id) in combination order."""
        import json

        return [
            (r[0], json.loads(r[1]), bool(r[2]), r[3])
            for r in self.db.query(
                "SELECT item, params, baseline, run_check FROM sweep_items WHERE plan = ? AND sweep = ?"
                " ORDER BY position",
                (plan, sweep),
            )
        ]

    def sweep_repeats(self, plan: str) -> dict[str, int]:
        """item -> the repeats its sweep asks for, for every sweep combination of the plan."""
        import json

        rows = self.db.query(
            "SELECT si.item, s.definition FROM sweep_items si JOIN sweeps s"
            " ON s.plan = si.plan AND s.name = si.sweep WHERE si.plan = ?",
            (plan,),
        )
        return {r[0]: int(json.loads(r[1]).get("repeat", 1)) for r in rows}

    def sweep_approval(self, plan: str, name: str) -> tuple[str, str | None, str | None, str | None] | None:
        """(created by, approved by, approved at, approved digest) of a sweep."""
        rows = self.db.query(
            "SELECT created_by, approved_by, approved_at, approved_digest FROM sweeps WHERE plan = ? AND name = ?",
            (plan, name),
        )
        return (rows[0][0], rows[0][1], rows[0][2], rows[0][3]) if rows else None

    def approve_sweep(self, plan: str, name: str, by: str, at: str, digest: str) -> None:
        self.db.execute(
            "UPDATE sweeps SET approved_by = ?, approved_at = ?, approved_digest = ? WHERE plan = ? AND name = ?",
            (by, at, digest, plan, name),
        )

    def add_setup(
        self,
        plan: str,
        sweep: str,
        item: str,
        *,
        host: str,
        pid: int,
        ticks: str | None,
        command: str,
        log: str,
        at: str,
        by: str,
    ) -> int:
        """Record a setup that was just started; its row's key."""
        self.db.execute(
            "INSERT INTO sweep_setups (plan, sweep, item, host, pid, ticks, command, log, started_at, started_by)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (plan, sweep, item, host, pid, ticks, command, log, at, by),
        )
        rows = self.db.query(
            "SELECT MAX(seq) FROM sweep_setups WHERE plan = ? AND sweep = ? AND item = ? AND pid = ?",
            (plan, sweep, item, pid),
        )
        return int(rows[0][0])

    def setup_ready(self, seq: int, ready: dict[str, Any]) -> None:
        import json

        self.db.execute(
            "UPDATE sweep_setups SET ready = ? WHERE seq = ?", (json.dumps(ready, sort_keys=True), seq)
        )

    def end_setup(
        self, seq: int, at: str, teardown: dict[str, Any], clean: dict[str, Any] | None, outcome: str
    ) -> None:
        import json

        self.db.execute(
            "UPDATE sweep_setups SET ended_at = ?, teardown = ?, clean = ?, outcome = ? WHERE seq = ?",
            (
                at,
                json.dumps(teardown, sort_keys=True),
                json.dumps(clean, sort_keys=True) if clean is not None else None,
                outcome,
                seq,
            ),
        )

    def setups(self, plan: str, sweep: str, *, live: bool = False) -> list[dict[str, Any]]:
        """The setups a sweep started, oldest first (`live`: those never torn down)."""
        import json

        sql = (
            "SELECT seq, item, host, pid, ticks, command, log, started_at, started_by, ready, ended_at,"
            " teardown, clean, outcome FROM sweep_setups WHERE plan = ? AND sweep = ?"
        )
        if live:
            sql += " AND ended_at IS NULL"
        names = (
            "seq",
            "item",
            "host",
            "pid",
            "ticks",
            "command",
            "log",
            "started_at",
            "started_by",
            "ready",
            "ended_at",
            "teardown",
            "clean",
            "outcome",
        )
        out = []
        for r in self.db.query(sql + " ORDER BY seq", (plan, sweep)):
            row = dict(zip(names, r, strict=True))
            for k in ("ready", "teardown", "clean"):
                row[k] = json.loads(row[k]) if row[k] else None
            out.append(row)
        return out

    # the runner of a sweep (one at a time) ----------------------------------------------
    _RUNNER = ("host", "pid", "ticks", "writer", "started_at", "beat", "doing")

    def runner(self, plan: str, sweep: str) -> dict[str, Any] | None:
        """The process recorded as running the sweep, if any."""
        rows = self.db.query(
            "SELECT host, pid, ticks, writer, started_at, beat, doing FROM sweep_runners"
            " WHERE plan = ? AND sweep = ?",
            (plan, sweep),
        )
        return dict(zip(self._RUNNER, rows[0], strict=True)) if rows else None

    def set_runner(
        self,
        plan: str,
        sweep: str,
        *,
        host: str,
        pid: int,
        ticks: str | None,
        writer: str,
        at: str,
        beat: float,
    ) -> None:
        """Record this process as the sweep's runner, in place of any before it."""
        self.db.execute("DELETE FROM sweep_runners WHERE plan = ? AND sweep = ?", (plan, sweep))
        self.db.execute(
            "INSERT INTO sweep_runners (plan, sweep, host, pid, ticks, writer, started_at, beat)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (plan, sweep, host, pid, ticks, writer, at, beat),
        )

    def beat_runner(self, plan: str, sweep: str, host: str, pid: int, beat: float, doing: str | None) -> bool:
        """The runner's heartbeat (and what it is on); False when the row is no longer its own."""
        self.db.execute(
            "UPDATE sweep_runners SET beat = ?, doing = COALESCE(?, doing)"
            " WHERE plan = ? AND sweep = ? AND host = ? AND pid = ?",
            (beat, doing, plan, sweep, host, pid),
        )
        found = self.db.query(
            "SELECT 1 FROM sweep_runners WHERE plan = ? AND sweep = ? AND host = ? AND pid = ?",
            (plan, sweep, host, pid),
        )
        return bool(found)

    def drop_runner(self, plan: str, sweep: str, host: str, pid: int) -> None:
        self.db.execute(
            "DELETE FROM sweep_runners WHERE plan = ? AND sweep = ? AND host = ? AND pid = ?",
            (plan, sweep, host, pid),
        )

    def count_holds(self, check_id: str, spec: str) -> int:
        rows = self.db.query(
            "SELECT COUNT(*) FROM receipts WHERE check_id = ? AND spec = ? AND result = 'holds'",
            (check_id, spec),
        )
        return int(rows[0][0])
