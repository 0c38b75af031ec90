"""The demo tells the seeds' story and nothing else, with the same ids on every run."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger, LedgerError
from todoledger.core.ids import new_id, seeded
from todoledger.demo import AGENT, ASSUMPTIONS, CALLS, FACTS, REVIEWER, load_demo
from todoledger.ingest.report import load as load_report


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import TESTER_TOKEN

    monkeypatch.setenv("TODOLEDGER_TOKEN", TESTER_TOKEN)


# The seeds, vendored (tests/data/README.md): a clone has no shared/ beside it.
SEEDS = Path(__file__).resolve().parent / "data" / "seeds"


def seeds_text() -> str:
    texts = [p.read_text() for p in sorted(SEEDS.glob("*.txt"))]
    assert len(texts) == 5, f"the five seeds belong in {SEEDS}"
    return "\n".join(texts)


def by_content(lg: Ledger, plan: str) -> dict[str, dict[str, Any]]:
    return {i["content"]: i for i in lg.show(plan)["items"]}


@pytest.fixture
def lg(ledger_env: Path) -> Ledger:
    ledger = Ledger(ledger_env)
    load_demo(ledger)
    return ledger


def test_every_list_item_is_quoted_verbatim_in_a_seed() -> None:
    text = seeds_text()
    for call in CALLS:
        todos = json.loads(call.payload)["todos"]
        for todo in todos:
            assert todo["content"] in text, todo["content"]
        assert f"msg {call.msg}" in text or f"msg id={call.msg}" in text or f"Message {call.msg}" in text


def test_raw_calls_match_the_seeds_character_for_character_as_far_as_they_print_them() -> None:
    text = seeds_text()
    raw = {c.msg: c.payload for c in CALLS}
    # seeds 000 and 003 print the whole call up to the item they cut; 001 and 004 print two items
    assert raw[4350].removesuffix("]}") + ',{"content":"..."}]}' in text
    assert raw[4329].removesuffix("]}") + ',{"content":"Benc...' in text
    for msg in (4950, 6000):
        two = raw[msg][: raw[msg].index("},{", raw[msg].index("},{") + 3) + 1]
        assert two in text, two


def test_every_number_the_reviewer_writes_is_in_the_seeds() -> None:
    text = seeds_text().replace(",", "")
    from todoledger.demo_checks import CLAIM_GATES

    written = [a.text + " " + a.source for a in ASSUMPTIONS] + [value for *_, value in FACTS]
    written += [note for *_, note in CLAIM_GATES]  # the reviewer's gates on the agent's claims
    for sentence in written:
        sentence = re.sub(r"[Ss]eeds? \d{3}( and \d{3})?", "", sentence)  # which seed: file names
        for number in re.findall(r"\d[\d,.]*\d|\d", sentence):
            assert number.replace(",", "") in text, (number, sentence)


def test_the_duplicate_key_call_is_refused_and_nothing_of_it_applied(ledger_env: Path) -> None:
    with Ledger(ledger_env) as ledger:
        loaded = load_demo(ledger)
        (refused,) = [o for o in loaded.outcomes if o.result is None]
        assert refused.call.msg == 4329
        assert refused.refusal is not None and 'duplicate key "priority"' in refused.refusal
        items = by_content(ledger, "demo")
        for text in ("Train EAGLE-3 (4 GPUs, 5 epochs)", "Benchmark 16 speculative tokens"):
            assert text not in items
        assert ledger.check() == []


def test_report_tells_the_refused_call_with_its_message(lg: Ledger) -> None:
    report = load_report(lg, "demo")
    (refused,) = [f for f in report.findings if f.code == "refused-call"]
    assert refused.where == "msg 4329 (seed 003)"
    assert 'duplicate key "priority"' in refused.message


def test_report_shows_truncation_and_the_in_progress_item_dropped_after_the_summary(lg: Ledger) -> None:
    report = load_report(lg, "demo")
    truncated = {f.where for f in report.findings if f.code == "truncated"}
    assert truncated == {"msg 2871 (seed 002)", "msg 4950 (seed 001)"}
    dropped = {lg.get(f.items[0], "demo")["content"]: f.where for f in report.findings if f.code == "dropped"}
    # msg 4350 comes right after the state-of-the-union message 4348 and starts a new list
    assert dropped["Wait for vLLM server to finish loading"] == "msg 4350 (seed 000)"
    history = lg.history("demo", item=by_content(lg, "demo")["Wait for vLLM server to finish loading"]["id"])
    assert [e["new"] for e in history if e["field"] == "status"] == ["dropped"]
    assert any(
        e["field"] == "reason" and e["new"].startswith(f"dropped by {AGENT} at revision ") for e in history
    )


def test_nothing_is_cancelled_only_dropped_by_the_agent_leaving_it_out(lg: Ledger) -> None:
    for plan in ("demo", "demo-qwen"):
        statuses = {item["status"] for item in lg.show(plan)["items"]}
        assert "cancelled" not in statuses  # nobody decided to cancel anything
        for item in lg.show(plan)["items"]:
            if item["status"] == "dropped":
                assert item["reason"].startswith(f"dropped by {AGENT} at revision "), item


def test_assumptions_stay_pending_with_the_disk_figures(lg: Ledger) -> None:
    items = {**by_content(lg, "demo"), **by_content(lg, "demo-qwen")}
    verify = {c: i for c, i in items.items() if c.startswith("Verify")}
    assert len(verify) == len(ASSUMPTIONS)
    assert {i["status"] for i in verify.values()} == {"pending"}
    assert {i["created_by"] for i in verify.values()} == {REVIEWER}
    disk = next(i for c, i in verify.items() if "/data has room" in c)
    assert "5.4 TB" in disk["content"] and "2.8 TB" in disk["content"]
    assert "todoledger demo --checks" in disk["notes"]


def test_the_drafter_is_trained_from_scratch_and_never_shown_fine_tuned(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    download = items["Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base"]
    assert download["status"] == "dropped"  # the plan at msg 2871, left out later
    assert "trained from scratch" in download["notes"] and "37,312 samples" in download["notes"]
    finished = [i for i in items.values() if i["status"] == "completed"]
    assert not [i for i in finished if "fine" in (i["content"] + (i["evidence"] or "")).lower()]


def test_qwen_campaign_has_its_own_plan_and_figures(lg: Ledger) -> None:
    qwen = by_content(lg, "demo-qwen")
    base = qwen["Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)"]
    assert base["status"] == "completed"
    assert "172 tok/s at C=1" in base["evidence"] and "2,156 tok/s at C=32" in base["evidence"]
    assert "one run per concurrency level" in base["evidence"]
    assert not any("Qwen" in c or "NEXTN" in c for c in by_content(lg, "demo"))
    assert "Test NEXTN MTP speculative decoding" in qwen


def test_demo_ids_are_the_same_on_every_run(tmp_path: Path) -> None:
    views = []
    for n in range(2):
        with Ledger(tmp_path / f"run{n}.db") as ledger:
            load_demo(ledger)
            views.append((ledger.show("demo"), ledger.show("demo-qwen"), ledger.history("demo")))
    assert views[0] == views[1]
    with Ledger(tmp_path / "run0.db") as ledger:
        before = [i["id"] for i in ledger.show("demo")["items"]]
        load_demo(ledger, reset=True)
        assert [i["id"] for i in ledger.show("demo")["items"]] == before
        assert ledger.check() == []


def test_seeded_ids_repeat_and_normal_ids_do_not() -> None:
    with seeded("x"):
        first = [new_id() for _ in range(3)]
    with seeded("x"):
        assert [new_id() for _ in range(3)] == first
    assert new_id() not in first and len(set(first)) == 3


def add(db: Path, text: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), "add", text, "--json"],
        capture_output=True,
        text=True,
        env=subprocess_env(db, **env),
        timeout=60,
    )


def test_id_seed_env_repeats_ids_across_processes_and_keeps_collision_checks(tmp_path: Path) -> None:
    seed = {"TODOLEDGER_ID_SEED": "readme"}
    one = json.loads(add(tmp_path / "a.db", "first", **seed).stdout)["id"]
    assert json.loads(add(tmp_path / "b.db", "first", **seed).stdout)["id"] == one
    # the same stream in a second process meets the taken id and moves on
    two = json.loads(add(tmp_path / "a.db", "second", **seed).stdout)["id"]
    assert two != one
    assert json.loads(add(tmp_path / "b.db", "second", **seed).stdout)["id"] == two
    assert json.loads(add(tmp_path / "c.db", "first").stdout)["id"] != one


def test_clock_override_and_its_bad_value(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    assert add(db, "x", TODOLEDGER_NOW="2026-02-12T08:30:00Z").returncode == 0
    with Ledger(db) as ledger:
        assert {e["at"] for e in ledger.history()} == {"2026-02-12T08:30:00.000Z"}
    bad = add(db, "y", TODOLEDGER_NOW="tomorrow")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "TODOLEDGER_NOW='tomorrow' is not an ISO 8601 time" in bad.stderr
    with Ledger(db) as ledger:
        assert len(ledger.items()) == 1


def test_demo_checks_run_the_seeds_assumptions_against_stand_ins(ledger_env: Path) -> None:
    import socket
    import statistics

    from todoledger.demo_checks import DISK_ITEM, run_checks

    with Ledger(ledger_env) as ledger:
        load_demo(ledger)
        ran = run_checks(ledger)
        results = {r["spec"].split(":")[0]: r for r in ran.receipts}
        assert results["disk"]["result"] == "fails"  # 2.8 TB free where ~5.4 TB were needed
        assert results["http"]["result"] == "holds" and results["cmd"]["result"] == "holds"
        assert "SIMULATION" in results["cmd"]["output"]
        items = by_content(ledger, "demo")
        disk = next(i for c, i in items.items() if c.startswith(DISK_ITEM))
        assert (disk["status"], disk["verification"]) == ("pending", "failed")
        # The replayed subagent's "verification" by saying so is refused, and nothing changes.
        with pytest.raises(LedgerError, match="not completed: gate disk:"):
            ledger.done(disk["id"], plan="demo", evidence="2.8T avail; estimate needs ~5.4T")
        assert ledger.get(disk["id"], "demo")["status"] == "pending"
        stand_ins = [c for c in items if c.startswith("Stand-in:")]
        assert len(stand_ins) == 2 and all(items[c]["status"] == "completed" for c in stand_ins)
        # The sweep: 16 draft tokens and the baseline only (the seeds give no 10- or 5-token figure).
        rows = {r["params"]["draft_tokens"]: r for r in ran.sweep["rows"]}
        assert set(rows) == {"16", "0"}
        values = {m["item"]: [] for m in ledger.metrics(plan="demo")}
        for m in ledger.metrics(plan="demo"):
            values[m["item"]].append(m["value"])
        sixteen = next(
            i["id"] for c, i in items.items() if c.startswith("Benchmark 16 draft tokens (SIMULATED")
        )
        base = next(i["id"] for c, i in items.items() if c.startswith("Benchmark 0 draft tokens (SIMULATED"))
        ratio = statistics.median(values[sixteen]) / statistics.median(values[base])
        assert len(values[sixteen]) == len(values[base]) == 3
        assert abs(rows["16"]["ratio"] - ratio) < 1e-9 and 0.70 < ratio < 0.76  # seed 001: 60 / 82 = 0.73
        assert rows["16"]["verdict"] == "discard"
        url = results["http"]["spec"]
        with pytest.raises(LedgerError, match="already ran"):
            run_checks(ledger)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # the stand-in is gone


def test_the_reviewers_gates_prove_or_refuse_the_agents_claims(ledger_env: Path) -> None:
    """The seeds' agent claimed Phase 0.2 and the Qwen baseline completed (msgs 4950, 6000);
    the reviewer's gates, labelled with their seeds, prove one and refuse the other, and the
    report's record of claims says so per item and per writer."""
    from todoledger.demo_checks import CLAIM_GATES, PHASE_02, QWEN_BASELINE, run_checks

    with Ledger(ledger_env) as ledger:
        load_demo(ledger)
        ran = run_checks(ledger)
        assert [(r["content"], r["result"]) for r in ran.claims] == [
            (PHASE_02, "holds"),
            (QWEN_BASELINE, "fails"),
        ]
        kimi, qwen = load_report(ledger, "demo"), load_report(ledger, "demo-qwen")
        notes = by_content(ledger, "demo")[PHASE_02]["notes"]
        qwen_item = by_content(ledger, "demo-qwen")[QWEN_BASELINE]
    assert notes.endswith(CLAIM_GATES[0][3]) and notes.startswith("Seed 001: pending")  # the fact kept
    assert qwen_item["notes"] == CLAIM_GATES[1][3]
    assert all(note.startswith("Reviewer's gate on the agent's claim (seed 00") for *_, note in CLAIM_GATES)
    assert (qwen_item["status"], qwen_item["verification"]) == ("completed", "failed")
    agents = {c.content: c.how() for c in kimi.claims.items if c.claimed_by == AGENT}
    assert agents == {
        "Phase 0.1: Kill any existing server processes": "reported",
        PHASE_02: f"verified by {REVIEWER}",
    }
    assert [(c.claimed_by, c.content, c.how()) for c in qwen.claims.items] == [
        (AGENT, QWEN_BASELINE, "failed")
    ]
    # writer, claimed, independent, self-checked, reported, failed/stale, reopened, forced, gate removed
    assert [r for r in kimi.claims.rows() if r[0] == AGENT] == [
        (AGENT, "2", "1", "0", "1", "0", "0", "0", "0")
    ]
    assert qwen.claims.rows() == [(AGENT, "1", "0", "0", "0", "1", "0", "0", "0")]


