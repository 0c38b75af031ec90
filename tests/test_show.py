"""`show PLAN` as `report PLAN` takes it, `show ID` for one item in full, and the
refusals around them: a plan named like an item id, a path that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import run, run_json
from todoledger import Ledger, LedgerError


def test_show_takes_the_plan_as_report_does(ledger_env: Path) -> None:
    run(ledger_env, "add", "Train the drafter", "--plan", "campaign")
    run(ledger_env, "add", "Something else")  # plan main
    assert run(ledger_env, "show", "campaign").stdout == run(ledger_env, "show", "--plan", "campaign").stdout
    assert run_json(ledger_env, "show", "campaign")["plan"] == "campaign"
    assert "Train the drafter" in run(ledger_env, "report", "campaign").stdout
    missing = run(ledger_env, "show", "campain", check=False)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == "Error: no plan 'campain' in the ledger (plans: campaign, main)"


def test_show_id_shows_one_item_in_full(ledger_env: Path) -> None:
    wait = run_json(ledger_env, "add", "Wait for the server", "--plan", "p")["id"]
    bench = run_json(ledger_env, "add", "Benchmark 16 draft tokens", "--plan", "p", "--depends-on", wait)[
        "id"
    ]
    run(ledger_env, "gate", "add", bench, "file:results.json", "--plan", "p", person=True)
    run(ledger_env, "start", wait, "--plan", "p")
    run(ledger_env, "done", wait, "--plan", "p", "--evidence", "GET /health 200")
    text = run(ledger_env, "show", bench, "--plan", "p").stdout.splitlines()
    assert text[0] == f"{bench}  ○ pending  [medium]  Benchmark 16 draft tokens"
    assert f"waits for: {wait} Wait for the server (completed)" in text
    assert "checks:" in text and any("gate file:results.json" in ln and "never ran" in ln for ln in text)
    assert text[text.index("history:") + 1].split("  ")[2] == "added 'Benchmark 16 draft tokens' [pending]"
    done = run(ledger_env, "show", wait, "--plan", "p").stdout
    assert "evidence: GET /health 200" in done and "in_progress → completed" in done
    assert f"waited on by: {bench} Benchmark 16 draft tokens (pending)" in done
    doc = run_json(ledger_env, "show", wait, "--plan", "p")
    assert doc["item"]["id"] == wait and doc["waited_on_by"] == [
        {"id": bench, "content": "Benchmark 16 draft tokens", "status": "pending"}
    ]
    assert [e["field"] for e in doc["history"]] == ["created", "status", "status", "evidence"]
    # An id of the current plan (TODOLEDGER_PLAN, else main): outside it, it is neither.
    outside = run(ledger_env, "show", wait, check=False)
    assert (
        outside.returncode == 1
        and f"no item {wait!r} in plan 'main', and no plan named {wait!r}" in outside.stderr
    )


@pytest.mark.parametrize("name", ["abc123", "search", "7g1mw2"])
def test_a_new_plan_named_like_an_item_id_is_refused_and_nothing_written(ledger_env: Path, name: str) -> None:
    proc = run(ledger_env, "add", "x", "--plan", name, check=False)
    assert proc.returncode == 1 and "has the form of an item id" in proc.stderr
    with Ledger(ledger_env) as lg:
        with pytest.raises(LedgerError, match="form of an item id"):
            lg.write({"todos": [{"content": "y", "status": "pending"}]}, plan=name, writer="opencode:s")
        with pytest.raises(LedgerError, match="form of an item id"):
            lg.record_refused("refused: x", plan=name, writer="opencode:s")
        assert name not in [p["plan"] for p in lg.plans()]
    # Not an id's form: a plan like any other (i, l, o and u are never in an id; nor capitals, nor 7 characters).
    for fine in ("deploy", "ABC123", "abc1234"):
        run(ledger_env, "add", "x", "--plan", fine)


def test_ingest_and_stats_refuse_a_path_that_does_not_exist(ledger_env: Path, tmp_path: Path) -> None:
    for command in ("ingest", "stats"):
        proc = run(ledger_env, command, str(tmp_path / "nope"), check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert (
            proc.stderr.strip() == f"Error: {tmp_path / 'nope'}: no such file or folder; nothing was imported"
        )
    with Ledger(ledger_env, create=False) as lg:
        assert lg.plans() == []


def test_stats_names_each_finding_as_report_does(ledger_env: Path) -> None:
    from tests.conftest import PUBLIC_TRANSCRIPTS

    out = run(ledger_env, "stats", str(PUBLIC_TRANSCRIPTS)).stdout
    assert "completed without evidence" in out and "completed-without-evidence" not in out
