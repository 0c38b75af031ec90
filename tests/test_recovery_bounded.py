"""The recovery text (SessionStart, `prime`, compaction) and `todoread`'s compact
summary read only what they print: counts by aggregate, the open work and the
latest few finished or dropped items. A plan that grows by finished work must not
make them read more (issue 30: at 100,000 items the hook read every row, 1.8-2.3 s
and 244 MB to print 600 bytes). And they say exactly what the whole view says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from todoledger.ledger import Ledger
from todoledger.store.postgres import PostgresStore
from todoledger.store.sqlite import SQLiteStore


@pytest.fixture
def rows_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many rows the stores hand back, query by query (a pass-through count)."""
    seen: list[int] = []
    for cls in (SQLiteStore, PostgresStore):
        real = cls.query

        def counting(self: Any, sql: str, params: Any = (), real: Any = real) -> Any:
            found = real(self, sql, params)
            seen.append(len(found))
            return found

        monkeypatch.setattr(cls, "query", counting)
    yield seen


def grow(db: Path | str, finished: int) -> None:
    """`finished` more completed and dropped items, as a long session leaves them."""
    lines = [
        json.dumps({"id": f"f{k:05d}", "content": f"finished {k}", "status": "completed"})
        for k in range(finished)
    ]
    lines += [
        json.dumps({"id": f"c{k:05d}", "content": f"cancelled {k}", "status": "cancelled"})
        for k in range(finished)
    ]
    with Ledger(db) as lg:
        lg.import_jsonl(lines)


def small_plan(db: Path | str, tmp_path: Path) -> None:
    with Ledger(db) as lg:
        phase = lg.add("Phase one", writer="setup")
        first = lg.add("Build the drafter", writer="setup", parent=phase["id"])
        lg.add("Benchmark it", writer="setup", depends_on=[first["id"]], priority="high")
        gone = lg.add("Old idea", writer="setup")
        lg.add("Waits on the old idea", writer="setup", depends_on=[gone["id"]])
        lg.update(gone["id"], status="cancelled", writer="setup", reason="superseded")
        gated = lg.add("Write the report", writer="setup")
        lg.add_check(gated["id"], f"file:{tmp_path / 'report.md'}", writer="cli:setup")
        lg.update(gated["id"], status="completed", writer="cli:setup", force=True, force_reason="test setup")
        lg.update(first["id"], status="in_progress", writer="agent:1")
        # an agent's list that leaves two items out: they are dropped, not done
        lg.write(
            {
                "todos": [
                    {"content": "Keep this", "status": "pending"},
                    {"content": "Drop me", "status": "pending"},
                ]
            },
            writer="agent:2",
        )
        lg.write({"todos": [{"content": "Keep this", "status": "pending"}]}, writer="agent:2")


def test_recovery_reads_the_same_rows_however_much_is_finished(
    ledger_env: Path | str, tmp_path: Path, rows_read: list[int]
) -> None:
    db = ledger_env
    small_plan(db, tmp_path)
    grow(db, 50)
    costs = []
    for _ in range(2):
        with Ledger(db) as lg:
            rows_read.clear()
            text = lg.prime()
            costs.append(sum(rows_read))
        assert "Build the drafter" in text
        grow(db, 1500)
    assert costs[0] == costs[1], costs  # 2,900 more finished items, not one more row read
    with Ledger(db) as lg:
        rows_read.clear()
        lg.view()
        assert sum(rows_read) > 3000 > costs[1]  # the whole view does read them all


def test_recovery_text_and_compact_read_say_what_the_whole_view_says(
    ledger_env: Path | str, tmp_path: Path
) -> None:
    from todoledger.core.prime import render_prime
    from todoledger.mcp.tools import read_reply

    db = ledger_env
    small_plan(db, tmp_path)
    with Ledger(db) as lg:  # an early item, finished long ago, that had an estimate: the plan is scheduled
        early = lg.add("Estimate the run", writer="setup", estimate="2h")
        lg.update(early["id"], status="completed", writer="setup")
    grow(db, 40)
    with Ledger(db) as lg:
        whole, bounded = lg.view(), lg.recovery_view(scheduled=True)
        assert "critical_path" in read_reply(whole, False)
        assert render_prime(bounded) == render_prime(whole)
        assert bounded.counts == whole.counts
        assert read_reply(bounded, False) == read_reply(whole, False)
        text = lg.prime()
    assert "Dropped" in text and "Waits for a cancelled" in text and "gate" in text
    assert "41 completed" in text