def test_demo_checks_from_the_cli_print_the_sweep_table(ledger_env: Path) -> None:
    proc = subprocess.run(
        [todoledger_bin(), "demo", "--checks"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env, TODOLEDGER_NOW="2026-02-14T13:00:00Z"),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout[proc.stdout.index("$ todoledger sweep results draft_tokens") :]
    assert re.search(r"draft_tokens=16 +tok_s +3 +6\d\.\d .* 0\.7\dx +discard", table), table
    assert re.search(r"draft_tokens=0 \(baseline\) +tok_s +3 +8\d\.\d .* 1\.00x", table), table
    gates = proc.stdout[
        proc.stdout.index("The reviewer's gates on what the seeds' agent claimed completed") :
    ]
    assert re.search(r"Phase 0\.2: Prepare AQ-MedAI .*: holds: cmd:.*: proven by the reviewer's gate", gates)
    assert re.search(r"Benchmark current baseline .*: fails: file:.*: refused: the gate does not hold", gates)
    again = subprocess.run(
        [todoledger_bin(), "demo", "--reset"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert again.returncode != 0 and "holds the checks of demo --checks" in again.stderr


def test_demo_checks_repeat_their_ids_and_simulated_figures(tmp_path: Path) -> None:
    from todoledger.demo_checks import run_checks

    seen = []
    for n in range(2):
        with Ledger(tmp_path / f"run{n}.db") as ledger:
            load_demo(ledger)
            run_checks(ledger)
            items = [(i["id"], i["content"], i["status"]) for i in ledger.show("demo")["items"]]
            numbers = [(m["item"], m["value"]) for m in ledger.metrics(plan="demo")]
            seen.append((items, numbers, [c.id for c in ledger.checks(plan="demo")]))
    assert seen[0] == seen[1]
