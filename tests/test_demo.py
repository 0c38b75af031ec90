"""The demo tells the seeds' story and nothing else, with the same ids on every run.

Every finding that `report` prints on the demo plans is checked against a list
of seed facts kept here (SEED_FACTS), each with its seed file and a verbatim
phrase that the test finds in the vendored seed text: an invented duration, a
manufactured drop or a status the seeds do not give fails."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin, with_test_clock
from todoledger import Ledger, LedgerError
from todoledger.core.ids import new_id, seeded
from todoledger.demo import (
    AGENT,
    ASSUMPTIONS,
    BEATS_CATID,
    BEFORE_4950,
    CALLS,
    FACTS,
    LEFT_OUT_4350,
    PHASE_0,
    PHASE_ITEMS,
    QWEN_BASELINE,
    REFUSED_4329,
    REVIEWER,
    SWEEP,
    THREE_X,
    THREE_X_NOTE,
    load_demo,
    sweep_item,
)
from todoledger.ingest.report import load as load_report
from todoledger.ingest.report import render_md


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import act_as_person

    with_test_clock(ledger_env)  # type: ignore[arg-type]  # a few tests fix the clock (TODOLEDGER_NOW)
    act_as_person(ledger_env, monkeypatch)  # type: ignore[arg-type]


# The seeds, vendored (tests/data/README.md): a clone has no shared/ beside it.
SEEDS = Path(__file__).resolve().parent / "data" / "seeds"


def seed(number: str) -> str:
    (path,) = SEEDS.glob(f"{number}_*.txt")
    return path.read_text()


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


# The reviewer's own arithmetic on the seeds' figures, each checked here: "a x b = c", "a / b = c".
ARITHMETIC = re.compile(r"(\d[\d,.]*\d|\d) ([x/]) (\d[\d,.]*\d|\d) = (\d[\d,.]*\d|\d)x?")


def test_every_number_the_reviewer_writes_is_in_the_seeds_or_its_stated_arithmetic() -> None:
    text = seeds_text().replace(",", "")
    from todoledger.demo_checks import CLAIM_GATES

    written = [a.text + " " + a.source for a in ASSUMPTIONS] + [value for *_, value in FACTS]
    written += [note for *_, note in CLAIM_GATES]  # the reviewer's gates on the agent's claims
    written += [f"{c} {said}" for c, _, said in [*REFUSED_4329, *BEFORE_4950]]
    written += [BEATS_CATID, THREE_X, THREE_X_NOTE, LEFT_OUT_4350]
    for sentence in written:
        sentence = re.sub(r"[Ss]eeds? \d{3}( and \d{3})?", "", sentence)  # which seed: file names
        for a, op, b, c in ARITHMETIC.findall(sentence):
            x, y, z = (float(v.replace(",", "")) for v in (a, b, c))
            assert abs((x * y if op == "x" else x / y) - z) < 0.01, (a, op, b, c)
            for given in (a, b):
                assert given.replace(",", "") in text, (given, sentence)
        sentence = ARITHMETIC.sub("", sentence)
        for number in re.findall(r"\d[\d,.]*\d|\d", sentence):
            assert number.replace(",", "") in text, (number, sentence)


# Every finding the demo's reports print, as the seed facts that back it: (finding code, the
# item's text or None) -> [(seed file, verbatim phrase)]. A finding with no fact here fails, and
# so does a fact whose phrase is not in its seed: the list cannot merely repeat the output.
SEED_FACTS: dict[tuple[str, str | None], list[tuple[str, str]]] = {
    ("refused-call", None): [("003", '"priority":"pending","priority":"high"')],
    ("truncated", "Stop vLLM, extract hidden states from synthetic data on /data..."): [
        ("002", "The fourth item is truncated in the conversation data")
    ],
    ("truncated", "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..."): [
        ("001", "the assistant truncated the description of Phase 0.3")
    ],
    ("lint", None): [("002", "extract hidden states from synthetic data on /data...")],
    # Left out of the next quoted list, with the lists between not seen (never "dropped").
    **{
        ("left-out-unseen", text): [("002", f'"content": "{text}"'), ("000", '{"todos":[{"content":"Check')]
        for text in (
            "Wait for vLLM server to finish loading",
            "Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base",
            "Run inference: 25K samples from open-perfectblend, C=200, max 8K tokens, save to /data",
            "Stop vLLM, extract hidden states from synthetic data on /data...",
        )
    },
    **{
        ("left-out-unseen", text): [
            ("000", f'"content":"{text}"'),
            ("001", '"content": "Phase 0: Quick Probe'),
        ]
        for text in (
            "Check if SGLang EAGLE3 server is still running on container",
            "SCP and run benchmark_eagle3.py on container (16 draft tokens)",
            "Benchmark with 10 draft tokens",
            "Benchmark with 5 draft tokens",
        )
    },
    (
        "completed-unseen",
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
    ): [("001", 'Phase 0.2 went from "pending" to "completed"')],
    ("left-open", PHASE_0): [("001", f'{{"content":"{PHASE_0}","priority":"high","status":"in_progress"}}')],
    ("left-open", "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..."): [
        ("001", "what remains (launching the server, running the benchmark)")
    ],
    ("completed-unseen", QWEN_BASELINE): [("004", "marking one task as completed")],
    ("single-run", QWEN_BASELINE): [
        (
            "004",
            "The assistant marked the baseline benchmark as completed after a single run at each concurrency level",
        )
    ],
    ("left-open", "Test NEXTN MTP speculative decoding"): [
        ("004", '{"content":"Test NEXTN MTP speculative decoding","priority":"high","status":"in_progress"}')
    ],
    ("left-open", "Test custom all-reduce (remove --disable-custom-all-reduce)"): [
        (
            "004",
            '"content": "Test custom all-reduce (remove --disable-custom-all-reduce)",\n    "status": "pending"',
        )
    ],
    ("left-open", "Benchmark best config at multiple concurrency levels"): [
        ("004", '"content": "Benchmark best config at multiple concurrency levels",\n    "status": "pending"')
    ],
}


def test_every_finding_of_the_demo_reports_is_a_seed_fact(lg: Ledger) -> None:
    used = set()
    for plan in ("demo", "demo-qwen"):
        report = load_report(lg, plan)
        for f in report.findings:
            text = lg.get(f.items[0], plan)["content"] if f.items else None
            key = (f.code, text) if (f.code, text) in SEED_FACTS else (f.code, None)
            assert key in SEED_FACTS, f"no seed fact backs this finding: {f.code}: {f.message}"
            used.add(key)
    for key, facts in SEED_FACTS.items():
        assert key in used, f"a seed fact no finding uses (stale): {key}"
        for number, phrase in facts:
            assert phrase in seed(number), f"not in seed {number}: {phrase!r}"


def test_no_clock_no_duration_the_story_by_sequence(lg: Ledger) -> None:
    """The seeds give message numbers, not times: the ops say so, and the reports show
    no time and no duration (an invented 47.5 h would fail here)."""
    for plan in ("demo", "demo-qwen"):
        ops = lg.ops(plan)
        assert ops and all(o["untimed"] for o in ops)
        calls = [o for o in ops if o["writer"] == AGENT]
        assert [o["source_msg"] for o in calls] == [
            c.msg for c in CALLS if plan.endswith("qwen") == (c.msg == 6000)
        ]
        report = load_report(lg, plan)
        md = render_md(report)
        assert "times not recorded" in md
        assert not re.search(r"\b\d+(\.\d+)? ?(h|min|s)\b", md.replace("msg", "")), "a duration in the report"
        assert not re.search(r"\d{4}-\d\d-\d\dT", md), "a clock time in the report"
        assert "stuck-in-progress" not in {f.code for f in report.findings}
        from todoledger.ingest.report import to_dict

        doc = to_dict(report)
        assert doc["times"] == "not recorded" and all("seconds" not in i for i in doc["items"])
    assert lg.durations("demo") == {}


def test_the_refused_call_is_the_agents_and_its_content_the_reviewers_citing_seed_003(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    report = load_report(lg, "demo")
    (refused,) = [f for f in report.findings if f.code == "refused-call"]
    assert refused.where == "msg 4329 (seed 003)" and 'duplicate key "priority"' in refused.message
    for content, _, _ in REFUSED_4329:
        it = items[content]
        assert it["created_by"] == REVIEWER
        assert "seed 003" in (it["evidence"] or "") + (it["notes"] or "")
    train = items["Train EAGLE-3 (4 GPUs, 5 epochs)"]
    assert train["status"] == "completed"
    for fact in ("10.8-hour", "37,312", "74.7%"):
        assert fact in train["evidence"]
    assert items["Fix weight keys (layers.0 -> midlayer) for SGLang"]["status"] == "completed"
    # The open ones are closed when msg 4350's list leaves them out, as the agent's own items are.
    deploy = items["Deploy SGLang with EAGLE3 drafter (16 spec tokens)"]
    assert (deploy["status"], deploy["reason"]) == ("cancelled", LEFT_OUT_4350)
    history = lg.history("demo", item=deploy["id"])
    assert [e["new"] for e in history if e["field"] == "status"] == ["cancelled"]
    assert history[0]["new"]["status"] == "in_progress"  # as seed 003 says the call held it
    assert not [o for o in lg.ops("demo") if o["writer"] == AGENT and o["kind"] == "add"]


def test_nothing_is_said_dropped_and_the_lists_between_are_said_unseen(lg: Ledger) -> None:
    report = load_report(lg, "demo")
    codes = {f.code for f in report.findings}
    assert "dropped" not in codes and "completed-without-progress" not in codes
    left = {
        lg.get(f.items[0], "demo")["content"]: f.message
        for f in report.findings
        if f.code == "left-out-unseen"
    }
    assert (
        "no list between msg 2871 (seed 002) and msg 4350 (seed 000) was seen"
        in left["Wait for vLLM server to finish loading"]
    )
    assert "(msg 4329 (seed 003) was refused)" in left["Wait for vLLM server to finish loading"]
    assert "in progress at msg 2871 (seed 002)" in left["Wait for vLLM server to finish loading"]
    for item in lg.show("demo")["items"]:
        if item["status"] == "cancelled":
            assert item["reason"] in (f"dropped by {AGENT}", LEFT_OUT_4350), item


def test_phase_0_1_went_through_progress_as_seed_001_says(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    one = items["Phase 0.1: Kill any existing server processes"]
    statuses = [
        e["new"]["status"] if e["field"] == "created" else e["new"]
        for e in lg.history("demo", item=one["id"])
        if e["field"] in ("created", "status")
    ]
    assert statuses == ["in_progress", "completed"]
    for child in PHASE_ITEMS:
        assert items[child]["parent"] == items[PHASE_0]["id"]


def test_the_heading_counts_only_the_agents_todo_calls(lg: Ledger) -> None:
    from todoledger.ingest.report import headline

    first = headline(load_report(lg, "demo"))[0]
    assert first.startswith(f"4 todo calls by {AGENT}, msg 2871 (seed 002) to msg 4950 (seed 001);")
    assert REVIEWER not in first
    assert "kimi" not in AGENT.lower() and "kimi" not in headline(load_report(lg, "demo-qwen"))[0].lower()


def test_the_reviewers_later_items_are_not_left_open_at_the_last_call(lg: Ledger) -> None:
    for plan in ("demo", "demo-qwen"):
        for f in load_report(lg, plan).findings:
            if f.code == "left-open":
                assert lg.get(f.items[0], plan)["created_by"] != REVIEWER or f.items[0] in {
                    i["id"]
                    for i in lg.show(plan)["items"]
                    if i["content"] in dict((c, s) for c, s, _ in BEFORE_4950)
                }


def test_verify_items_gate_the_work_they_guard(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    launch = items["Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..."]
    norm = items["Verify norm_before_residual in the AQ-MedAI drafter config"]
    assert norm["id"] in launch["depends_on"] and launch["blocked"] and not launch["ready"]
    for a in ASSUMPTIONS:
        plan = "demo" if a.plan == "kimi" else "demo-qwen"
        rows = by_content(lg, plan)
        verify = rows[a.text]
        assert a.source.startswith("seed 00") and verify["notes"].startswith(a.source)
        for guarded in a.guards:
            assert verify["id"] in rows[guarded]["depends_on"], (a.text, guarded)
            assert rows[guarded]["blocked"]
    blocked = [i for i in lg.show("demo")["items"] if i["blocked"] and i["status"] == "pending"]
    assert len(blocked) >= 5


def test_the_sweep_runs_nothing_and_its_baseline_carries_seed_001s_82_typed(lg: Ledger) -> None:
    """Seed 001 reports a baseline of 82 tok/s and 60 with the drafter, the setting not named
    (issue 31): 82 is typed on the baseline's row, 60 on no row, and no row claims a run."""
    (sweep,) = lg.sweeps(plan="demo")
    assert sweep["name"] == SWEEP
    results = lg.sweep_results(SWEEP, plan="demo")
    assert {r["params"]["draft_tokens"] for r in results["rows"]} == {"16", "10", "5", "0"}
    items = by_content(lg, "demo")
    for tokens in ("16", "10", "5", "0"):
        it = items[sweep_item(tokens)]
        assert it["status"] == "pending" and it["created_by"] == REVIEWER
        assert lg.receipts(it["id"], plan="demo") == []
        numbers = [(m["name"], m["value"]) for m in lg.metrics(it["id"], plan="demo")]
        assert numbers == ([("tok_s", 82.0)] if tokens == "0" else []), tokens
    assert "The current baseline throughput was 82 tokens per second" in seed("001")
    parent = next(i for i in lg.show("demo")["items"] if i["id"] == sweep["parent"])
    assert (
        "82 tok/s" in parent["notes"]
        and "without naming the draft-token setting that gave 60" in parent["notes"]
    )
    assert "never run" not in "\n".join(i.get("notes") or "" for i in lg.show("demo")["items"])


