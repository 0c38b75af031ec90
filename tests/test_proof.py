"""Proof the claimant does not control (issue 17, scenarios 4-8): who wrote a
check and who completed the item decide `verified` from `self-checked`;
typed numbers do not pass metric gates; liveness receipts age; a completion
whose gate fails is not counted as completed; checks die with `verify`."""

from __future__ import annotations

import http.server
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.conftest import subprocess_env, todoledger_bin, with_test_clock
from tests.test_mcp import call, refuse, stdio
from todoledger import Ledger, LedgerError
from todoledger.core.checkspec import cannot_fail, parse
from todoledger.core.timefmt import now, shift
from todoledger.core.view import build


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import act_as_person

    with_test_clock(ledger_env)  # type: ignore[arg-type]  # receipts are aged by TODOLEDGER_NOW
    act_as_person(ledger_env, monkeypatch)  # type: ignore[arg-type]


PERSON = "cli:ann"
AGENT = "mcp:claude-code:s1"
AGENT_SHELL = "agent-shell:claude-code:s2"  # the same principal as AGENT: agent:claude-code
OTHER_AGENT = "agent:ci@mcp:ci-runner:s9"  # a token's identity: another principal


@pytest.fixture
def lg(ledger_env: Path) -> Iterator[Ledger]:
    ledger = Ledger()
    yield ledger
    ledger.close()


def state(lg: Ledger, item: str) -> str | None:
    return next(i["verification"] for i in lg.show()["items"] if i["id"] == item)


def ready(lg: Ledger, item: str) -> bool:
    return bool(next(i["ready"] for i in lg.show()["items"] if i["id"] == item))


# Scenario 4 ------------------------------------------------------------------
def test_scenario_4_an_agents_own_check_over_stdio_mcp_is_self_checked_not_verified(
    ledger_env: Path, tmp_path: Path
) -> None:
    with Ledger() as lg:
        restart = lg.add("Verify the server restarts cleanly", writer=PERSON)["id"]
        bench = lg.add("Benchmark after the restart", depends_on=[restart], writer=PERSON)["id"]

    async def main() -> None:
        async with stdio(ledger_env, name="claude-code") as c:
            # The issue's own check: it cannot fail, so it is refused and nothing is written.
            said = await refuse(c, "plan_update", {"id": restart, "check": "cmd:echo restarted ok"})
            assert "cannot fail" in said and "bare echo" in said
            # A check that can fail, written by the agent, passes; the agent completes the item.
            added = await call(c, "plan_update", {"id": restart, "check": "cmd:test -d ."})
            done = await call(c, "plan_update", {"id": restart, "status": "completed", "evidence": "ok"})
            assert done["item"]["verification"] == "self-checked"
            assert f"todoledger trust {added['check']['id']}" in done["hint"]
            nxt = await call(c, "plan_next", {})
            assert nxt["ready"] == []  # the benchmark waits for proof, not for the agent's word
            read = await call(c, "todoread", {"all": True})
            shown = {i["id"]: i for i in read["items"]}
            assert shown[restart]["verification"] == "self-checked"

    anyio.run(main)
    with Ledger() as lg:
        assert state(lg, restart) == "self-checked" and not ready(lg, bench)
        (row,) = lg.checks([restart])
        assert row.route == "agent:claude-code" and row.principal == "agent:claude-code"
        assert row.as_dict()["approved_by"] is None
        # A person approves the agent's check: its pass now proves the claim.
        assert lg.awaiting_trust([restart], writer=PERSON) == [row]
        lg.trust([row.id], writer=PERSON)
        assert state(lg, restart) == "verified" and ready(lg, bench)
        assert lg.checks([restart])[0].as_dict()["approved_by"] == PERSON


def test_independence_is_by_principal_not_by_writer(lg: Ledger, tmp_path: Path) -> None:
    mine = lg.add("Agent writes over MCP, claims from its shell", writer=PERSON)["id"]
    lg.add_check(mine, "cmd:test -d .", writer=AGENT)
    lg.done(mine, evidence="done", writer=AGENT_SHELL)
    assert state(lg, mine) == "self-checked"
    theirs = lg.add("Another principal's check", writer=PERSON)["id"]
    lg.add_check(theirs, "cmd:test -d .", writer=OTHER_AGENT)
    lg.done(theirs, evidence="done", writer=AGENT)
    # Another agent principal's check cross-checks; only a person's verifies (issue 29).
    assert state(lg, theirs) == "cross-checked"
    person = lg.add("A person's gate", writer=PERSON)["id"]
    lg.add_check(person, "cmd:test -d .", writer=PERSON)
    lg.done(person, evidence="done", writer=AGENT)
    assert state(lg, person) == "verified"
    assert lg.checks([person])[0].route == "person"


