"""The plan must not lie: each scenario here was reproduced against the ledger
before its fix and is kept as a regression test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import person_env, subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.core.model import LedgerError


@pytest.fixture
def lg(ledger_env: Path) -> Any:
    with Ledger(ledger_env) as ledger:
        yield ledger


def todos(*rows: tuple[str, str]) -> dict[str, Any]:
    return {"todos": [{"content": c, "status": s, "priority": "high"} for c, s in rows]}


def state(lg: Ledger, plan: str = "main") -> dict[str, str]:
    return {i["content"]: i["status"] for i in lg.show(plan)["items"]}


def cli(db: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=person_env(db),  # the person cli:tester, by their token
        timeout=60,
    )


# A1: a stale list never moves finished work back ------------------------------------


def test_stale_main_agent_list_does_not_reopen_what_a_subagent_completed(lg: Ledger) -> None:
    lg.write(todos(("Deploy SGLang", "in_progress"), ("Benchmark 16 draft tokens", "pending")), writer="main")
    bench = lg.show()["items"][1]["id"]
    lg.done(bench, evidence="60 tok/s vs 82 baseline", writer="subagent")
    res = lg.write(
        todos(("Deploy SGLang", "completed"), ("Benchmark 16 draft tokens", "in_progress")), writer="main"
    )
    assert state(lg) == {"Deploy SGLang": "completed", "Benchmark 16 draft tokens": "completed"}
    assert {"kind": "conflict", "item": bench, "field": "status", "kept": "completed"}.items() <= next(
        c for c in res.changes if c["kind"] == "conflict"
    ).items()
    assert lg.get(bench)["evidence"] == "60 tok/s vs 82 baseline"
    assert lg.check() == []


def test_stale_list_does_not_reopen_a_cancelled_item_but_one_that_saw_it_may(lg: Ledger) -> None:
    lg.write(todos(("Try NEXTN MTP", "pending")), writer="main")
    item = lg.show()["items"][0]["id"]
    lg.cancel(item, reason="garbage output on SM120", writer="user")
    lg.write(todos(("Try NEXTN MTP", "in_progress")), writer="main")
    assert state(lg) == {"Try NEXTN MTP": "cancelled"}
    # A writer whose list showed the item cancelled may bring it back.
    lg.write(todos(("Try NEXTN MTP", "cancelled")), writer="user")
    lg.write(todos(("Try NEXTN MTP", "pending")), writer="user")
    assert state(lg) == {"Try NEXTN MTP": "pending"}


# A2: finishing work whose prerequisites are open is visible ------------------------


def test_done_and_start_refuse_blocked_items_naming_the_blockers(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        disk = lg.add("Verify /data has space for 25K samples")["id"]
        run = lg.add("Run inference: 25K samples", depends_on=[disk])["id"]
    for verb in ("start", "done"):
        proc = cli(ledger_env, verb, run)
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert f"it waits for {disk} 'Verify /data has space for 25K samples' (pending)" in proc.stderr
    with Ledger(ledger_env) as lg:
        assert lg.get(run)["status"] == "pending"
    forced = cli(ledger_env, "done", run, "--force", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["status"] == "completed"
    with Ledger(ledger_env) as lg:
        story = lg.history(item=run)
    (forced_event,) = [e for e in story if e["field"] == "forced"]
    assert (forced_event["new"], forced_event["writer"]) == (
        {"past": "prerequisites", "open": [disk]},
        "cli:tester",
    )


def test_whole_list_finishing_blocked_work_is_kept_but_warned_and_reported(lg: Ledger) -> None:
    disk = lg.add("Verify /data has space for 25K samples", writer="main")["id"]
    run = lg.add("Run inference: 25K samples", depends_on=[disk], writer="main")["id"]
    res = lg.write(
        todos(
            ("Verify /data has space for 25K samples", "pending"), ("Run inference: 25K samples", "completed")
        ),
        writer="main",
    )
    assert lg.get(run)["status"] == "completed"  # the list mirrors what the agent did
    (warning,) = [w for w in res.warnings if w.code == "prerequisites-unmet"]
    assert warning.where == "todos[1]" and disk in warning.message
    from todoledger.ingest.report import load

    report = load(lg, "main")
    assert any(f.code == "prerequisites-unmet" and run in f.items for f in report.findings)


def test_hook_logs_the_warning_since_the_agent_cannot_be_told(ledger_env: Path, tmp_path: Path) -> None:
    with Ledger(ledger_env) as lg:
        lg.write(todos(("Train EAGLE-3", "pending"), ("Fix weight keys", "pending")), writer="claude-code:s1")
        first, second = (i["id"] for i in lg.show()["items"])
        lg.dep_add(second, first)
    event = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {
            "todos": [
                {"content": "Train EAGLE-3", "status": "pending", "activeForm": "Training"},
                {"content": "Fix weight keys", "status": "in_progress", "activeForm": "Fixing"},
            ]
        },
    }
    env = subprocess_env(ledger_env, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
    )
    assert (proc.returncode, proc.stdout) == (0, "")
    # The log lives beside a ledger file; a ledger URL names no folder: the user's state folder.
    beside = ledger_env.parent if isinstance(ledger_env, Path) else tmp_path / "state" / "todoledger"
    log = (beside / "hook.log").read_text()
    assert "'Fix weight keys' marked in_progress while it waits for" in log and first in log


# A3: a dropped prerequisite does not silently unblock -------------------------------


def test_dependent_of_a_dropped_blocker_is_not_ready_and_says_why(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        lg.write(
            todos(("Download AQ-MedAI drafter", "pending"), ("Finetune the drafter", "pending")), writer="w"
        )
        download, tune = (i["id"] for i in lg.show()["items"])
        lg.dep_add(tune, download)
        lg.write(todos(("Finetune the drafter", "pending")), writer="w")  # the download was dropped
        assert lg.get(download)["status"] == "dropped"
        row = next(i for i in lg.show()["items"] if i["id"] == tune)
        assert (row["ready"], row["waits_on_cancelled"]) == (False, [download])
        assert lg.next() == []
        assert f"[{tune}] Finetune the drafter [high] (waits for a dropped item ({download}))" in lg.prime()
    out = cli(ledger_env, "next").stdout
    assert out.startswith("nothing is ready\nwaits for a cancelled or dropped item")
    assert f"{tune} Finetune the drafter  waits for {download}" in out
    with Ledger(ledger_env) as lg:
        lg.dep_remove(tune, download)
        assert [i["id"] for i in lg.next()] == [tune]


# A4: rewording is matched consistently ----------------------------------------------


def test_identical_edits_of_sibling_items_are_both_rewordings(lg: Ledger) -> None:
    lg.write(
        todos(
            ("Deploy SGLang with EAGLE3 drafter", "completed"),
            ("Benchmark 10 speculative tokens", "pending"),
            ("Benchmark 5 speculative tokens", "pending"),
        ),
        writer="oc",
    )
    before = {i["content"]: i["id"] for i in lg.show()["items"]}
    report = lg.write(
        todos(
            ("Deploy SGLang with EAGLE3 drafter", "completed"),
            ("Benchmark with 10 draft tokens", "pending"),
            ("Benchmark with 5 draft tokens", "pending"),
        ),
        writer="oc",
    )
    after = {i["content"]: i["id"] for i in lg.show()["items"]}
    assert after == {
        "Deploy SGLang with EAGLE3 drafter": before["Deploy SGLang with EAGLE3 drafter"],
        "Benchmark with 10 draft tokens": before["Benchmark 10 speculative tokens"],
        "Benchmark with 5 draft tokens": before["Benchmark 5 speculative tokens"],
    }
    assert sorted(c["kind"] for c in report.changes) == ["reworded", "reworded"]


def test_pairing_never_crosses_numbers_or_unrelated_work(lg: Ledger) -> None:
    lg.write(todos(("Benchmark 10 tokens", "pending"), ("Deploy the server", "pending")), writer="oc")
    lg.write(todos(("Benchmark 5 tokens", "pending"), ("Write the report", "pending")), writer="oc")
    assert state(lg) == {
        "Benchmark 10 tokens": "dropped",
        "Deploy the server": "dropped",
        "Benchmark 5 tokens": "pending",
        "Write the report": "pending",
    }


def test_a_paired_rewording_keeps_dependencies_dependents_and_children(lg: Ledger) -> None:
    lg.write(todos(("Phase 0: quick probe", "pending"), ("Run 16 token benchmark", "pending")), writer="oc")
    phase, bench = (i["id"] for i in lg.show()["items"])
    child = lg.add("Kill old servers", parent=phase, writer="oc")["id"]
    later = lg.add("Compare with baseline", depends_on=[bench], writer="oc")["id"]
    lg.dep_add(bench, child)
    lg.write(
        todos(
            ("Phase 0: quick probe of the drafter", "pending"),
            ("Run the 16 token benchmark", "pending"),
            ("Kill old servers", "pending"),
            ("Compare with baseline", "pending"),
        ),
        writer="oc",
    )
    rows = {i["id"]: i for i in lg.show()["items"]}
    assert rows[phase]["content"] == "Phase 0: quick probe of the drafter"
    assert rows[child]["parent"] == phase and rows[bench]["depends_on"] == [child]
    assert rows[later]["depends_on"] == [bench] and len(rows) == 4


# A5: drops are named; compaction resets the base ------------------------------------


def test_write_reply_names_dropped_items_and_flags_work_in_progress(ledger_env: Path) -> None:
    payload = json.dumps(
        todos(
            ("Deploy SGLang with EAGLE3 drafter (16 spec tokens)", "in_progress"),
            ("Benchmark 16 speculative tokens", "pending"),
        )
    )
    cli(ledger_env, "write", "--writer", "opencode:s1", "-", stdin=payload)
    proc = cli(
        ledger_env,
        "write",
        "--writer",
        "opencode:s1",
        "--json",
        "-",
        stdin=json.dumps(todos(("Benchmark 16 speculative tokens", "pending"))),
    )
    result = json.loads(proc.stdout)
    (dropped,) = [c for c in result["changes"] if c["kind"] == "dropped"]
    assert dropped["content"] == "Deploy SGLang with EAGLE3 drafter (16 spec tokens)"
    assert dropped["was"] == "in_progress"
    assert result["notices"] == [
        f"you dropped 'Deploy SGLang with EAGLE3 drafter (16 spec tokens)' ({dropped['item']}), which was in"
        " progress: it is now dropped; if it is done, mark it completed; list it again to revive it"
    ]


def test_list_rebuilt_after_compaction_cancels_nothing_the_summary_left_out(ledger_env: Path) -> None:
    campaign = [f"Sweep step {n}" for n in range(12)]
    with Ledger(ledger_env) as lg:
        lg.write(todos(*[(c, "pending") for c in campaign]), writer="claude-code:s1")
    env = subprocess_env(ledger_env)
    start = {"session_id": "s1", "cwd": os.getcwd(), "hook_event_name": "SessionStart", "source": "compact"}
    shown = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(start),
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    seen = [c for c in campaign if c + " [high]" in shown]
    assert seen == campaign[:5]  # the recovery text shows five ready items, not the whole list
    # The agent rebuilds its list from what it was shown, and starts new work.
    with Ledger(ledger_env) as lg:
        lg.write(
            todos(
                (seen[0], "in_progress"), *[(c, "pending") for c in seen[1:]], ("Write the report", "pending")
            ),
            writer="claude-code:s1",
        )
        final = state(lg)
    assert [c for c, s in final.items() if s == "cancelled"] == []
    assert len(final) == 13


def test_mcp_reply_names_drops(lg: Ledger) -> None:
    from todoledger.mcp.tools import PlanTools

    tools = PlanTools()
    tools.todowrite(
        {"todos": [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "pending"}]}, "m"
    )
    reply = tools.todowrite({"todos": [{"content": "B", "status": "pending"}]}, "m")
    assert reply["dropped"] == [{"id": reply["dropped"][0]["id"], "content": "A", "was": "in_progress"}]
    assert "you dropped 'A'" in reply["notices"][0]
    tools.close()


# A6: undo undoes your own change -----------------------------------------------------


def test_undo_with_a_writer_reverses_that_writers_change_not_someone_elses(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        a = lg.add("Check server", writer="alice")["id"]
        b = lg.add("Run benchmark", writer="alice")["id"]
        lg.done(a, writer="alice", evidence="200")
        lg.start(b, writer="bob")
    out = cli(ledger_env, "undo", "--writer", "alice", "--json")
    assert json.loads(out.stdout)["kind"] == "done"
    with Ledger(ledger_env) as lg:
        assert (lg.get(a)["status"], lg.get(b)["status"]) == ("pending", "in_progress")
    refused = cli(ledger_env, "undo", "--writer", "carol")
    assert refused.returncode == 1
    assert "nothing of carol's to undo in plan 'main'; the last change is start by bob" in refused.stderr
    # Undoing another writer's change is a person's: carol, an agent, is refused ...
    agent = cli(ledger_env, "undo", "--writer", "carol", "--any")
    assert agent.returncode == 1 and "undo --any of bob's change" in agent.stderr
    # ... the person at the command line (cli:tester, by their token) may.
    anyone = cli(ledger_env, "undo", "--any")
    assert "(not yours: bob's)" in anyone.stdout
    with Ledger(ledger_env) as lg:
        assert lg.get(b)["status"] == "pending"


def test_undo_refuses_to_overwrite_a_later_change(lg: Ledger) -> None:
    a = lg.add("Check server", writer="alice")["id"]
    lg.start(a, writer="alice")
    lg.done(a, writer="bob", evidence="ok")
    with pytest.raises(LedgerError, match=f"{a}'s status was changed since by bob"):
        lg.undo(writer="alice")
    assert lg.get(a)["status"] == "completed"


# A7: a call the agent's harness rejected is not applied -----------------------------


def _rollout(path: Path, *, refused: bool) -> None:
    meta = {
        "timestamp": "2026-11-01T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": "01a231d0-aaaa", "cwd": "/src/spectora"},
    }
    args = json.dumps(
        {
            "plan": [
                {"step": "Check server health", "status": "completed"},
                {"step": "Benchmark 16 draft tokens", "status": "in_progress"},
            ]
        }
    )
    call = {
        "timestamp": "2026-11-01T10:01:00Z",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "update_plan", "arguments": args, "call_id": "call_7"},
    }
    other = {
        "timestamp": "2026-11-01T10:01:01Z",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_6", "output": "ls: done"},
    }
    answer = {
        "timestamp": "2026-11-01T10:01:02Z",
        "type": "response_item",
        "payload": {
            "type": "function_call_output",
            "call_id": "call_7",
            "output": "unsupported call: update_plan" if refused else "Plan updated",
        },
    }
    path.write_text("\n".join(json.dumps(r) for r in (meta, call, other, answer)) + "\n")


def test_ingest_records_a_refused_update_plan_without_applying_it(lg: Ledger, tmp_path: Path) -> None:
    from todoledger.ingest.importer import ingest
    from todoledger.ingest.report import load

    rollout = tmp_path / "rollout-2026-11-01T10-00-00-01a231d0-aaaa.jsonl"
    _rollout(rollout, refused=True)
    result = ingest(lg, [str(rollout)])
    (session,) = result.sessions
    assert (session.calls, session.written, session.failed) == (1, 0, 1)
    assert lg.show(session.plan)["items"] == []
    report = load(lg, session.plan)
    (refusal,) = [f for f in report.findings if f.code == "refused-call"]
    assert "unsupported call: update_plan" in refusal.message and refusal.where == "L2"
    assert ingest(lg, [str(rollout)]).sessions[0].failed == 1  # again: nothing new is recorded
    assert len([o for o in lg.ops(session.plan) if o["kind"] == "refused"]) == 1


def test_an_accepted_update_plan_still_lands(lg: Ledger, tmp_path: Path) -> None:
    from todoledger.ingest.importer import ingest

    rollout = tmp_path / "rollout-2026-11-01T10-00-00-01a231d0-aaaa.jsonl"
    _rollout(rollout, refused=False)
    (session,) = ingest(lg, [str(rollout)]).sessions
    assert state(lg, session.plan) == {
        "Check server health": "completed",
        "Benchmark 16 draft tokens": "in_progress",
    }


def test_lint_refused_calls_are_told_in_the_story(lg: Ledger, tmp_path: Path) -> None:
    from todoledger.ingest.importer import ingest
    from todoledger.ingest.report import load

    line = {
        "type": "assistant",
        "sessionId": "s-dup",
        "cwd": "/src/kimi",
        "timestamp": "2026-02-10T10:00:00Z",
        "message": {
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "TodoWrite",
                    "input": {
                        "todos": [
                            {
                                "content": "Benchmark 16 speculative tokens",
                                "status": "pending",
                                "activeForm": "Benchmarking",
                                "priority": "high",
                            }
                        ]
                    },
                }
            ]
        },
    }
    transcript = tmp_path / "s-dup.jsonl"
    # The seeds' call put the priority in the status slot: lint refuses it.
    transcript.write_text(json.dumps(line).replace('"status": "pending"', '"status": "high"') + "\n")
    (session,) = ingest(lg, [str(transcript)]).sessions
    assert session.refused == 1 and lg.show(session.plan)["items"] == []
    (refusal,) = [f for f in load(lg, session.plan).findings if f.code == "refused-call"]
    assert 'refused: rejected: todos[0].status: status "high" is a priority value' in refusal.message


# "Finished" judged one way everywhere (found by an adversarial review) -------


def test_a_phase_completed_above_open_work_does_not_release_what_waits_for_it(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        phase = lg.add("Phase 1: train the drafter")["id"]
        child = lg.add("Convert the weights", parent=phase)["id"]
        grandchild = lg.add("Rename layers.0 to midlayer", parent=child)["id"]
        after = lg.add("Phase 2: benchmark", depends_on=[phase])["id"]
    refused = cli(ledger_env, "done", phase)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert f"cannot complete {phase}: work below it is still open" in refused.stderr
    forced = cli(ledger_env, "done", phase, "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    with Ledger(ledger_env) as lg:
        lg.update(child, status="completed", force=True)  # the grandchild is still open
        assert [e["new"] for e in lg.history(item=phase) if e["field"] == "forced"] == [
            {"past": "open sub-items"}
        ]
        row = {i["id"]: i for i in lg.show()["items"]}[after]
        assert (row["blocked"], row["ready"]) == (True, False)
        assert after not in [i["id"] for i in lg.next(limit=10)]
    start = cli(ledger_env, "start", after)
    assert start.returncode == 1
    assert f"{phase} 'Phase 1: train the drafter' (completed above open sub-items)" in start.stderr
    with Ledger(ledger_env) as lg:
        lg.update(grandchild, status="completed")
        assert after in [i["id"] for i in lg.next(limit=10)]


def test_start_and_done_refuse_what_waits_for_a_completion_whose_gate_has_not_passed(
    ledger_env: Path,
) -> None:
    with Ledger(ledger_env) as lg:
        disk = lg.add("Verify /data has 5.4T free")["id"]
        run = lg.add("Run inference", depends_on=[disk])["id"]
    assert cli(ledger_env, "gate", "add", disk, "cmd:false").returncode == 0
    reported = {
        "todos": [{"content": "Verify /data has 5.4T free", "status": "completed", "activeForm": "x"}]
    }
    assert (
        cli(ledger_env, "write", "--writer", "claude-code:s9", "-", stdin=json.dumps(reported)).returncode
        == 0
    )
    for verb in ("start", "done"):
        proc = cli(ledger_env, verb, run)
        assert proc.returncode == 1, proc.stdout
        assert f"{disk} 'Verify /data has 5.4T free' (completed, its gate has not passed)" in proc.stderr
    with Ledger(ledger_env) as lg:
        assert lg.get(run)["status"] == "pending"
    # Started past it all the same: the text view still says it is blocked.
    assert cli(ledger_env, "start", run, "--force").returncode == 0
    assert "Run inference (blocked)" in cli(ledger_env, "show").stdout


def test_a_negated_task_is_other_work_and_a_guessed_rewording_is_named(ledger_env: Path) -> None:
    first = {
        "todos": [
            {"content": "Migrate the users table", "status": "pending", "activeForm": "a"},
            {"content": "Remove the old API", "status": "pending", "activeForm": "b"},
        ]
    }
    second = {
        "todos": [
            {"content": "Migrate the orders table", "status": "completed", "activeForm": "a"},
            {"content": "Do not remove the old API", "status": "pending", "activeForm": "b"},
        ]
    }
    w = ("write", "--writer", "claude-code:s1", "--json", "-")
    assert cli(ledger_env, *w, stdin=json.dumps(first)).returncode == 0
    reply = json.loads(cli(ledger_env, *w, stdin=json.dumps(second)).stdout)
    with Ledger(ledger_env) as lg:
        rows = {i["content"]: i for i in lg.show()["items"]}
    # The negation is new work; the old task was left out, and says so.
    assert rows["Remove the old API"]["status"] == "dropped"
    assert rows["Do not remove the old API"]["status"] == "pending"
    # A close text is still paired, and the writer is told which item it took over.
    migrated = rows["Migrate the orders table"]["id"]
    assert reply["notices"] == [
        f"'Migrate the orders table' was taken as a rewording of 'Migrate the users table' ({migrated}),"
        " which was pending: if it is other work, list that item again"
    ]


def test_the_check_a_completion_has_not_passed_is_not_removed_without_force(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        server = lg.add("Launch the server")["id"]
        bench = lg.add("Benchmark", depends_on=[server])["id"]
    gate = json.loads(cli(ledger_env, "gate", "add", server, "cmd:false", "--json").stdout)["id"]
    assert cli(ledger_env, "done", server, "--force", "--reason", "trust me").returncode == 0
    refused = cli(ledger_env, "gate", "remove", gate)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert f"{gate} is a check of {server}, which was completed without passing it (failed)" in refused.stderr
    with Ledger(ledger_env) as lg:
        assert {i["id"]: i for i in lg.show()["items"]}[server]["verification"] == "failed"
        assert bench not in [i["id"] for i in lg.next(limit=5)]
    assert cli(ledger_env, "gate", "remove", gate, "--force").returncode == 0
    with Ledger(ledger_env) as lg:
        forced = [e["new"] for e in lg.history(item=server) if e["field"] == "forced"]
        assert {"past": "check removal", "check": gate, "was": "failed"} in forced


def test_every_reading_of_the_plan_says_what_a_completion_was_forced_past(ledger_env: Path) -> None:
    """A forced completion reads as done in `show`, `prime` and the JSON an
    agent reads: each says what it overrode, with the reason, until the item
    changes status again."""
    with Ledger(ledger_env) as lg:
        phase = lg.add("Phase 1: train the drafter")["id"]
        step = lg.add("Convert the weights", parent=phase)["id"]
        deploy = lg.add("Deploy the server", depends_on=[phase])["id"]
        plain = lg.add("Write the notes")["id"]
    assert (
        cli(ledger_env, "done", phase, "--force", "--reason", "the weights are converted by hand").returncode
        == 0
    )
    assert cli(ledger_env, "done", deploy, "--force").returncode == 0
    assert cli(ledger_env, "done", plain).returncode == 0
    shown = {i["id"]: i for i in json.loads(cli(ledger_env, "show", "--json").stdout)["items"]}
    assert shown[phase]["forced"] == [
        {"past": "open sub-items", "reason": "the weights are converted by hand"}
    ]
    assert shown[deploy]["forced"] == [{"past": "prerequisites", "open": [phase]}]
    assert shown[plain]["forced"] == [] and shown[step]["forced"] == []
    text = cli(ledger_env, "show").stdout
    assert "Phase 1: train the drafter  forced past open sub-items" in text
    assert "forced past open prerequisites" in text.split("Deploy the server", 1)[1].splitlines()[0]
    assert "Write the notes" not in text  # completed, not forced: folded into the count
    everything = cli(ledger_env, "show", "--all").stdout
    assert "forced" not in everything.split("Write the notes", 1)[1].splitlines()[0]
    prime = cli(ledger_env, "prime").stdout
    assert "Deploy the server [medium] (forced past open prerequisites)" in prime
    from todoledger.web.pages import verification_text

    with Ledger(ledger_env) as lg:  # the board's verification column
        board = {it.id: verification_text(it) for it in lg.view().items}
    assert board[deploy] == "reported; forced past open prerequisites"
    assert board[plain] == "reported"
    from todoledger.mcp.tools import PlanTools

    tools = PlanTools()
    try:
        recent = {r["id"]: r for r in tools.todoread({}, "mcp:agent:1")["recent"]}
    finally:
        tools.close()
    assert recent[deploy]["forced"] == ["forced past open prerequisites"] and "forced" not in recent[plain]
    # Reopened and completed in order: no longer forced.
    with Ledger(ledger_env) as lg:
        lg.update(deploy, status="pending")
        lg.update(step, status="completed")
        lg.done(deploy)
        assert {i["id"]: i["forced"] for i in lg.show()["items"]}[deploy] == []
        assert {i["id"]: i["forced"] for i in lg.show()["items"]}[phase] != []


def test_report_finds_work_waiting_for_a_cancelled_item_and_forced_statuses(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        dropped = lg.add("Benchmark on the old server")["id"]
        waiting = lg.add("Compare against the old server", depends_on=[dropped])["id"]
        phase = lg.add("Phase 1")["id"]
        lg.add("Step 1.1", parent=phase)
        lg.cancel(dropped, reason="the old server is gone")
        lg.done(phase, force=True, force_reason="closing the phase early")
    report = json.loads(cli(ledger_env, "report", "main", "--json").stdout)
    found = {(f["code"], tuple(f["items"])): f["message"] for f in report["findings"]}
    assert found[("waits-for-cancelled", (waiting,))] == (
        f'"Compare against the old server" waits for a cancelled item ({dropped}): remove or re-point the dependency'
    )
    assert found[("forced", (phase,))] == '"Phase 1" is completed, forced past open sub-items'
    markdown = cli(ledger_env, "report", "main").stdout
    assert (
        "waiting for a cancelled or dropped item" in markdown
        and "status forced past what it waited for" in markdown
    )
