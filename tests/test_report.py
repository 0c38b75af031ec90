"""`todoledger report`: each finding on a small plan written for it, the
three renderings, escaping of untrusted text, and speed on a long session."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from todoledger.cli.main import cli
from todoledger.ingest.report import load, render_md
from todoledger.ledger import Ledger


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import act_as_person

    act_as_person(ledger_env, monkeypatch)  # type: ignore[arg-type]


PLAN = "demo/abcd1234"


def at(minute: float) -> str:
    stamp = dt.datetime(2025, 5, 1, 9, tzinfo=dt.UTC) + dt.timedelta(minutes=minute)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write(lg: Ledger, minute: float, *items: tuple[str, str], writer: str = "codex:s1", n: int = 0) -> None:
    payload = {"plan": [{"step": c, "status": s} for c, s in items]}
    lg.write(
        payload,
        plan=PLAN,
        writer=writer,
        dialect="codex",
        at=at(minute),
        source_key=f"codex:s1:c{minute}",
        source_at=f"L{n}",
    )


def codes(lg: Ledger) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in load(lg, PLAN).findings:
        out.setdefault(f.code, []).append(f.message)
    return out


def test_a_clean_plan_has_nothing_to_report() -> None:
    with Ledger() as lg:
        write(lg, 0, ("Build", "in_progress"), ("Test", "pending"), n=3)
        write(lg, 5, ("Build", "completed"), ("Test", "in_progress"), n=9)
        write(lg, 9, ("Build", "completed"), ("Test", "completed"), n=20)
        # Nothing was wrong with how the list was kept; only nothing backs the "done".
        [bare] = load(lg, PLAN).findings
        assert (bare.code, bare.where) == ("completed-without-evidence", "L9")
        assert "2 completed on the agent's word" in bare.message
        for item in lg.show(PLAN)["items"]:
            lg.update(item["id"], plan=PLAN, evidence="pytest: 12 passed")
        report = load(lg, PLAN)
    assert report.findings == []
    assert [len(p.items) for p in report.story.phases] == [2]
    assert report.final() == {"completed": 2}
    text = render_md(report)
    assert "Nothing: no item skipped progress" in text
    assert "| 1 | 2025-05-01T09:00:00.000Z | 2025-05-01T09:09:00.000Z | 9.0 min | 2 | 2 | Build |" in text


def test_every_anomaly_is_found_with_its_line() -> None:
    with Ledger() as lg:
        write(
            lg, 0, ("Plan the work", "in_progress"), ("Write code", "pending"), ("Write docs", "pending"), n=5
        )
        write(
            lg, 1, ("Plan the work", "completed"), ("Write code", "completed"), ("Write docs", "pending"), n=8
        )
        write(
            lg,
            2,
            ("Plan the work", "completed"),
            ("Write code", "in_progress"),
            ("Write docs", "in_progress"),
            n=12,
        )
        write(lg, 40, ("Plan the work", "completed"), ("Write code", "completed"), n=30)
        write(
            lg, 41, ("Plan the work", "completed"), ("Write code", "completed"), ("Deploy", "pending"), n=33
        )
        found = codes(lg)
        where = {f.code: f.where for f in load(lg, PLAN).findings}
    assert found["completed-without-progress"] == ['"Write code" went pending → completed']
    assert found["went-backwards"] == ['"Write code" went completed → in_progress']
    assert found["parallel-in-progress"] == ['2 items in progress: "Write code", "Write docs"']
    assert found["dropped"] == ['"Write docs" was left out of the list while open']
    assert found["left-open"] == ['"Deploy" was still pending at the last call']
    assert where["went-backwards"] == "L12"
    assert where["dropped"] == "L30"


def test_stuck_in_progress_needs_a_real_outlier() -> None:
    with Ledger() as lg:
        steps = ["A", "B", "C", "D"]
        times = [0, 2, 4, 6, 60]  # D takes 54 minutes, the others 2
        for i, minute in enumerate(times):
            write(
                lg,
                minute,
                *[
                    (s, "completed" if j < i else "in_progress" if j == i else "pending")
                    for j, s in enumerate(steps)
                ],
                n=i,
            )
        found = codes(lg)
    assert found["stuck-in-progress"] == ['"D" in progress 54.0 min; median 2.0 min']


def test_duplicates_truncation_unrelated_rewording_and_lint() -> None:
    with Ledger() as lg:
        # Claude Tasks updates trust the task id, so an unrelated new subject is a rewording.
        lg.write(
            {"subject": "Set up the build"},
            plan=PLAN,
            writer="claude-code:s",
            response={"task": {"id": "1", "subject": "Set up the build"}},
            at=at(0),
            source_key="k1",
            source_at="L1",
        )
        lg.write(
            {"taskId": "1", "subject": "Completely different work here"},
            plan=PLAN,
            writer="claude-code:s",
            at=at(1),
            source_key="k2",
            source_at="L2",
        )
        lg.write(
            {
                "plan": [
                    {"step": "Refactor the ingest readers so that", "status": "pending"},
                    {"step": "Set up the build...", "status": "pending"},
                ]
            },
            plan=PLAN,
            writer="codex:x",
            dialect="codex",
            at=at(2),
            source_key="k3",
            source_at="L3",
        )
        lg.write(
            {"plan": [{"step": "Ship it", "status": "pending"}, {"step": "ship  it", "status": "pending"}]},
            plan=PLAN,
            writer="codex:y",
            dialect="codex",
            at=at(3),
            source_key="k4",
            source_at="L4",
        )
        found = codes(lg)
    assert found["unrelated-rewording"] == [
        '"Set up the build" became "Completely different work here": the same item id reused'
    ]
    assert found["truncated"] == ['"Set up the build..." ends with an ellipsis']
    assert found["duplicate"] == ['"Ship it" appears 2 times']
    assert any("looks truncated" in m for m in found["lint"])


HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)> & "quotes" | pipe'


def _hostile_plan() -> None:
    with Ledger() as lg:
        write(lg, 0, (HOSTILE, "in_progress"), ("Second </script> step", "pending"), n=1)
        write(lg, 3, (HOSTILE, "completed"), ("Second </script> step", "in_progress"), n=2)


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    _hostile_plan()
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", PLAN, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script") == 2 and page.count("</script>") == 2  # plotly.js and the figure
    assert "<script src" not in page and "<link" not in page  # nothing loaded from elsewhere
    assert "Plotly.newPlot('timeline'" in page
    fig = json.loads(page.split("const fig=", 1)[1].split(";Plotly.newPlot", 1)[0])
    assert {t["name"] for t in fig["data"]} == {"pending", "in_progress", "completed"}
    assert fig["layout"]["xaxis"]["type"] == "date"


def test_markdown_and_json_escape_and_agree() -> None:
    _hostile_plan()
    md = CliRunner().invoke(cli, ["report", PLAN])
    assert "<script>" not in md.stdout and "&lt;script&gt;alert(1)" in md.stdout
    data: dict[str, Any] = json.loads(CliRunner().invoke(cli, ["report", PLAN, "--json"]).stdout)
    assert data["final"] == {"in_progress": 1, "completed": 1}
    assert [c["where"] for c in data["calls"]] == ["L1", "L2"]
    assert data["items"][0]["content"] == HOSTILE
    assert data["items"][0]["seconds"] == {"in_progress": 180.0, "completed": 0.0}


MARKUP = (
    "Ship `it` **now** _x_ [click](javascript:alert(1))",
    "![i](http://x/i.png) ~~s~~ &amp; <b>b</b> | c",
)


def test_markdown_keeps_every_agent_text_plain() -> None:
    """Item texts, writer names (the transcript's session id), times and places all
    come from the transcript; none may add markup, links, images or table cells."""
    hostile_session = "s`*_[x](javascript:y)|<i>\n# Heading"
    with Ledger() as lg:
        for n, status in enumerate(("in_progress", "completed")):
            lg.write(
                {"plan": [{"step": f"{m}\n- [x] fake\n# Heading", "status": status} for m in MARKUP]},
                plan=PLAN,
                writer=f"codex:{hostile_session}",
                dialect="codex",
                at=at(n),
                source_key=f"codex:x:{n}",
                source_at=f"msg_[a](b)|`{n}`*<i>\n# Heading",
            )
        # A clock going back makes a finding whose line starts with the call's time and place.
        lg.write(
            {"plan": [{"step": "Later", "status": "pending"}]},
            plan=PLAN,
            writer="codex:y",
            dialect="codex",
            at=at(-5),
            source_key="codex:x:3",
            source_at="- [z](q)",
        )
        text = render_md(load(lg, PLAN))
    lines = text.splitlines()
    # Nothing the agent wrote starts a block: no heading, list or quote of its own.
    assert [line for line in lines if line.startswith("#")] == [
        f"# Plan {PLAN}",
        "## Phases",
        "## What went wrong",
        "## Proof of completions",
        "## Claims by writer",
        "## Timeline",
        "## Calls",
    ]
    assert not [line for line in lines if line.lstrip().startswith(("- [", "- \\[", "> ", "&gt;"))]
    # No markup character is left bare (the report's own `**title**` lines aside),
    # and no HTML tag or entity of the agent's.
    bare = re.compile(r"(?<!\\)[`\[\]~<>]|<[a-z]|&(?!amp;|lt;|gt;)")
    assert not [line for line in lines if bare.search(line)]
    assert not [line for line in lines if "*" in line.replace("\\*", "") and not line.startswith("- **")]
    # Table rows keep their columns: every `|` of the agent's is escaped.
    tables = "\n".join(line if line.startswith("|") else "" for line in lines).split("\n\n")
    for table in (t.strip("\n").splitlines() for t in tables if t.strip("\n")):
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in table}) == 1, table
    assert "Ship \\`it\\` \\*\\*now\\*\\* \\_x\\_ \\[click\\](javascript:alert(1))" in text
    assert "!\\[i\\](http://x/i.png) \\~\\~s\\~\\~ &amp;amp; &lt;b&gt;b&lt;/b&gt; \\| c" in text
    assert "codex:s\\`\\*\\_\\[x\\](javascript:y)\\|&lt;i&gt; # Heading" in text.split("\n")[2]
    assert "msg\\_\\[a\\](b)\\|\\`1\\`\\*&lt;i&gt; # Heading" in text


def test_a_clock_going_back_is_a_finding_with_its_place() -> None:
    with Ledger() as lg:
        write(lg, 10, ("Build", "in_progress"), n=4)
        write(lg, 2, ("Build", "completed"), n=7)  # stamped before the call before it
        write(lg, 12, ("Build", "completed"), ("Ship", "pending"), n=9)
        report = load(lg, PLAN)
    (finding,) = [f for f in report.findings if f.code == "clock-backwards"]
    assert (finding.where, finding.at) == ("L7", at(2))
    assert finding.message == f"call at {at(2)} is 8.0 min earlier than the call before it ({at(10)})"
    assert "**clock went backwards** (1)" in render_md(report)


def test_unknown_plan_is_one_clear_line() -> None:
    result = CliRunner().invoke(cli, ["report", "nope/1"])
    assert result.exit_code == 1
    assert "plan 'nope/1' has no history" in result.output


def test_report_of_2000_calls() -> None:
    with Ledger() as lg:
        steps = [f"Step {i}" for i in range(40)]
        with lg.store.write():
            for call in range(2000):
                done = call // 50
                items = [
                    (s, "completed" if j < done else "in_progress" if j == done else "pending")
                    for j, s in enumerate(steps)
                ]
                write(lg, call / 100, *items, n=call)
        report = load(lg, PLAN)
        text = render_md(report)
    assert len(report.story.calls) == 2000
    assert "Final state: 1 in_progress, 39 completed." in text
    # calls, items, phase, header rows; the claims: 39 completed items, one writer, two headers
    assert text.count("\n| ") == 2000 + 40 + 1 + 3 + 39 + 1 + 2
    # Its time: bench/bench_ingest.py; its growth with the plan: bench/bench_report.py.


def test_report_shows_the_proof_of_each_item_and_what_lacks_it(tmp_path: Path) -> None:
    """Evidence, metrics and receipts per item in md, json and html; a "done"
    with a failed gate, a gate never run, a stale receipt, one run where
    repeats were asked for and no evidence at all are each found."""
    import json as json_

    from todoledger.ingest.html import render_html
    from todoledger.ingest.report import render_json

    doc = tmp_path / "doc.txt"
    doc.write_text("v1")
    with Ledger() as lg:
        ids = {
            name: lg.add(name, plan=PLAN)["id"]
            for name in (
                "Benchmark 16 draft tokens",
                "Verify disk",
                "Deploy",
                "Write the doc",
                "Read the logs",
            )
        }
        lg.add_check(ids["Benchmark 16 draft tokens"], "metric:tok_s>=50", plan=PLAN)
        lg.done(ids["Benchmark 16 draft tokens"], metrics={"tok_s": 60.0}, plan=PLAN)
        lg.add_check(ids["Verify disk"], f"disk:{tmp_path}>=900P", plan=PLAN)
        lg.done(ids["Verify disk"], plan=PLAN, force_reason="subagent says 2.8T avail")
        lg.add_check(ids["Deploy"], "cmd:test -f deployed", plan=PLAN, trusted=False)
        lg.done(ids["Deploy"], plan=PLAN, force_reason="it is up")
        lg.add_check(ids["Write the doc"], f"file:{doc}", {"watch": [str(doc)]}, plan=PLAN)
        lg.done(ids["Write the doc"], plan=PLAN)
        doc.write_text("v2")  # the work changed after its check ran
        lg.done(ids["Read the logs"], plan=PLAN)
        report = load(lg, PLAN)
    found = {(f.code, f.items[0]) for f in report.findings}
    assert found >= {
        ("single-run", ids["Benchmark 16 draft tokens"]),
        ("gate-failed-completed", ids["Verify disk"]),
        ("gate-never-ran", ids["Deploy"]),
        ("verification-stale", ids["Write the doc"]),
        ("completed-without-evidence", ids["Read the logs"]),
    }
    assert ("completed-without-evidence", ids["Write the doc"]) not in found  # its receipt held
    text = render_md(report)
    proof = text[text.index("## Proof\n") : text.index("## Proof of completions")]
    rows_md = {
        line.split()[1]: line for line in proof.splitlines() if line.startswith("| ") and "|---" not in line
    }
    assert "tok\\_s: 60 (1 run)" in rows_md[ids["Benchmark 16 draft tokens"]]
    assert "| failed |" in rows_md[ids["Verify disk"]] and "900P fails: " in rows_md[ids["Verify disk"]]
    assert "cmd:test -f deployed never ran" in rows_md[ids["Deploy"]]
    rows = {row["id"]: row for row in json_.loads(render_json(report))["items"]}
    bench = rows[ids["Benchmark 16 draft tokens"]]["proof"]
    assert bench["metrics"] == {"tok_s": [60.0]} and bench["receipts"][0]["result"] == "holds"
    assert rows[ids["Verify disk"]]["proof"]["verification"] == "failed"
    page = render_html(report)
    assert "<h2>Proof</h2>" in page and "gate failed but reported completed" in page


def test_the_report_pauses_the_cycle_collector_only_while_it_runs(ledger_env: Path) -> None:
    """`load` and the renderers run with the cycle collector paused (their objects
    hold no cycle; its passes grew with the plan) and always give it back, also
    when the report is refused."""
    import gc

    from todoledger.core.model import LedgerError
    from todoledger.ingest.report import render_json

    seen: list[bool] = []
    with Ledger(ledger_env) as lg:
        lg.add("Benchmark with 5 draft tokens")
        original = lg.history

        def history(*args: Any, **kwargs: Any) -> Any:
            seen.append(gc.isenabled())
            return original(*args, **kwargs)

        lg.history = history  # type: ignore[method-assign]
        report = load(lg, "main")
        assert seen == [False] and gc.isenabled()
        assert render_md(report) and render_json(report) and gc.isenabled()
        with pytest.raises(LedgerError):
            load(lg, "no-such-plan")
        assert gc.isenabled()
        gc.disable()
        try:
            load(lg, "main")
            assert not gc.isenabled()  # paused by someone else: left as it was
        finally:
            gc.enable()


def test_a_single_run_finding_says_what_the_record_shows_and_what_was_asked_only_if_asked() -> None:
    """Seed 004: the baseline marked completed after one run. The finding says how
    many runs there were; "N were asked for" only where the plan asked (the item's
    own text here; a sweep's --repeat in tests/test_sweeps.py's plans)."""
    with Ledger() as lg:
        baseline = lg.add("Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)", plan=PLAN)[
            "id"
        ]
        lg.add_check(baseline, "metric:tok_s>=100", plan=PLAN)
        lg.done(baseline, metrics={"tok_s": 172.0}, plan=PLAN)
        repeated = lg.add("Benchmark best config at C=32, 3 runs", plan=PLAN)["id"]
        lg.add_check(repeated, "metric:tok_s>=100", plan=PLAN)
        lg.done(repeated, metrics={"tok_s": 2156.0}, plan=PLAN)
        report = load(lg, PLAN)
    found = {f.items[0]: f.message for f in report.findings if f.code == "single-run"}
    assert found[baseline] == (
        '"Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)" completed after 1 recorded run'
    )  # nobody asked for 2: nothing said of it
    assert (
        found[repeated]
        == '"Benchmark best config at C=32, 3 runs" completed after 1 recorded run; 3 were asked for (its text)'
    )
    assert "completed after a single run" in render_md(report)


def _report_calls(tmp_path: Path, items: int) -> int:
    """Python function calls (counted by cProfile, not timed) to load and render the
    report of a plan built as bench/bench_report.py builds one."""
    import cProfile
    import pstats

    db = tmp_path / f"plan{items}.db"
    with Ledger(db) as lg:
        lines = [
            json.dumps({"id": f"t{n:05d}", "content": f"Step {n}", "status": "pending"}) for n in range(items)
        ]
        for start in range(0, items, 50):
            lg.import_jsonl(lines[start : start + 50], plan="bench", writer="bench")
        for n in range(0, items, 5):
            lg.start(f"t{n:05d}", plan="bench", writer="bench")
            lg.done(f"t{n:05d}", plan="bench", writer="bench")
    with Ledger(db, create=False) as lg:
        profile = cProfile.Profile()
        profile.enable()
        render_md(load(lg, "bench"))
        profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def test_a_report_does_work_linear_in_the_plan(tmp_path: Path) -> None:
    """Four times the items, about four times the calls: a pass over every call
    asked once per item (`Story.untimed`, `last_list_op`) made it sixteen."""
    small, large = _report_calls(tmp_path, 150), _report_calls(tmp_path, 600)
    assert large / small < 5, (small, large)


def test_the_report_reads_only_what_it_uses_of_each_created_item(ledger_env: Path) -> None:
    """A report keeps a created event's status and content, not the whole item it made
    (a 100,000-item plan's report held every item's row twice), and says the same as a
    report from the whole history; `history` without `created` still gives every field."""
    from todoledger.ingest.report import analyze, render_json
    from todoledger.ingest.story import CREATED_FIELDS

    with Ledger(ledger_env) as lg:
        lg.add("Measure the cold start, 3 runs", notes="on the quiet machine")
        second = lg.add("Write the summary")["id"]
        lg.start(second)
        lg.done(second, evidence="summary.md")
        full = lg.history("main")
        lean = lg.history("main", created=CREATED_FIELDS)
        view, ops = lg.view("main"), lg.ops("main")
    created = [e for e in full if e["field"] == "created"]
    assert len(created) == 2 and all({"priority", "position"} <= set(e["new"]) for e in created)
    assert created[0]["new"]["notes"] == "on the quiet machine"
    assert [e["new"] for e in lean if e["field"] == "created"] == [
        {"status": "pending", "content": "Measure the cold start, 3 runs"},
        {"status": "pending", "content": "Write the summary"},
    ]
    assert [{**e, "new": None} for e in lean] == [{**e, "new": None} for e in full]
    assert [e for e in lean if e["field"] != "created"] == [e for e in full if e["field"] != "created"]
    whole, narrow = analyze(view, full, ops), analyze(view, lean, ops)
    assert render_md(narrow) == render_md(whole) and render_json(narrow) == render_json(whole)


def test_a_report_holds_a_few_kilobytes_an_item(tmp_path: Path) -> None:
    """What a report keeps per item bounds its cost at 100,000 items, where the plan no
    longer fits in the CPU's caches (bench/bench_report.py): events as shared strings, a
    created event's status and content only, records with __slots__, one empty proof record
    shared. It held 4.6 KB an item before; 3.2 KB now."""
    import tracemalloc

    db = tmp_path / "plan.db"
    with Ledger(db) as lg:
        for start in range(0, 500, 100):
            lines = [
                json.dumps({"id": f"t{n:04d}", "content": f"Step {n} of the plan", "status": "pending"})
                for n in range(start, start + 100)
            ]
            lg.import_jsonl(lines, plan="bench", writer="bench")
        for n in range(0, 500, 10):
            lg.start(f"t{n:04d}", plan="bench", writer="bench")
            lg.done(f"t{n:04d}", plan="bench", writer="bench")
        load(lg, "bench")  # imports and caches, outside the count
        tracemalloc.start()
        try:
            report = load(lg, "bench")
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    assert len(report.story.items) == 500
    assert held / 500 < 4000, f"{held / 500:.0f} bytes an item"
