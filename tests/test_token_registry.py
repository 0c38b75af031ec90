"""Tokens registered in the ledger (issue 17, scenario 1's token route): the
command line believes only a token a person registered with `todoledger token
add`, never a tokens file its environment names. Real console script in
subprocesses, a real pty for the person; on both backends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TESTER, person_env
from tests.test_identity import CLAUDE, at_terminal, cli, one_line
from todoledger.ledger import Ledger


def approvers(item: str) -> list[str]:
    with Ledger() as lg:
        return [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]


def gated_item() -> str:
    with Ledger() as lg:
        return str(lg.add("Deploy to production", needs_approval=True, writer=TESTER)["id"])


def test_a_person_at_a_terminal_registers_a_token_and_it_is_that_person(ledger_env: Path | str) -> None:
    item = gated_item()
    code, out = at_terminal(ledger_env, "token", "add", "ann")
    assert code == 0, out
    secret = out.split(": ", 1)[1].split()[0]
    assert len(secret) >= 16
    listed = cli(ledger_env, "token", "list", "--json")
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "ann" and row["role"] == "person" and secret not in listed.stdout
    approved = cli(ledger_env, "approve", item, env={"TODOLEDGER_TOKEN": secret})
    assert approved.returncode == 0, approved.stderr
    assert approvers(item) == ["cli:ann"]


def test_an_agent_cannot_register_a_token_from_any_route(ledger_env: Path | str) -> None:
    """Its shell (marker set), a script (no terminal), a terminal that inherits the
    marker, a --writer naming a person: refused in one line, nothing registered."""
    tries = [
        cli(ledger_env, "token", "add", "boss", env=CLAUDE),
        cli(ledger_env, "token", "add", "boss"),
        cli(ledger_env, "token", "add", "boss", "--writer", "cli:boss"),
    ]
    for done in tries:
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "token add" in done.stderr or "names a person" in done.stderr, done.stderr
    code, out = at_terminal(ledger_env, "token", "add", "boss", env=CLAUDE)
    assert code == 1 and "token add: a person must run it" in out, out
    with Ledger() as lg:
        assert lg.tokens() == []


def test_an_agent_token_writes_as_that_agent_shown_by_its_token(ledger_env: Path | str) -> None:
    added = cli(ledger_env, "token", "add", "ci", "--agent", "--json", env=person_env(ledger_env))
    assert added.returncode == 0, added.stderr
    secret = json.loads(added.stdout)["token"]
    made = cli(ledger_env, "add", "Nightly build", "--json", env={"TODOLEDGER_TOKEN": secret})
    assert json.loads(made.stdout)["created_by"] == "agent:ci@cli"
    item = gated_item()
    refused = cli(ledger_env, "approve", item, env={"TODOLEDGER_TOKEN": secret})
    assert refused.returncode == 1 and "not agent:ci@cli" in one_line(refused.stderr)
    assert approvers(item) == []


def test_a_removed_token_is_no_one(ledger_env: Path | str) -> None:
    env = person_env(ledger_env)
    secret = json.loads(cli(ledger_env, "token", "add", "bob", "--json", env=env).stdout)["token"]
    removed = cli(ledger_env, "token", "remove", "bob", "--json", env=env)
    assert removed.returncode == 0 and [r["name"] for r in json.loads(removed.stdout)] == ["bob"]
    gone = cli(ledger_env, "add", "x", env={"TODOLEDGER_TOKEN": secret})
    assert gone.returncode == 1 and "not a token registered in this ledger" in gone.stderr


def test_a_token_row_written_around_todoledger_is_reported(ledger_env: Path | str) -> None:
    """The agent inserts `boss person` into the tokens table with the database's own
    client: the command line then believes it (the same-user limit), and `todoledger
    check` says the row has no registration in the history."""
    from tests.test_event_chain import _sql
    from todoledger.ledger.tokens import digest

    person_env(ledger_env)  # a real registration beside it: that one is accounted for
    with Ledger() as lg:
        assert lg.check() == []
    _sql(
        ledger_env,
        "INSERT INTO tokens (hash, name, role, created_by, at) VALUES (?, ?, ?, ?, ?)",
        (digest("forged-token-0123456789"), "boss", "person", "cli:boss", "2026-01-01T00:00:00.000Z"),
    )
    checked = cli(ledger_env, "check")
    assert checked.returncode == 1
    assert "token" in checked.stdout + checked.stderr and "for boss (person) has no registration" in (
        checked.stdout + checked.stderr
    )
