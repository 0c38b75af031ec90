"""Gates, assumptions, receipts, staleness, trust and metrics through the real Ledger."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_checks_run import Health
from todoledger import Ledger
from todoledger.core.model import LedgerError
from todoledger.ledger import verify as v


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import act_as_person

    act_as_person(ledger_env, monkeypatch)  # type: ignore[arg-type]


DISK_ITEM = "Verify /data has space for 25K samples"
INFERENCE = "Run inference on 25K samples"


@pytest.fixture
def lg(ledger_env: Path) -> Iterator[Ledger]:
    ledger = Ledger()
    yield ledger
    ledger.close()


@pytest.fixture
def health() -> Iterator[Health]:
    server = Health()
    yield server
    server.stop()


def rows(lg: Ledger) -> dict[str, dict[str, Any]]:
    return {i["content"]: i for i in lg.show()["items"]}


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_subagent_cannot_verify_a_failing_disk_gate_by_saying_so(lg: Ledger, tmp_path: Path) -> None:
    """The seeds' case: 2.8T free, 5.4T needed; the subagent reports it verified anyway."""
    (tmp_path / "data").mkdir()
    disk = lg.add(DISK_ITEM)
    lg.add(INFERENCE, depends_on=[disk["id"]])
    needs = free_bytes(tmp_path / "data") * 2  # stand-in: more than the folder's disk has free
    lg.add_check(disk["id"], f"disk:data>={needs}")
    payload = {
        "todos": [
            {"content": DISK_ITEM, "status": "completed", "id": "1"},
            {"content": INFERENCE, "status": "pending", "id": "2"},
        ]
    }
    result = lg.write(payload, writer="opencode:subagent")
    (warning,) = [w for w in result.warnings if w.code == "unverified-completion"]
    assert (
        warning.where == disk["id"]
        and "counted as 'claimed completed, gate not run', not as completed" in warning.message
    )
    assert "is unverified" in warning.message
    view = rows(lg)
    assert view[DISK_ITEM]["status"] == "completed"  # the agent's report is kept
    assert view[DISK_ITEM]["verification"] == "unverified"
    assert view[INFERENCE]["ready"] is False and view[INFERENCE]["blocked"] is True
    assert lg.next() == []
    report = lg.verify()
    (receipt,) = report["receipts"]
    assert receipt["result"] == "fails" and "free at data" in receipt["output"]
    view = rows(lg)
    assert view[DISK_ITEM]["verification"] == "failed"
    assert view[INFERENCE]["ready"] is False and lg.next() == []
    assert lg.next(claim=True) == []
    # the next report from the agent is told again, and still changes nothing
    again = lg.write(
        {
            "todos": [
                {"content": DISK_ITEM, "status": "in_progress"},
                {"content": INFERENCE, "status": "pending"},
            ]
        },
        writer="opencode:subagent",
    )
    assert not [w for w in again.warnings if w.code == "unverified-completion"]
    assert lg.check() == []


def test_gate_refuses_done_while_failing_and_allows_it_once_passing(lg: Ledger, tmp_path: Path) -> None:
    bench = lg.add("Run benchmark_eagle3.py once")
    after = lg.add("Benchmark with 10 draft tokens", depends_on=[bench["id"]])
    lg.add_check(bench["id"], "file:results.json", {"nonempty": True})
    before = lg.show()["revision"]
    with pytest.raises(LedgerError) as err:
        lg.done(bench["id"], evidence="ran it")
    message = str(err.value)
    assert message == f"{bench['id']} not completed: gate file:results.json fails: results.json: no such file"
    item = lg.get(bench["id"])
    assert item["status"] == "pending" and item["evidence"] is None
    assert lg.show()["revision"] == before + 1  # only the receipt of the refused run
    assert [e["field"] for e in lg.history(item=bench["id"])][-1] == "receipt"
    (tmp_path / "results.json").write_text('{"tok_s": 60}')
    done = lg.done(bench["id"], evidence="results.json")
    assert done["status"] == "completed"
    view = rows(lg)
    assert view["Run benchmark_eagle3.py once"]["verification"] == "verified"
    assert view["Benchmark with 10 draft tokens"]["ready"] is True
    assert [i["id"] for i in lg.next()] == [after["id"]]
    fields = [e["field"] for e in lg.history(item=bench["id"])]
    assert fields == ["created", "check", "receipt", "receipt", "status", "evidence"]
    assert lg.check() == []


def test_force_overrides_a_failing_gate_and_records_why(lg: Ledger, tmp_path: Path) -> None:
    item = lg.add("Check if SGLang EAGLE3 server is still running")
    lg.add_check(item["id"], "cmd:exit 1")
    with pytest.raises(LedgerError, match="--reason"):
        lg.done(item["id"], force_reason=" ")
    assert lg.get(item["id"])["status"] == "pending"
    done = lg.done(item["id"], force_reason="checked by hand on the container")
    assert done["status"] == "completed"
    forced = [e for e in lg.history(item=item["id"]) if e["field"] == "forced"]
    assert forced[0]["new"]["reason"] == "checked by hand on the container"
    assert forced[0]["new"]["gates"][0]["result"] == "fails"
    assert rows(lg)[item["content"]]["verification"] == "failed"  # still true: the check fails


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True, capture_output=True
    )


