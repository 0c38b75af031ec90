"""Leases on claims, the same on both backends (this module runs on SQLite
and on the real PostgreSQL server: tests/conftest.py PG_MODULES).

Times are given explicitly (`at=`): a lease expires because the ledger is
told a later time, not because the test sleeps.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from todoledger import Ledger
from todoledger.core.model import LedgerError

from .conftest import subprocess_env, todoledger_bin, with_test_clock

T0 = "2026-03-01T10:00:00.000Z"


def t(seconds: int) -> str:
    from todoledger.core.timefmt import shift

    return shift(T0, seconds)


@pytest.fixture
def lg(ledger_env: Path) -> Iterator[Ledger]:
    with_test_clock(ledger_env)  # the lease tests age leases by TODOLEDGER_NOW
    ledger = Ledger()
    ledger.write(
        {"todos": [{"content": f"Task {n}", "status": "pending"} for n in range(1, 5)]}, writer="lead"
    )
    yield ledger
    ledger.close()


def claim(lg: Ledger, writer: str, at: str, **kw: Any) -> dict[str, Any]:
    got = lg.next(claim=True, writer=writer, at=at, **kw)
    assert len(got) == 1
    return got[0]


def statuses(lg: Ledger) -> dict[str, str]:
    return {i["content"]: i["status"] for i in lg.items()}


def test_a_claim_starts_one_item_for_thirty_minutes_and_tokens_only_grow(lg: Ledger) -> None:
    a = claim(lg, "alice", T0)
    b = claim(lg, "bob", T0)
    assert (a["content"], a["status"], a["lease_expires"], a["lease_seconds"]) == (
        "Task 1",
        "in_progress",
        t(1800),
        1800,
    )
    assert b["content"] == "Task 2" and b["token"] > a["token"] > 0
    assert [(x["item"], x["holder"]) for x in lg.leases()] == [(a["id"], "alice"), (b["id"], "bob")]
    claimed = [e for e in lg.history() if e["field"] == "claimed"]
    assert [e["new"]["holder"] for e in claimed] == ["alice", "bob"]
    assert lg.check() == []


def test_lease_length_is_set_per_plan_and_per_claim(lg: Ledger) -> None:
    lg.set_lease_length(120)
    assert claim(lg, "alice", T0)["lease_expires"] == t(120)
    assert claim(lg, "bob", T0, lease=5)["lease_expires"] == t(5)
    for bad in (0, -1, 10**9, True):
        with pytest.raises(LedgerError, match="a lease lasts 1 to"):
            lg.next(claim=True, writer="carol", lease=bad)
    assert statuses(lg)["Task 3"] == "pending"  # refused claims changed nothing


def test_an_expired_lease_is_released_by_the_next_claim_and_the_old_token_is_fenced(lg: Ledger) -> None:
    first = claim(lg, "alice", T0, lease=60)
    for n in range(2, 5):  # the rest taken for good, so the released item is the one that is ready
        claim(lg, f"w{n}", T0)
    again = claim(lg, "bob", t(61))
    assert again["id"] == first["id"] and again["token"] > first["token"]
    released = [e for e in lg.history(item=first["id"]) if e["field"] == "released"]
    assert [(e["new"]["holder"], e["new"]["why"], e["writer"]) for e in released] == [
        ("alice", "expired", "bob")
    ]
    before = lg.history()
    with pytest.raises(LedgerError, match=r"^fenced: .* was claimed again by bob"):
        lg.done(first["id"], writer="alice", token=first["token"], evidence="late")
    with pytest.raises(LedgerError, match="fenced"):
        lg.renew(first["id"], writer="alice", token=first["token"])
    assert lg.history() == before  # the fenced-out holder wrote nothing
    lg.done(again["id"], writer="bob", token=again["token"], evidence="tests pass")
    assert statuses(lg)["Task 1"] == "completed"
    assert lg.check() == []


def test_any_write_by_the_holder_renews_and_renew_extends(lg: Ledger) -> None:
    a = claim(lg, "alice", T0, lease=60)
    lg.update(a["id"], writer="alice", notes="half way", at=t(50))
    assert lg.leases()[0]["expires_at"] == t(110)
    assert lg.reclaim(at=t(100)) == []
    lg.renew(a["id"], writer="alice", token=a["token"], at=t(100), lease=300)
    assert lg.leases()[0]["expires_at"] == t(400)
    # someone else's write is refused, and so does not renew alice's lease
    with pytest.raises(LedgerError, match=f"is leased to alice until {t(400)}"):
        lg.update(a["id"], writer="bob", notes="looked at it", at=t(390))
    assert lg.leases()[0]["expires_at"] == t(400)
    assert [x["item"] for x in lg.reclaim(at=t(400))] == [a["id"]]
    assert statuses(lg)["Task 1"] == "pending" and lg.leases() == []


def test_a_holder_releases_and_finishing_ends_the_lease(lg: Ledger) -> None:
    a = claim(lg, "alice", T0)
    b = claim(lg, "bob", T0)
    with pytest.raises(LedgerError, match="is alice's, not bob's"):
        lg.release(a["id"], writer="bob", token=a["token"])
    lg.release(a["id"], writer="alice", token=a["token"])
    assert statuses(lg)["Task 1"] == "pending"
    lg.done(b["id"], writer="bob", token=b["token"], evidence="done")
    assert lg.leases() == []
    whys = [e["new"]["why"] for e in lg.history() if e["field"] == "released"]
    assert whys == ["released", "completed"]
    with pytest.raises(LedgerError, match="never given"):
        lg.update(b["id"], writer="bob", token=b["token"] + 100, notes="x")
    with pytest.raises(LedgerError, match="positive whole number"):
        lg.update(b["id"], writer="bob", token=0, notes="x")
    assert lg.check() == []


def test_a_lapsed_lease_nobody_took_is_taken_back_by_its_token(lg: Ledger) -> None:
    a = claim(lg, "alice", T0, lease=10)
    assert [x["holder"] for x in lg.reclaim(at=t(20))] == ["alice"]
    lg.start(a["id"], writer="alice", token=a["token"], at=t(30))
    assert [(x["holder"], x["expires_at"]) for x in lg.leases()] == [("alice", t(40))]


def test_claim_renew_release_on_the_command_line(ledger_env: Path | str, lg: Ledger) -> None:
    # A person at the command line: alice's own token, registered in the ledger by a person.
    lg.add_token("alice", token="alice-token-0123456789", writer="cli:ann")
    env = subprocess_env(ledger_env, TODOLEDGER_TOKEN="alice-token-0123456789")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([todoledger_bin(), *args], capture_output=True, text=True, env=env)

    got = json.loads(run("next", "--claim", "--lease", "90", "--json").stdout)
    token = got[0]["token"]
    assert got[0]["lease_seconds"] == 90
    # The claim's secret, given to the claimant only, proves it the holder on later command lines.
    env["TODOLEDGER_LEASE_SECRET"] = got[0]["lease_secret"]
    renewed = run("renew", got[0]["id"], "--token", str(token), "--json")
    assert json.loads(renewed.stdout)["holder"] == "cli:alice"
    wrong = run("done", got[0]["id"], "--token", str(token + 7))
    assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1 and "never given" in wrong.stderr
    assert run("release", got[0]["id"], "--token", str(token)).returncode == 0
    assert run("reclaim", "--json").stdout.strip() == "[]"
    assert statuses(lg)["Task 1"] == "pending"


def test_mcp_plan_next_claims_renews_releases_and_fences_the_session(lg: Ledger) -> None:
    from todoledger.mcp.tools import PlanTools

    tools, rival = PlanTools(), PlanTools()
    try:
        got = tools.plan_next({"claim": True, "lease_seconds": 1}, "mcp:a:s1")["claimed"]
        assert got["token"] >= 1 and got["lease_expires"]
        renewed = tools.plan_next({"renew": got["id"], "lease_seconds": 600}, "mcp:a:s1")
        assert renewed["renewed"] == got["id"]
        assert tools.plan_next({"release": got["id"]}, "mcp:a:s1") == {"plan": "main", "released": got["id"]}
        again = tools.plan_next({"claim": True, "lease_seconds": 60}, "mcp:a:s1")["claimed"]
        assert again["id"] == got["id"] and again["token"] > got["token"]
        # Its lease lapses and another session claims the item: this session's next update is refused.
        lg.reclaim(at=t(10**8))
        theirs = rival.plan_next({"claim": True}, "mcp:b:s2")["claimed"]
        assert theirs["id"] == got["id"]
        with pytest.raises(LedgerError, match="fenced"):
            tools.plan_update({"id": got["id"], "status": "completed", "evidence": "x"}, "mcp:a:s1")
        rival.plan_update({"id": got["id"], "status": "completed", "evidence": "ok"}, "mcp:b:s2")
        with pytest.raises(LedgerError, match="no longer claimed"):
            rival.plan_next({"renew": got["id"]}, "mcp:b:s2")
    finally:
        tools.close()
        rival.close()
    assert statuses(lg)["Task 1"] == "completed"


# Leases fence every writer but the holder (issue 21): every route, both backends.
# The clock is TODOLEDGER_NOW (subprocesses and the MCP tools read it), never a sleep.


@pytest.fixture
def held(lg: Ledger, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """alice holds Task 1 until t(1800); the clock stands at t(60)."""
    got = claim(lg, "alice", T0)
    monkeypatch.setenv("TODOLEDGER_NOW", t(60))
    return got


def refusal(item: str) -> str:
    return f"{item} is leased to alice until {t(1800)}: your change is refused; a person may override it with --force"


def cli(
    ledger_env: Path | str, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env, TODOLEDGER_NOW=t(60), **env),
    )


def test_every_route_but_the_holder_is_refused_while_the_lease_is_live(
    ledger_env: Path | str, lg: Ledger, held: dict[str, Any]
) -> None:
    from todoledger.mcp.tools import PlanTools
    from todoledger.web.app import steer

    item = held["id"]
    before = lg.history()
    exported = [json.loads(line) for line in lg.export()]
    for record in exported:
        if record["id"] == item:
            record["status"] = "completed"
    for args in (
        ("done", item, "--evidence", "tests pass"),
        ("start", item),
        ("cancel", item, "--reason", "not needed"),
        ("set", item, "--priority", "high"),
        ("dep", "add", item, lg.items()[1]["id"]),
    ):
        proc = cli(ledger_env, *args)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert refusal(item) in proc.stderr, (args, proc.stderr)
    imported = cli(ledger_env, "import", stdin="".join(json.dumps(r) + "\n" for r in exported))
    assert imported.returncode == 1 and refusal(item) in imported.stderr, imported.stderr
    for body in ({"action": "status", "id": item, "value": "completed"}, {"action": "cancel", "id": item}):
        with pytest.raises(LedgerError, match=refusal(item)):
            steer(lg, body, "web:ann")
    tools = PlanTools()
    try:
        with pytest.raises(LedgerError, match=refusal(item)):
            tools.plan_update({"id": item, "status": "completed", "evidence": "x"}, "mcp:b:s2")
        with pytest.raises(LedgerError, match="a person must run it"):  # an agent's force is no override
            tools.plan_update({"id": item, "notes": "mine now", "force": True}, "mcp:b:s2")
    finally:
        tools.close()
    assert lg.history() == before  # nothing changed
    # The holder itself writes as usual.
    lg.done(item, writer="alice", evidence="tests pass", at=t(70))
    assert statuses(lg)["Task 1"] == "completed" and lg.leases() == []


def test_a_whole_list_applies_the_rest_and_leaves_the_leased_item_as_its_holder_has_it(
    lg: Ledger, held: dict[str, Any]
) -> None:
    from todoledger.mcp.tools import PlanTools

    tools = PlanTools()
    try:
        tools.todoread({"all": True}, "mcp:b:s2")  # b has seen every item: its list may drop them
        todos = [
            {"content": "Task 1", "status": "completed"},  # alice's: left as she has it
            {"content": "Task 2", "status": "in_progress"},
            {"content": "Task 5", "status": "pending"},
        ]  # Task 3 and Task 4 left out: dropped
        reply = tools.todowrite({"todos": todos}, "mcp:b:s2")
    finally:
        tools.close()
    assert reply["notices"] == [
        f"'Task 1' ({held['id']}) is leased to alice until {t(1800)}: left as alice has it"
    ]
    assert statuses(lg) == {
        "Task 1": "in_progress",
        "Task 2": "in_progress",
        "Task 3": "dropped",
        "Task 4": "dropped",
        "Task 5": "pending",
    }
    # A list that leaves the leased item out does not drop it either.
    again = lg.write({"todos": [{"content": "Task 2", "status": "completed"}]}, writer="mcp:b:s2", at=t(70))
    assert again.notices == [
        f"'Task 1' ({held['id']}) is leased to alice until {t(1800)}: left as alice has it"
    ]
    assert statuses(lg)["Task 1"] == "in_progress" and statuses(lg)["Task 2"] == "completed"
    assert lg.check() == []


def test_a_stale_holder_is_refused_through_todowrite_too(lg: Ledger) -> None:
    first = claim(lg, "mcp:a:s1", T0, lease=60)
    for n in range(2, 5):
        claim(lg, f"w{n}", T0)
    again = claim(lg, "mcp:b:s2", t(61))  # a's lease lapsed, b has the item now
    assert again["id"] == first["id"]
    late = lg.write(
        {"todos": [{"content": "Task 1", "status": "completed"}, {"content": "Task 9", "status": "pending"}]},
        writer="mcp:a:s1",
        at=t(70),
    )
    assert late.notices == [
        f"'Task 1' ({first['id']}) is leased to mcp:b:s2 until {t(61 + 1800)}: left as mcp:b:s2 has it"
    ]
    assert statuses(lg)["Task 1"] == "in_progress" and statuses(lg)["Task 9"] == "pending"
    with pytest.raises(LedgerError, match="is leased to mcp:b:s2"):
        lg.done(first["id"], writer="mcp:a:s1", evidence="late", at=t(70))


def test_a_person_forces_past_a_lease_and_it_is_recorded(
    ledger_env: Path | str, lg: Ledger, held: dict[str, Any]
) -> None:
    item = held["id"]
    agent = cli(ledger_env, "done", item, "--force", "--evidence", "x", "--writer", "codex:s9")
    assert agent.returncode == 1 and "a person must run it, not codex:s9" in agent.stderr, agent.stderr
    lg.add_token("ann", token="ann-token-0123456789abc", writer="cli:ann")
    person = cli(
        ledger_env,
        "done",
        item,
        "--force",
        "--evidence",
        "checked by hand",
        TODOLEDGER_TOKEN="ann-token-0123456789abc",
    )
    assert person.returncode == 0, person.stderr
    forced = [e for e in lg.history(item=item) if e["field"] == "forced"]
    assert [(e["writer"], e["new"]["past"], e["new"]["holder"], e["new"]["until"]) for e in forced] == [
        ("cli:ann", "lease", "alice", t(1800))
    ]
    assert statuses(lg)["Task 1"] == "completed" and lg.leases() == []  # the override ended alice's lease
    assert lg.check() == []


def test_the_hook_mirror_logs_the_leased_item_and_spools_nothing(
    ledger_env: Path | str, lg: Ledger, held: dict[str, Any]
) -> None:
    from .conftest import beside, spool_of

    event = {
        "session_id": "s7",
        "cwd": str(Path.cwd()),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {
            "todos": [
                {"content": "Task 1", "status": "completed", "activeForm": "x"},
                {"content": "Task 2", "status": "in_progress", "activeForm": "y"},
            ]
        },
    }
    proc = cli(ledger_env, "hook", "claude-code", stdin=json.dumps(event))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert statuses(lg)["Task 1"] == "in_progress" and statuses(lg)["Task 2"] == "in_progress"
    log = (beside(ledger_env) / "hook.log").read_text()
    assert (
        f"claude-code:s7: 'Task 1' ({held['id']}) is leased to alice until {t(1800)}: left as alice has it"
        in log
    )
    assert not spool_of(ledger_env).exists() or not list(spool_of(ledger_env).iterdir())
