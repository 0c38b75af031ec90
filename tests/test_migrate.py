"""`todoledger migrate --to`: a SQLite ledger copied into PostgreSQL and back
gives identical exports and histories, every plan and every event."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from todoledger import Ledger
from todoledger.demo import load_demo

from .conftest import subprocess_env, todoledger_bin
from .pgserver import ledger_url


def everything(lg: Ledger) -> dict[str, Any]:
    plans = [p["plan"] for p in lg.plans()]
    return {
        "plans": lg.plans(),
        **{
            plan: (list(lg.export(plan)), lg.history(plan), lg.ops(plan), lg.leases(plan), lg.show(plan))
            for plan in plans
        },
    }


def migrate(db: Path | str, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), "migrate", "--to", target], capture_output=True, text=True, env=subprocess_env(db)
    )


def test_a_round_trip_through_postgresql_gives_identical_exports_and_histories(tmp_path: Path) -> None:
    source = tmp_path / "laptop.db"
    with Ledger(source) as lg:
        load_demo(lg)
        lg.next("demo", claim=True, writer="agent-1", lease=900)
        lg.add("Write the closing note", plan="team", writer="cli:ann", notes="ünïcode ✓")
        lg.undo("team", writer="cli:ann")
        before = everything(lg)
    assert len(before) > 2
    url = ledger_url()
    there = migrate(source, url)
    assert there.returncode == 0, there.stderr
    assert "verified" in there.stdout and "events" in there.stdout
    with Ledger(url) as pg:
        assert everything(pg) == before
        pg.add(
            "Written on the team server", plan="team", writer="cli:bob"
        )  # keys go on after the copied ones
        assert pg.check() == []
        after = everything(pg)
    back = tmp_path / "back.db"
    home = migrate(url, str(back))
    assert home.returncode == 0, home.stderr
    with Ledger(back) as lg:
        assert everything(lg) == after


def test_a_copy_into_a_ledger_that_holds_plans_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", ledger_url()
    with Ledger(source) as lg:
        lg.add("Mine", writer="a")
    with Ledger(target) as lg:
        lg.add("Theirs", writer="b")
        before = everything(lg)
    refused = migrate(source, target)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "already holds a ledger" in refused.stderr
    with Ledger(target) as lg:
        assert everything(lg) == before