def test_checks_that_cannot_fail_are_refused_and_history_shows_failures(lg: Ledger, tmp_path: Path) -> None:
    item = lg.add("Build the artefact")["id"]
    for spec in ("cmd:true", "cmd::", "cmd:exit 0", "cmd:printf done", "cmd:pytest -q || true"):
        with pytest.raises(LedgerError, match="cannot fail"):
            lg.add_check(item, spec, writer=AGENT)
    lg.add_check(item, "cmd:make -q && touch out.bin", writer=AGENT)
    with pytest.raises(LedgerError, match=r"writes out\.bin"):
        lg.add_check(item, "file:out.bin", writer=AGENT)
    other = lg.add("Other order")["id"]
    lg.add_check(other, "file:report.txt", writer=AGENT)
    with pytest.raises(LedgerError, match="cannot fail"):
        lg.add_check(other, "cmd:echo x > report.txt", writer=AGENT)
    assert [r.check.text() for r in lg.checks([item, other])] == [
        "cmd:make -q && touch out.bin",
        "file:report.txt",
    ]
    # Ever seen failing: the history a person's approval shows.
    lg.verify([other], cwd=str(tmp_path))
    (row,) = lg.checks([other])
    assert lg.failing_history() == {row.id: 1}
    assert cannot_fail(parse("cmd:curl -fs http://x/health")) is None


# Scenario 5 ------------------------------------------------------------------
def test_scenario_5_typed_numbers_do_not_pass_a_metric_gate(lg: Ledger) -> None:
    bench = lg.add("Benchmark 16 draft tokens", writer=PERSON)["id"]
    ship = lg.add("Ship the config", depends_on=[bench], writer=PERSON)["id"]
    lg.add_check(bench, "metric:tok_s>=82", writer=PERSON)
    # Typed numbers below the bar fail the gate; forcing past a person's gate is a person's to do.
    with pytest.raises(LedgerError, match="typed, not measured"):
        lg.done(bench, evidence="trust me", metrics={"tok_s": 9.0}, writer=AGENT)
    with pytest.raises(LedgerError, match="a person must run it"):
        lg.update(bench, status="completed", writer=AGENT, force=True, force_reason="agent insists")
    # Typed numbers that meet it read `typed`, even under a person's gate: never verified,
    # and what waits on the item does not start.
    lg.done(bench, evidence="trust me", metrics={"tok_s": 999.0}, writer=AGENT)
    assert state(lg, bench) == "typed" and not ready(lg, ship)
    assert [m["provenance"] for m in lg.metrics(bench)] == ["typed", "typed"]
    # Only a person may accept the typed number; then it reads "accepted by <person>" and opens.
    with pytest.raises(LedgerError, match="only a person"):
        lg.accept_metric(bench, "tok_s", writer=AGENT)
    accepted = lg.accept_metric(bench, "tok_s", writer=PERSON)
    assert accepted["accepted"] == 2
    lg.verify([bench])
    assert state(lg, bench) == f"accepted by {PERSON}" and ready(lg, ship)
    assert lg.metrics(bench)[0]["accepted_by"] == PERSON


def test_a_persons_typed_number_is_accepted_as_typed(lg: Ledger) -> None:
    bench = lg.add("Benchmark by hand", writer=PERSON)["id"]
    lg.add_check(bench, "metric:tok_s>=82", writer=PERSON)
    lg.done(bench, evidence="measured by hand", metrics={"tok_s": 90.0}, writer=PERSON)
    assert state(lg, bench) == f"accepted by {PERSON}"  # typed, never verified: the person's word