def test_receipt_turns_stale_when_the_git_tree_changes(lg: Ledger, tmp_path: Path) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "bench.py").write_text("print('ok')\n")
    git(repo, "add", "bench.py")
    git(repo, "commit", "-qm", "bench")
    os.chdir(repo)
    script = lg.add("Test benchmark script runs")
    later = lg.add("Benchmark with 5 draft tokens", depends_on=[script["id"]])
    lg.add_check(script["id"], "cmd:python3 bench.py", {"expect": "ok"})
    lg.done(script["id"])
    (receipt,) = lg.receipts(script["id"])
    assert receipt["tree"]["root"] == str(repo.resolve()) and receipt["tree"]["head"]
    assert rows(lg)["Test benchmark script runs"]["verification"] == "verified"
    assert [i["id"] for i in lg.next()] == [later["id"]]
    (repo / "bench.py").write_text("print('ok')  # changed\n")
    view = rows(lg)
    assert view["Test benchmark script runs"]["verification"] == "stale"
    assert view["Benchmark with 5 draft tokens"]["ready"] is False and lg.next() == []
    lg.verify()
    assert rows(lg)["Test benchmark script runs"]["verification"] == "verified"
    (repo / "notes.txt").write_text("untracked work counts too")
    assert rows(lg)["Test benchmark script runs"]["verification"] == "stale"
    lg.verify()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    assert rows(lg)["Test benchmark script runs"]["verification"] == "stale"  # a new HEAD


def test_watched_paths_decide_staleness(lg: Ledger, tmp_path: Path) -> None:
    (tmp_path / "cfg.toml").write_text("a = 1")
    item = lg.add("Config is valid")
    lg.add_check(item["id"], "file:cfg.toml", {"watch": ["cfg.toml"]})
    lg.verify()
    assert rows(lg)["Config is valid"]["verification"] == "verified"
    (tmp_path / "other.txt").write_text("unrelated")
    assert rows(lg)["Config is valid"]["verification"] == "verified"
    (tmp_path / "cfg.toml").write_text("a = 2")
    assert rows(lg)["Config is valid"]["verification"] == "stale"


def test_assumption_holds_when_its_check_passes(lg: Ledger, health: Health) -> None:
    bench = lg.add("SCP and run benchmark_eagle3.py on container (16 draft tokens)")
    server = v.assume(lg, "SGLang server survived its 15-minute start", check=health.url, for_=[bench["id"]])
    assert server["check"]["role"] == "assumption" and server["for"] == [bench["id"]]
    assert lg.get(bench["id"])["depends_on"] == [server["id"]]
    assert [i["id"] for i in lg.next()] == [server["id"]]  # someone should check it first
    health.status = 503
    lg.verify()
    view = rows(lg)
    assert (
        view[server["content"]]["status"] == "pending" and view[server["content"]]["verification"] == "failed"
    )
    assert view[bench["content"]]["ready"] is False
    health.status = 200
    lg.verify()
    view = rows(lg)
    assert view[server["content"]]["status"] == "completed"
    assert view[server["content"]]["verification"] == "verified"
    assert view[server["content"]]["evidence"].startswith(f"check holds: {health.url}: holds (200)")
    assert view[bench["content"]]["ready"] is True
    health.stop()
    lg.verify()
    view = rows(lg)
    assert view[server["content"]]["verification"] == "failed"
    assert view[bench["content"]]["ready"] is False  # completed earlier, but the server is gone now
    assert lg.check() == []


def test_imported_checks_wait_for_trust_and_a_changed_spec_needs_it_again(
    lg: Ledger, tmp_path: Path, ledger_env: Path
) -> None:
    item = lg.add("Write the marker")
    lg.add_check(item["id"], "cmd:touch marker-1")
    lines = list(lg.export())
    assert json.loads(lines[0])["checks"][0]["spec"] == "cmd:touch marker-1"
    from tests.conftest import register_tester

    register_tester(tmp_path / "other.db")  # the tester's token counts in the ledger that registered it
    with Ledger(tmp_path / "other.db") as other:
        result = other.import_jsonl(lines)
        assert result["untrusted_checks"] == 1
        report = other.verify()
        assert report["receipts"] == [] and report["skipped"][0]["why"].startswith("not trusted")
        assert not (tmp_path / "marker-1").exists()
        with pytest.raises(LedgerError, match="not trusted"):
            other.done(item["id"])
        shown: list[str] = []
        approved = other.trust(
            writer="cli:tester", approve=lambda row: shown.append(row.check.canonical()) or True
        )
        assert shown == ["cmd:touch marker-1\n{}"] and approved[0]["trusted"] is True
        assert [r["result"] for r in other.verify()["receipts"]] == ["holds"]
        assert (tmp_path / "marker-1").exists()
        # the same export again changes nothing; a changed spec loses the approval
        assert other.import_jsonl(lines).get("untrusted_checks") is None
        record = json.loads(lines[0])
        record["checks"][0]["spec"] = "cmd:touch marker-2"
        assert other.import_jsonl([json.dumps(record)])["untrusted_checks"] == 1
        (check,) = other.checks()
        assert check.trusted is False and check.id == record["checks"][0]["id"]
        assert other.verify()["receipts"] == []
        assert not (tmp_path / "marker-2").exists()
        assert rows(other)["Write the marker"]["verification"] == "unverified"  # old receipt ran other text
        other.trust(writer="cli:tester")
        other.verify()
        assert (tmp_path / "marker-2").exists()
        assert other.check() == []