def test_the_3x_claim_is_caught_by_the_metric_ledger_and_the_baseline_by_one_run(lg: Ledger) -> None:
    qwen = by_content(lg, "demo-qwen")
    claim, base = qwen[THREE_X], qwen[QWEN_BASELINE]
    (receipt,) = lg.receipts(claim["id"], plan="demo-qwen")
    assert receipt["result"] == "fails" and "tok_s_c32 = 2156 (needs >= 4119)" in receipt["output"]
    assert (claim["status"], claim["verification"]) == ("pending", "failed")
    assert "2,156 / 1,373 = 1.57x" in claim["notes"]
    assert abs(2156 / 1373 - 1.57) < 0.005
    (held,) = lg.receipts(base["id"], plan="demo-qwen")
    assert held["result"] == "holds" and "needs > 1373" in held["output"]
    report = load_report(lg, "demo-qwen")
    (single,) = [f for f in report.findings if f.code == "single-run"]
    # What the record shows: one run; nothing in the plan's own words asked for a number of them.
    assert single.items == [base["id"]] and single.message.endswith("completed after 1 recorded run")
    phrase = "This is already 3x catid's result"
    assert phrase in seed("004") and "1373 tok/s at C=32 with 4 GPUs" in seed("004")


def test_in_progress_is_the_writer_who_started_it(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    assert lg.started_by("demo") == {items[PHASE_0]["id"]: AGENT}
    # Given the items in progress (the board's view has them), the same answer.
    assert lg.started_by("demo", ids=[items[PHASE_0]["id"]]) == {items[PHASE_0]["id"]: AGENT}
    assert items[PHASE_0]["updated_by"] == REVIEWER  # the reviewer's note touched it last


def test_assumptions_stay_pending_with_the_disk_figures(lg: Ledger) -> None:
    items = {**by_content(lg, "demo"), **by_content(lg, "demo-qwen")}
    verify = {a.text: items[a.text] for a in ASSUMPTIONS}
    assert {i["status"] for i in verify.values()} == {"pending"}
    assert {i["created_by"] for i in verify.values()} == {REVIEWER}
    disk = next(i for c, i in verify.items() if "/data has room" in c)
    assert "5.4 TB" in disk["content"] and "2.8 TB" in disk["content"]
    assert "demo --checks" not in "".join(i["notes"] for i in verify.values())  # no note promises a check


def test_the_drafter_is_trained_from_scratch_and_never_shown_fine_tuned(lg: Ledger) -> None:
    items = by_content(lg, "demo")
    download = items["Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base"]
    assert download["status"] == "dropped"  # the plan at msg 2871, left out later
    assert "trained from scratch" in download["notes"] and "37,312 samples" in download["notes"]
    finished = [i for i in items.values() if i["status"] == "completed"]
    assert not [i for i in finished if "fine" in (i["content"] + (i["evidence"] or "")).lower()]


def test_qwen_campaign_has_its_own_plan_and_figures(lg: Ledger) -> None:
    qwen = by_content(lg, "demo-qwen")
    base = qwen[QWEN_BASELINE]
    assert base["status"] == "completed"
    assert "172 tok/s at C=1" in base["evidence"] and "2,156 tok/s at C=32" in base["evidence"]
    assert "one run per concurrency level" in base["evidence"]
    assert not any("Qwen" in c or "NEXTN" in c for c in by_content(lg, "demo"))
    assert "Test NEXTN MTP speculative decoding" in qwen


def demo_output(db: Path, *args: str) -> str:
    proc = subprocess.run(
        [todoledger_bin(), "demo", *args], capture_output=True, text=True, env=subprocess_env(db), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_line_the_demo_prints_cites_a_seed_or_is_the_reviewers(ledger_env: Path) -> None:
    out = demo_output(ledger_env)
    story = out[: out.index("\nplan demo ")].splitlines()
    text = seeds_text().replace(",", "")
    heads = [ln for ln in story if not ln.startswith(" ")]
    for line in heads:
        assert re.match(r"msg \d+ \(seed 00\d\)", line) or "the reviewer" in line, line
    current = ""
    for line in story:
        if not line.startswith(" "):
            current = line
            continue
        # A line under a call is the ledger's own reading of it, or the reviewer's, labelled.
        assert current.startswith("msg ") or "reviewer" in current, line
        assert line.strip().startswith(("warning:", "the reviewer", "before it, the reviewer")) or (
            "list" in line or "seed" in line
        ), line
    for number in re.findall(
        r"\d[\d,.]*\d|\d", re.sub(r"seed \d{3}|todos\[\d\]|1\.57x", "", "\n".join(story))
    ):
        assert number.replace(",", "") in text, number
    assert "1.57x" in out and "dropped" not in "\n".join(story)
    assert not re.search(r"\b\d+(\.\d+)? h\b(?! \()", "\n".join(story).replace("~10.8 h", ""))


def test_demo_ids_are_the_same_on_every_run_and_a_second_load_changes_nothing(tmp_path: Path) -> None:
    def story(ledger: Ledger, plan: str) -> list[Any]:  # when it was recorded is not the story
        return [{k: v for k, v in e.items() if k != "at"} for e in ledger.history(plan)]

    views = []
    for n in range(2):
        with Ledger(tmp_path / f"run{n}.db") as ledger:
            load_demo(ledger)
            views.append((ledger.show("demo"), ledger.show("demo-qwen"), story(ledger, "demo")))
    strip = [[{k: v for k, v in i.items() if not k.endswith("_at")} for i in v[0]["items"]] for v in views]
    assert strip[0] == strip[1] and views[0][2] == views[1][2]
    with Ledger(tmp_path / "run0.db") as ledger:
        before = ledger.show("demo")["revision"]
        again = load_demo(ledger)
        assert not again.created and ledger.show("demo")["revision"] == before
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
        env=subprocess_env(db, **{"TODOLEDGER_TOKEN": "", **env}),  # the tester's token is another ledger's
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
    with_test_clock(db)
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

    from todoledger.demo_checks import DISK_ITEM, SCRIPT_ITEM, SERVER_ITEM, run_checks

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
        # The stand-ins' checks are the Verify items' own; the seed's note stays, the stand-in's follows.
        for start, spec in ((DISK_ITEM, "disk:"), (SERVER_ITEM, "http://127.0.0.1:"), (SCRIPT_ITEM, "cmd:")):
            it = next(i for c, i in items.items() if c.startswith(start))
            (check,) = ledger.checks([it["id"]], plan="demo")
            assert check.check.text().startswith(spec) and it["status"] == "pending"
            source = next(a.source for a in ASSUMPTIONS if a.text == it["content"])
            assert it["notes"].startswith(source) and "Stand-in check (demo --checks)" in it["notes"]
        # The replayed subagent's "verification" by saying so is refused, and nothing changes.
        with pytest.raises(LedgerError, match="not completed: gate disk:"):
            ledger.done(disk["id"], plan="demo", evidence="2.8T avail; estimate needs ~5.4T")
        assert ledger.get(disk["id"], "demo")["status"] == "pending"
        assert not [c for c in items if c.startswith("Stand-in:")]  # no separate stand-in items
        # The sweep: 16 draft tokens and the baseline only (the seeds give no 10- or 5-token figure).
        rows = {r["params"]["draft_tokens"]: r for r in ran.sweep["rows"]}
        assert set(rows) == {"16", "0"}
        values = {m["item"]: [] for m in ledger.metrics(plan="demo")}
        for m in ledger.metrics(plan="demo"):
            values[m["item"]].append(m["value"])
        title = "Benchmark {} draft tokens (stand-in server, SIMULATED figures)"
        sixteen, base = items[title.format(16)]["id"], items[title.format(0) + " (baseline)"]["id"]
        # The parent reads as its template filled with the values, not as the raw template.
        assert items[title.format(16) + "; baseline 0"]["status"] == "completed"
        # One stand-in server per combination: each run was served by its own setting's server.
        receipts = [r for r in ledger.receipts(plan="demo") if r["item"] in (sixteen, base)]
        for r in receipts:
            wanted = "16" if r["item"] == sixteen else "0"
            assert f"STAND-IN draft_tokens={wanted} " in r["output"] and r["env"]["params"] == {
                "draft_tokens": wanted
            }
        # The first server left a worker on purpose; the teardown, waiting for the port, named it and
        # stopped the sweep before the baseline, whose ready check the worker would have answered.
        stop = next(line for line in ran.story if "stopped after draft_tokens=16" in line)
        assert "its teardown could not free port" in stop and "standin_server.py --port" in stop
        assert ran.story.index(stop) < next(
            n for n, line in enumerate(ran.story) if line.startswith("draft_tokens=0: ready")
        )
        assert ran.story[-1].startswith("draft_tokens=0: clean: nothing listens on 127.0.0.1:")
        assert sum(1 for line in ran.story if "warm-up 1/1 holds (not counted)" in line) == 2
        # The 10- and 5-token runs stay as the seeds left them: planned (then left out of a later
        # list), never run: no check, no number, never completed.
        for text in ("Benchmark with 10 draft tokens", "Benchmark with 5 draft tokens"):
            planned = items[text]
            assert planned["status"] in ("pending", "dropped")
            assert not [c for c in ledger.checks(plan="demo") if c.item == planned["id"]]
            assert not [m for m in ledger.metrics(plan="demo") if m["item"] == planned["id"]]
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
            (QWEN_BASELINE, "holds"),  # the plain demo's gate: it beats catid's 1373 at C=32
            (QWEN_BASELINE, "fails"),  # and the repeats it never had
        ]
        kimi, qwen = load_report(ledger, "demo"), load_report(ledger, "demo-qwen")
        notes = by_content(ledger, "demo")[PHASE_02]["notes"]
        qwen_item = by_content(ledger, "demo-qwen")[QWEN_BASELINE]
    assert notes.endswith(CLAIM_GATES[0][3]) and notes.startswith("Seed 001: Phase 0.2 went")  # the fact kept
    assert qwen_item["notes"] == f"{BEATS_CATID}\n{CLAIM_GATES[1][3]}"
    assert all(note.startswith("Reviewer's gate on the agent's claim (seed 00") for *_, note in CLAIM_GATES)
    assert (qwen_item["status"], qwen_item["verification"]) == ("completed", "failed")
    agents = {c.content: c.how() for c in kimi.claims.items if c.claimed_by == AGENT}
    assert agents == {
        "Phase 0.1: Kill any existing server processes": "reported",
        PHASE_02: "stand-in",  # the gate reads a config.json the demo wrote: no proof of the seeds' claim
    }
    assert [(c.claimed_by, c.content, c.how()) for c in qwen.claims.items] == [
        (AGENT, QWEN_BASELINE, "failed")
    ]
    # writer, claimed, independent, checked not proven, reported, failed/stale, reopened, forced, gate removed
    assert [r for r in kimi.claims.rows() if r[0] == AGENT] == [
        (AGENT, "2", "0", "1", "1", "0", "0", "0", "0")
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
    assert re.search(
        r"Phase 0\.2: Prepare AQ-MedAI .*: holds: cmd:.*: holds, but on a file the demo wrote: a stand-in",
        gates,
    )
    assert re.search(r"Benchmark current baseline .*: fails: file:.*: refused: the gate does not hold", gates)
    again = demo_output(ledger_env)  # loaded once: a second run says so and changes nothing
    assert again.startswith("(demo plans demo, demo-qwen already loaded; --plan NEW loads a fresh copy)")
    refused = subprocess.run(
        [todoledger_bin(), "demo", "--checks"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert refused.returncode != 0 and "already ran in plan 'demo'" in refused.stderr


def test_demo_checks_repeat_their_ids_and_simulated_figures(tmp_path: Path) -> None:
    from todoledger.demo_checks import run_checks

    seen = []
    for n in range(2):
        with Ledger(tmp_path / f"run{n}.db") as ledger:
            load_demo(ledger)
            run_checks(ledger)
            items = [(i["id"], i["content"], i["status"]) for i in ledger.show("demo")["items"]]
            numbers = [(m["item"], m["value"]) for m in ledger.metrics(plan="demo")]
            # Checks list in the order they were written; two written in one millisecond tie
            # on time and fall back to their ids: the ids repeat, compared as a set.
            seen.append((items, numbers, sorted(c.id for c in ledger.checks(plan="demo"))))
    assert seen[0] == seen[1]
