"""Sweeps over a real command: expansion, runs, SIGKILL and resume, results checked independently."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.test_cli import run, run_json
from todoledger import Ledger
from todoledger.core.model import LedgerError
from todoledger.ledger import sweeps


@pytest.fixture(autouse=True)
def as_a_person(ledger_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process the default writer is the person `cli:tester`, by their token:
    without a terminal it would be `script:<user>`, not a person (tests/conftest.py)."""
    from tests.conftest import act_as_person

    act_as_person(ledger_env, monkeypatch)  # type: ignore[arg-type]


# A stand-in benchmark (a simulation): throughput depends on the draft tokens, with seeded noise.
BENCH = """
import json, random, sys, time
draft, conc = int(sys.argv[1]), int(sys.argv[2])
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
rng = random.Random()
base = {0: 82.0, 5: 76.0, 10: 70.0, 16: 60.0}[draft] * (1 + 0.1 * (conc - 1))
tok_s = round(base * rng.uniform(0.98, 1.02), 3)
time.sleep(pause)
with open("runs.log", "a") as log:
    log.write(json.dumps({"draft": draft, "conc": conc, "tok_s": tok_s}) + "\\n")
print("warming up... ok")
print(f"accept_len: {1 + draft / 8:.2f}")
print(json.dumps({"tok_s": tok_s}))
"""


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    script = tmp_path / "bench.py"
    script.write_text(BENCH)
    return script


def define(lg: Ledger, pause: float = 0.0, repeat: int = 3) -> dict[str, Any]:
    return lg.add_sweep(
        "draft",
        template="Benchmark {draft_tokens} draft tokens at C={concurrency}",
        params=["draft_tokens=16,10,5", "concurrency=1,4"],
        baseline=["draft_tokens=0"],
        run=f"python3 bench.py {{draft_tokens}} {{concurrency}} {pause}",
        metrics=["tok_s=$.tok_s", r"accept_len=accept_len: ([\d.]+)"],
        repeat=repeat,
        keep="tok_s>baseline*1.1",
    )


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "runs.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_sweep_expands_runs_and_summarises(ledger_env: Path, tmp_path: Path, bench: Path) -> None:
    with Ledger() as lg:
        made = define(lg)
        assert len(made["items"]) == 8  # 3 x 2 combinations + 2 baselines (one per concurrency)
        assert lg.sweeps() == [{"name": "draft", "parent": made["parent"]}]
        assert lg.sweeps(plan="other") == []
        contents = [i["content"] for i in made["items"]]
        assert contents[0] == "Benchmark 16 draft tokens at C=1"
        assert contents[-1] == "Benchmark 0 draft tokens at C=4 (baseline)"
        out = sweeps.run(lg, "draft")
        assert (out["runs"], out["failed"]) == (24, 0)
        assert len(logged(tmp_path)) == 24
        view = {i["content"]: i for i in lg.show()["items"]}
        first = view["Benchmark 16 draft tokens at C=1"]
        assert first["status"] == "completed" and first["verification"] == "verified"
        assert first["evidence"].startswith("3 runs of cmd:python3 bench.py 16 1 0.0: tok_s median")
        # The parent reads as its template filled with each parameter's values, not the raw template.
        parent = view["Benchmark 16, 10, 5 draft tokens at C=1, 4; baseline draft_tokens=0"]
        assert parent["status"] == "completed" and parent["evidence"].startswith("8 combinations measured")
        result = lg.sweep_results("draft")
        assert sweeps.run(lg, "draft")["runs"] == 0  # nothing left to run
    # independent computation from the runs the script logged itself
    by_combo: dict[tuple[int, int], list[float]] = {}
    for r in logged(tmp_path):
        by_combo.setdefault((r["draft"], r["conc"]), []).append(r["tok_s"])
    rows = {
        (int(r["params"]["draft_tokens"]), int(r["params"]["concurrency"]), r["metric"]): r
        for r in result["rows"]
    }
    for (draft, conc), runs in by_combo.items():
        row = rows[(draft, conc, "tok_s")]
        assert row["n"] == 3 and row["median"] == statistics.median(runs)
        assert (row["min"], row["max"]) == (min(runs), max(runs))
        assert row["spread"] == pytest.approx((max(runs) - min(runs)) / statistics.median(runs))
        base = statistics.median(by_combo[(0, conc)])
        assert row["ratio"] == pytest.approx(statistics.median(runs) / base)
        if draft:
            assert (
                row["verdict"] == ("keep" if statistics.median(runs) > base * 1.1 else "discard") == "discard"
            )
    assert rows[(16, 1, "tok_s")]["ratio"] == pytest.approx(60 / 82, rel=0.05)  # about 0.73x, as in the seeds
    assert rows[(16, 1, "accept_len")]["median"] == 3.0 and rows[(16, 1, "accept_len")]["flags"] == []


