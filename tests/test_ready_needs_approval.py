"""An item that waits for a person's approval is not ready (rule 1: a plan never shows
work ready when it is not). `next` listed it and `show` flagged it `ready: true`,
while every agent's start of it was refused ("it needs a person's approval first").
Once a person approves, it is ready like any other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger

PERSON = "cli:ann"


def _setup(db: Path | str) -> tuple[str, str]:
    with Ledger(db) as lg:
        gated = lg.add("Deploy to production", needs_approval=True, writer=PERSON, priority="high")["id"]
        plain = lg.add("Write the notes", writer=PERSON, priority="low")["id"]
    return gated, plain


def _show_json(env: dict[str, str]) -> dict[str, dict[str, object]]:
    done = subprocess.run(
        [todoledger_bin(), "show", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in json.loads(done.stdout)["items"]}


def test_an_item_awaiting_approval_is_not_ready_until_a_person_approves(ledger_env: Path | str) -> None:
    gated, plain = _setup(ledger_env)
    with Ledger(ledger_env) as lg:
        assert [r["id"] for r in lg.next()] == [plain]  # the high-priority one is not next: it waits
        shown = {r["id"]: r for r in lg.show()["items"]}
        assert (shown[gated]["ready"], shown[gated]["blocked"]) == (False, False)
        assert shown[plain]["ready"] is True
        assert [r.id for r in lg.view().ready] == [plain]
        lg.approve(gated, writer=PERSON)
        assert [r["id"] for r in lg.next()] == [gated, plain]
        assert {r["id"]: r["ready"] for r in lg.show()["items"]} == {gated: True, plain: True}


def test_the_agents_show_json_agrees(ledger_env: Path | str) -> None:
    """The lean `show --json` writes its text from the rows (core/itemjson.py): the same answer."""
    gated, plain = _setup(ledger_env)
    env = subprocess_env(ledger_env, TODOLEDGER_WRITER="agent:claude-code:s1")
    rows = _show_json(env)
    assert (rows[gated]["ready"], rows[plain]["ready"]) == (False, True)
    with Ledger(ledger_env) as lg:
        assert json.loads(lg.show_json()) == lg.show()  # byte for byte the same document
        lg.approve(gated, writer=PERSON)
    assert _show_json(env)[gated]["ready"] is True


def test_a_person_may_claim_what_awaits_them_an_agent_may_not(ledger_env: Path | str) -> None:
    gated, plain = _setup(ledger_env)
    with Ledger(ledger_env) as lg:
        listed = lg.next(awaiting=True)
        assert [(r["id"], r["ready"], r.get("awaiting_approval")) for r in listed] == [
            (gated, False, True),
            (plain, True, None),
        ]
        assert lg.next(claim=True, writer="agent:codex:s1")[0]["id"] == plain
        assert lg.next(claim=True, writer=PERSON)[0]["id"] == gated  # a person's start needs no approval
