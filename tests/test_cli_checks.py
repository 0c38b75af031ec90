"""The real `todoledger` executable: assume, gates on done, verify, trust, metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_checks_run import Health
from tests.test_cli import run, run_json


@pytest.fixture
def health() -> Iterator[Health]:
    server = Health()
    yield server
    server.stop()


def one_line_error(proc: object) -> str:
    stderr = proc.stderr  # type: ignore[attr-defined]
    assert proc.returncode == 1, stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    return str(stderr)


def test_bad_done_when_adds_nothing(ledger_env: Path) -> None:
    for spec in ("disk:/x>=lots", "port:host", "cmd:"):
        err = one_line_error(run(ledger_env, "add", "Verify /data", "--done-when", spec, check=False))
        assert err.startswith("Error: bad check")
    assert run_json(ledger_env, "show")["items"] == []
    assert run_json(ledger_env, "history") == []


def test_done_runs_the_gate_and_shows_its_output(ledger_env: Path, tmp_path: Path) -> None:
    item = run_json(ledger_env, "add", "Write results", "--done-when", "cmd:cat results.txt")
    assert item["gate"]["spec"] == "cmd:cat results.txt"
    err = one_line_error(run(ledger_env, "done", item["id"], "--evidence", "trust me", check=False))
    assert err.startswith(f"Error: {item['id']} not completed: gate cmd:cat results.txt fails (1):")
    assert "No such file" in err
    assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"
    (tmp_path / "results.txt").write_text("tok_s 60\n")
    done = run_json(ledger_env, "done", item["id"], "--metric", "tok_s=60", "--metric", "accept_len=2.95")
    assert done["status"] == "completed"
    row = run_json(ledger_env, "show")["items"][0]
    # One script wrote the gate and completed the item: its own check, not independent proof.
    assert row["verification"] == "self-checked"
    metrics = run_json(ledger_env, "metrics", item["id"])
    assert [(m["name"], m["value"]) for m in metrics] == [("tok_s", 60.0), ("accept_len", 2.95)]
    fields = [e["field"] for e in run_json(ledger_env, "history", item["id"])]
    assert fields.count("receipt") == 2 and fields.count("metric") == 2
    text = run(ledger_env, "history", item["id"]).stdout  # in words, not JSON
    assert "fails: cmd:cat results.txt" in text and "holds: cmd:cat results.txt (tok_s 60)" in text
    assert "tok_s = 60.0 (run 1, typed)" in text and "{" not in text


def test_force_needs_a_reason(ledger_env: Path) -> None:
    item = run_json(ledger_env, "add", "Server is up", "--done-when", "cmd:false")
    err = one_line_error(run(ledger_env, "done", item["id"], "--force", check=False))
    assert "overriding a failing gate needs --force with --reason" in err
    err = one_line_error(run(ledger_env, "done", item["id"], "--metric", "tok_s", check=False))
    assert "write NAME=NUMBER" in err
    done = run_json(ledger_env, "done", item["id"], "--force", "--reason", "checked on the box")
    assert done["status"] == "completed"


def test_assume_verify_and_readiness(ledger_env: Path, health: Health) -> None:
    bench = run_json(ledger_env, "add", "SCP and run benchmark_eagle3.py on container (16 draft tokens)")
    # A person states the assumption and its check: its passing proves it (verified).
    server = json.loads(
        run(
            ledger_env,
            "assume",
            "SGLang server is up",
            "--check",
            health.url,
            "--for",
            bench["id"],
            "--json",
            person=True,
        ).stdout
    )
    assert server["for"] == [bench["id"]]
    health.status = 503
    proc = run(ledger_env, "verify", check=False)
    assert proc.returncode == 1
    assert f"[1/1] FAIL {server['check']['id']} {server['id']}  {health.url}" in proc.stdout
    assert "HTTP 503 (wanted 2xx)" in proc.stdout and "1 fails in" in proc.stdout
    assert [i["id"] for i in run_json(ledger_env, "next")] == [server["id"]]
    health.status = 200
    report = json.loads(run(ledger_env, "verify", "--json").stdout)
    assert [r["result"] for r in report["receipts"]] == ["holds"]
    items = {i["id"]: i for i in run_json(ledger_env, "show")["items"]}
    assert items[server["id"]]["status"] == "completed" and items[server["id"]]["verification"] == "verified"
    assert [i["id"] for i in run_json(ledger_env, "next")] == [bench["id"]]
    listed = run(ledger_env, "gate", "list").stdout
    assert server["check"]["id"] in listed and "assumption" in listed and "trusted" in listed


def test_imported_checks_are_skipped_until_trust(ledger_env: Path, tmp_path: Path) -> None:
    item = run_json(ledger_env, "add", "Write a marker")
    gate = run_json(ledger_env, "gate", "add", item["id"], "cmd:touch marker", "--timeout", "5")
    exported = run(ledger_env, "export").stdout
    other = tmp_path / "other.db"
    run(other, "import", "-", stdin=exported)
    proc = run(other, "verify", check=True)
    assert f"skipped {gate['id']}" in proc.stdout and "not trusted" in proc.stdout
    assert not (tmp_path / "marker").exists()
    refused = run(other, "trust", check=False, person=True)
    assert (
        refused.returncode == 1 and "cmd:touch marker" in refused.stdout and "timeout = 5.0" in refused.stdout
    )
    assert "none trusted" in refused.stderr
    assert not (tmp_path / "marker").exists()
    trusted = run(other, "trust", "--yes", person=True)
    assert "trusted 1 of 1 checks" in trusted.stdout
    assert "1 holds" in run(other, "verify").stdout and (tmp_path / "marker").exists()
    assert "nothing to trust" in run(other, "trust", person=True).stdout
    removed = json.loads(run(other, "gate", "remove", gate["id"], "--json", person=True).stdout)
    assert removed["id"] == gate["id"] and run_json(other, "gate", "list") == []


def test_verify_watch_runs_again_until_interrupted(ledger_env: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from tests.conftest import subprocess_env, todoledger_bin

    item = run_json(ledger_env, "add", "Count runs", "--done-when", "cmd:echo run >> runs.txt")
    proc = subprocess.Popen(
        [todoledger_bin(), "verify", "--watch", "0.2"],
        env=subprocess_env(ledger_env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    # Four runs started: the third one's receipt was written before the fourth began.
    while time.monotonic() < deadline:
        runs = tmp_path / "runs.txt"
        if runs.exists() and len(runs.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert out.count("[1/1] ok") >= 3
    receipts = [e for e in run_json(ledger_env, "history", item["id"]) if e["field"] == "receipt"]
    assert len(receipts) >= 3


def test_gate_add_approval_makes_the_item_wait_for_a_person(ledger_env: Path) -> None:
    item = run_json(ledger_env, "add", "Launch the 8-GPU hero run")
    out = run(ledger_env, "gate", "add", item["id"], "approval")
    assert out.stdout.strip() == f"{item['id']} now waits for a person's approval"
    agent = run(ledger_env, "start", item["id"], "--writer", "claude-code:s1", check=False)
    assert agent.returncode == 1 and "needs a person's approval first" in agent.stderr