def test_sigkill_halfway_then_resume_runs_nothing_twice(
    ledger_env: Path, tmp_path: Path, bench: Path
) -> None:
    with Ledger() as lg:
        define(lg, pause=0.15, repeat=2)
    proc = subprocess.Popen(
        [todoledger_bin(), "sweep", "run", "draft"],
        env=subprocess_env(ledger_env),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(logged(tmp_path)) < 7 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    at_kill = len(logged(tmp_path))
    assert 7 <= at_kill < 16
    with Ledger() as lg:
        finished = {i["content"] for i in lg.show()["items"] if i["status"] == "completed"}
        recorded = {
            i["id"]: len([m for m in lg.metrics(i["id"]) if m["name"] == "tok_s"]) for i in lg.show()["items"]
        }
        assert lg.check() == []
    assert finished  # some combinations were done when it was killed
    resumed = run(ledger_env, "sweep", "run", "draft")
    assert "pending combinations, 0 failed" in resumed.stdout
    after = logged(tmp_path)[at_kill:]
    titles = {f"Benchmark {r['draft']} draft tokens at C={r['conc']}" for r in after}
    titles |= {t + " (baseline)" for t in titles}
    assert not (titles & finished)  # finished combinations never ran again
    with Ledger() as lg:
        items = lg.show()["items"]
        children = [i for i in items if i["parent"]]
        assert all(i["status"] == "completed" for i in children)
        for item in children:
            tok = [m for m in lg.metrics(item["id"]) if m["name"] == "tok_s"]
            assert [m["run"] for m in tok] == [1, 2]  # kept repeats were not run again
            assert len(tok) >= recorded[item["id"]]
        assert lg.check() == []
    table = run(ledger_env, "sweep", "results", "draft").stdout
    assert table.splitlines()[0].split() == [
        "params",
        "metric",
        "n",
        "median",
        "min",
        "max",
        "spread",
        "ratio",
        "verdict",
        "flags",
    ]
    # Two repeats a side decide nothing: the verdict says so rather than "discard" (issue 22).
    assert "draft_tokens=16 concurrency=1" in table and "inconclusive" in table and "discard" not in table
    assert "too few runs (2 < 3)" in table
    csv_text = run(ledger_env, "sweep", "results", "draft", "--format", "csv").stdout
    assert csv_text.startswith("params,metric,n,median") and len(csv_text.splitlines()) == 17
    as_json = run_json(ledger_env, "sweep", "results", "draft")
    assert len(as_json["rows"]) == 16
    html = run(ledger_env, "sweep", "results", "draft", "--format", "html").stdout
    assert html.startswith("<!doctype html>") and html.count("<svg") == 2 and "<script" not in html
    assert "draft_tokens=16 concurrency=1" in html and "(baseline)" in html


def test_single_runs_and_failures_are_flagged(ledger_env: Path, tmp_path: Path) -> None:
    (tmp_path / "flaky.py").write_text(
        "import sys\nn = int(sys.argv[1])\nprint(f'tok_s={n * 10}') if n == 1 else sys.exit(3)\n"
    )
    with Ledger() as lg:
        lg.add_sweep(
            "once",
            template="Run {n}",
            params=["n=1,2"],
            run="python3 flaky.py {n}",
            metrics=[r"tok_s=tok_s=(\d+)"],
        )
        out = sweeps.run(lg, "once")
        assert (out["runs"], out["failed"]) == (2, 1)
        rows = lg.sweep_results("once")["rows"]
        assert rows[0]["flags"] == ["single run"] and rows[0]["median"] == 10.0
        assert rows[1]["n"] == 0 and rows[1]["flags"] == ["not run"]
        view = {i["content"]: i for i in lg.show()["items"]}
        assert view["Run 2"]["status"] == "in_progress" and view["Run 2"]["verification"] == "failed"
        from todoledger.core.sweep_html import page

        html = page(lg.sweep_results("once") | {"sweep": "<b>once</b>"})
        assert "&lt;b&gt;once&lt;/b&gt;" in html and "<b>" not in html and "not run" in html


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"params": ["x"]}, "write NAME=VALUE"),
        ({"metrics": ["tok_s=no group"]}, "exactly one (group)"),
        ({"run": "bench {missing}"}, "{missing} is not a parameter"),
        ({"baseline": ["other=0"]}, "not a --param"),
        ({"keep": "tok_s>baseline*1.1"}, "give --baseline"),
        ({"keep": "latency<3"}, "not a --metric"),
        ({"repeat": 0}, "--repeat must be"),
        ({"run": "python3 -c '{print(1)}' {n}"}, "{print(1)} is not a parameter"),
        ({"template": "Run { {n}"}, "{NAME} places a parameter"),
    ],
)
def test_bad_sweeps_change_nothing(ledger_env: Path, kw: dict[str, Any], says: str) -> None:
    args: dict[str, Any] = {
        "template": "Run {n}",
        "params": ["n=1,2"],
        "run": "echo {n}",
        "metrics": [r"tok_s=(\d+)"],
    } | kw
    with Ledger() as lg:
        with pytest.raises(LedgerError) as err:
            lg.add_sweep("bad", **args)
        assert says in str(err.value) and "\n" not in str(err.value)
        assert lg.show()["items"] == [] and lg.history() == []


def test_parallel_run_completes_every_combination(ledger_env: Path, tmp_path: Path, bench: Path) -> None:
    with Ledger() as lg:
        define(lg, pause=0.05, repeat=2)
        out = sweeps.run(lg, "draft", parallel=4)
        assert (out["runs"], out["failed"]) == (16, 0)
        items = lg.show()["items"]
        assert all(i["status"] == "completed" for i in items)
        assert sorted(len(lg.metrics(i["id"])) for i in items if i["parent"]) == [4] * 8
        assert lg.check() == []