@pytest.mark.parametrize("spec", ["disk:/x>=lots", "port:host", "cmd:", "metric:tok_s>=fast"])
def test_bad_specs_change_nothing(lg: Ledger, spec: str) -> None:
    item = lg.add("Something")
    before = (lg.show(), lg.history())
    with pytest.raises(LedgerError) as err:
        lg.add_check(item["id"], spec)
    assert "\n" not in str(err.value) and str(err.value).startswith("bad check")
    with pytest.raises(LedgerError):
        v.assume(lg, "An assumption", check=spec, for_=[item["id"]])
    assert (lg.show(), lg.history()) == before
    assert lg.checks() == []
    record = {"id": "abcdef", "content": "Imported", "checks": [{"spec": spec}]}
    with pytest.raises(LedgerError, match="item abcdef: bad check"):
        lg.import_jsonl([json.dumps(record)])
    assert (lg.show(), lg.history()) == before


def test_metrics_are_numbers_on_items_and_metric_gates_use_them(lg: Ledger) -> None:
    base = lg.add("Baseline benchmark (no speculation)")
    spec = lg.add("Benchmark with 16 draft tokens")
    lg.done(base["id"], metrics={"tok_s": 82.0})
    lg.add_check(spec["id"], "metric:tok_s>=baseline*1.1", {"baseline": base["id"]})
    with pytest.raises(LedgerError) as err:
        lg.done(spec["id"], metrics={"tok_s": 60.0, "accept_len": 2.95})
    assert "tok_s = 60 (needs >= 90.2)" in str(err.value)
    assert lg.get(spec["id"])["status"] == "pending"
    recorded = lg.metrics(spec["id"])
    assert [(m["name"], m["value"], m["run"]) for m in recorded] == [
        ("tok_s", 60.0, 1),
        ("accept_len", 2.95, 1),
    ]
    lg.record_metrics(spec["id"], {"tok_s": 130.0})
    lg.record_metrics(spec["id"], {"tok_s": 140.0})
    assert lg.done(spec["id"])["status"] == "completed"  # median of 60, 130, 140 = 130 >= 90.2
    events = [e for e in lg.history(item=spec["id"]) if e["field"] == "metric"]
    assert [e["new"]["run"] for e in events if e["new"]["name"] == "tok_s"] == [1, 2, 3]
    with pytest.raises(LedgerError, match="not a finite number"):
        lg.record_metrics(spec["id"], {"tok_s": float("nan")})
    with pytest.raises(LedgerError, match="is not a number"):
        v.parse_metric("tok_s=fast")
    assert lg.check() == []


def test_completed_without_checks_is_reported_not_verified(lg: Ledger) -> None:
    item = lg.add("Benchmark current baseline config")
    lg.done(item["id"], evidence="172 tok/s at C=1")
    assert rows(lg)["Benchmark current baseline config"]["verification"] == "reported"
    assert rows(lg)["Benchmark current baseline config"]["verification"] != "verified"


def test_undo_after_verify_reverts_the_last_real_change(lg: Ledger, tmp_path: Path) -> None:
    item = lg.add("Something gated")
    lg.add_check(item["id"], "cmd:test -d .")
    lg.update(item["id"], priority="high")
    lg.verify()
    undone = lg.undo()
    assert undone["kind"] == "update" and lg.get(item["id"])["priority"] == "medium"


def test_a_ledger_that_runs_no_checks_refuses_instead(lg: Ledger, tmp_path: Path) -> None:
    """What `serve` without --allow-checks sets: nothing runs, nothing is claimed."""
    item = lg.add("Write the marker")
    lg.add_check(item["id"], "cmd:touch marker")
    lg.run_checks = False
    with pytest.raises(LedgerError, match="runs only where checks are allowed"):
        lg.done(item["id"])
    with pytest.raises(LedgerError, match="without --allow-checks"):
        lg.verify()
    assert not (tmp_path / "marker").exists()
    assert lg.get(item["id"])["status"] == "pending" and lg.receipts() == []
    assert lg.done(item["id"], force_reason="ran it by hand")["status"] == "completed"
    assert not (tmp_path / "marker").exists()
    forced = [e["new"] for e in lg.history(item=item["id"]) if e["field"] == "forced"]
    assert forced[0]["gates"][0]["result"] == "not run"