# Scenario 6 ------------------------------------------------------------------
class _Health(http.server.BaseHTTPRequestHandler):
    body = b"ok"

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(self.server.body)  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(body: bytes, port: int = 0) -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", port), _Health)
    server.body = body  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_scenario_6_liveness_receipts_age_and_expect_tells_servers_apart(
    lg: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(b"service-a ready") as port:
        up = lg.add("Server is up", writer=PERSON)["id"]
        bench = lg.add("Benchmark against it", depends_on=[up], writer=PERSON)["id"]
        url = f"http://127.0.0.1:{port}/health"
        lg.add_check(up, url, {"expect": "service-a", "status": 200}, writer=PERSON)
        lg.done(up, evidence="it answers", writer=AGENT)
        assert state(lg, up) == "verified" and ready(lg, bench)
        assert lg.receipts(up)[-1]["age"].endswith(" s")  # every receipt says how old it is
    # The server is stopped. Ten minutes on (a fixed clock), the receipt is stale.
    later = shift(now(), 601)
    monkeypatch.setenv("TODOLEDGER_NOW", later)
    assert state(lg, up) == "stale" and not ready(lg, bench)
    monkeypatch.delenv("TODOLEDGER_NOW")
    # Another process answers on the same port: with --expect it does not pass.
    with serving(b"some other service", port):
        lg.verify([up])
        assert state(lg, up) == "failed" and not ready(lg, bench)
    view = build(lg.show())
    assert view.counts == {"pending": 1, "claimed completed, gate failing": 1}


def test_max_age_per_check_and_port_checks_say_a_process_listens(lg: Ledger) -> None:
    item = lg.add("Cache warmed", writer=PERSON)["id"]
    lg.add_check(item, "cmd:test -d .", {"max_age": 60}, writer=PERSON)
    lg.verify([item])
    assert state(lg, item) == "verified"
    row = lg.receipts(item)[0]
    os.environ["TODOLEDGER_NOW"] = shift(row["at"], 61)
    try:
        assert state(lg, item) == "stale"
    finally:
        del os.environ["TODOLEDGER_NOW"]
    assert parse("port:127.0.0.1:8080").describe() == "a process listens on 127.0.0.1:8080"
    assert parse("port:127.0.0.1:8080").age_limit == 600.0 and parse("file:x").age_limit is None


def test_receipts_record_named_inputs_even_git_ignored_ones(
    lg: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path = tmp_path / "repo"  # beside the SQLite ledger, whose writes would dirty the tree
    tmp_path.mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("model.cfg\n")
    (tmp_path / "model.cfg").write_text("quant=fp8\n")
    item = lg.add("Config is fp8", writer=PERSON)["id"]
    monkeypatch.chdir(tmp_path)  # the person writes the check in the repo: it runs there
    lg.add_check(item, "cmd:grep -q fp8 model.cfg", writer=PERSON)
    monkeypatch.chdir(tmp_path.parent)
    lg.verify([item])
    assert state(lg, item) == "verified"
    assert "model.cfg" in lg.receipts(item)[0]["tree"]["inputs"]
    (tmp_path / "model.cfg").write_text("quant=fp8 # and bf16 too\n")  # ignored by git: no dirty hash sees it
    assert state(lg, item) == "stale"


# Scenario 7 ------------------------------------------------------------------
def test_scenario_7_a_whole_list_completion_with_a_failing_gate_is_not_counted(
    lg: Ledger, tmp_path: Path
) -> None:
    from todoledger.core.prime import render_prime

    disk = lg.add("Verify /data has space", writer=PERSON)["id"]
    lg.add("Run inference", depends_on=[disk], writer=PERSON)
    lg.add_check(disk, f"file:{tmp_path}/space-ok", writer=PERSON)
    lg.verify([disk])  # fails: no such file
    result = lg.write(
        {
            "todos": [
                {"content": "Verify /data has space", "status": "completed"},
                {"content": "Run inference", "status": "pending"},
            ]
        },
        writer="opencode:s1",
    )
    assert any("claimed completed, gate failing" in w.message for w in result.warnings)
    assert lg.get(disk)["status"] == "completed"  # what the agent said is recorded
    view = lg.view()
    assert view.counts == {"pending": 1, "claimed completed, gate failing": 1}
    assert "completed" not in view.counts and view.recent == () and [i.id for i in view.claimed] == [disk]
    assert view.summary() == "1 pending; 1 claimed completed, gate failing"
    text = render_prime(view)
    assert "Recently completed" not in text
    assert "(claimed completed, gate failing)" in text
    (tmp_path / "space-ok").write_text("")
    lg.verify([disk])
    assert lg.view().counts == {"pending": 1, "completed": 1}


# Scenario 8 ------------------------------------------------------------------
def _verify_and_kill(ledger_env: Path, tmp_path: Path, sig: signal.Signals) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [todoledger_bin(), "verify"],
        env=subprocess_env(ledger_env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_scenario_8_checks_die_with_verify(ledger_env: Path, tmp_path: Path, sig: signal.Signals) -> None:
    with Ledger() as lg:
        item = lg.add("Long check", writer=PERSON)["id"]
        # The side effect comes from a grandchild after a delay: a process the shell forked.
        lg.add_check(item, "cmd:touch started; sleep 1.5; touch happened", writer=PERSON)
    proc = _verify_and_kill(ledger_env, tmp_path, sig)
    time.sleep(3)  # longer than the check would have taken: its side effect must not come
    assert not (tmp_path / "happened").exists()
    with Ledger() as lg:
        receipts = lg.receipts(item)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL and receipts == []  # nothing could be written
    else:
        assert proc.returncode == (130 if sig == signal.SIGINT else 143)
        assert f"verify was stopped ({sig.name})" in proc.stderr.read()  # type: ignore[union-attr]
        assert [r["result"] for r in receipts] == ["error"]
        assert f"interrupted: verify was stopped ({sig.name})" in receipts[0]["output"]


def test_gate_list_says_who_wrote_each_check_and_how_old_its_receipt_is(ledger_env: Path) -> None:
    from tests.test_cli import run, run_json

    item = run_json(ledger_env, "add", "Server listens")
    added = run_json(ledger_env, "gate", "add", item["id"], "port:127.0.0.1:9", "--max-age", "5m")
    assert added["options"] == {"max_age": 300.0} and added["route"] == "person"
    listed = run(ledger_env, "gate", "list").stdout
    assert "a process listens on 127.0.0.1:9" in listed and "(by person; never ran)" in listed
    run(ledger_env, "verify", check=False)
    listed = run(ledger_env, "gate", "list").stdout
    assert re.search(r"\(by person; fails \d+ s ago\)", listed), listed
    assert run_json(ledger_env, "gate", "list")[0]["last"]["result"] == "fails"
    bad = run(ledger_env, "gate", "add", item["id"], "cmd:true", check=False)
    assert bad.returncode == 1 and "cannot fail" in bad.stderr and "Traceback" not in bad.stderr
