"""`show --json` writes its text straight from the rows (`core/itemjson.py`):
it must be, byte for byte, the JSON of `Ledger.show`, on plans with every kind
of field, and reading it as a writer must record what `show` records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import with_test_clock
from todoledger.core.ids import seeded
from todoledger.core.itemjson import ITEM_KEYS
from todoledger.core.jsontext import compact
from todoledger.ledger import Ledger


def rich_plan(lg: Ledger, tmp_path: Path) -> None:
    phase = lg.add("Phase one", writer="setup", priority="high", notes="line\nbreak\ttab")
    a = lg.add('Ästhetik \x1b[2J «quoted» "and" \\ back', writer="setup", parent=phase["id"])
    b = lg.add("Waits for a", writer="setup", depends_on=[a["id"]], estimate="2h", uses=["gpu", "db"])
    c = lg.add("Dropped prerequisite", writer="setup")
    lg.add("Waits for the dropped one", writer="setup", depends_on=[c["id"], b["id"]], needs_approval=True)
    lg.cancel(c["id"], writer="setup", reason="not needed \u2028 any more")
    lg.update(b["id"], active_form="Waiting for a", writer="setup")
    lg.start(a["id"], writer="setup")
    lg.done(a["id"], writer="setup", evidence="tests pass: 12/12 \U0001f600")
    gated = lg.add("Checked", writer="setup", priority="low")
    lg.add_check(gated["id"], f"file:{tmp_path / 'missing.md'}")
    # Completed past the item it waits for: forced, with a reason that needs escaping.
    early = lg.add("Shipped early", writer="setup", depends_on=[gated["id"]])
    lg.done(early["id"], writer="setup", force=True, force_reason='"ship it" \u2028 now')
    lg.add("Other plan", plan="other", writer="setup")
    # An agent's list drops an item, and keeps working on one a person then cancelled: contested.
    listed = {"todos": [{"content": "Agent's task", "status": "in_progress"}]}
    lg.write({"todos": [*listed["todos"], {"content": "Left out", "status": "pending"}]}, writer="agent:a")
    lg.write(listed, writer="agent:a")
    task = next(i["id"] for i in lg.show()["items"] if i["content"] == "Agent's task")
    lg.cancel(task, writer="setup", reason="not now")
    lg.write(listed, writer="agent:a")


def test_the_text_is_the_json_of_show(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.db") as lg:
        assert lg.show_json() == compact(lg.show())  # an empty plan
        rich_plan(lg, tmp_path)
        for plan in (None, "other", "nothing here"):
            assert lg.show_json(plan) == compact(lg.show(plan))
        shown = json.loads(lg.show_json())
        assert tuple(shown["items"][0]) == ITEM_KEYS
        kinds = {k for it in shown["items"] for k, v in it.items() if v not in (None, [], False)}
        assert kinds == set(ITEM_KEYS)  # every field is set somewhere: none goes untested


def test_as_a_writer_it_records_what_show_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TODOLEDGER_NOW", "2026-05-01T12:00:00Z")
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    for db in (first, second):
        with_test_clock(db)
        with seeded("itemjson"), Ledger(db) as lg:
            rich_plan(lg, tmp_path)
    with Ledger(first) as lg, Ledger(second) as other:
        text = lg.show_json(writer="agent:1")
        assert text == compact(other.show(writer="agent:1"))
        assert lg.repo.base("main", "agent:1") == other.repo.base("main", "agent:1") != {}
