"""One view of a plan (`core.view`): worked out once from a real ledger, read
alike by prime, MCP todoread, the Markdown resource, the renderers and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env
from todoledger.cli import render_plain
from todoledger.core.prime import render_prime
from todoledger.core.view import build
from todoledger.ingest.report import load, render_md
from todoledger.ledger import Ledger
from todoledger.mcp.tools import PlanTools, render_markdown

T = "2026-02-10T0{}:00:00.000Z"


@pytest.fixture
def lg(ledger_env: Path) -> Iterator[Ledger]:
    with Ledger(ledger_env) as ledger:
        yield ledger


def _campaign(lg: Ledger) -> dict[str, str]:
    ids: dict[str, str] = {}

    def add(key: str, text: str, **kw: Any) -> None:
        ids[key] = lg.add(text, writer="cli:me", at=T.format(1), **kw)["id"]

    add("phase", "Phase 0: Quick probe", priority="high")
    add("kill", "Kill servers", parent=ids["phase"], priority="high")
    add("launch", "Launch SGLang", parent=ids["phase"], depends_on=[ids["kill"]])
    add("sweep", "Sweep draft tokens", priority="low")
    add("report", "Write report", priority="high")
    add("bench", "Benchmark 16 tokens")
    add("baseline", "Baseline without speculation")
    lg.update(ids["kill"], status="completed", evidence="fuser -k", writer="agent:a", at=T.format(2))
    lg.update(ids["bench"], status="completed", evidence="69 tok/s", writer="agent:b", at=T.format(3))
    lg.update(ids["baseline"], status="in_progress", writer="agent:b", at=T.format(4))
    lg.dep_add(ids["report"], ids["baseline"], writer="cli:me", at=T.format(5))
    return ids


def test_the_view_summarises_the_plan_once(lg: Ledger) -> None:
    ids = _campaign(lg)
    view = lg.view()
    assert view.plan == "main" and view.revision == lg.show()["revision"]
    # Counts in the vocabulary's order, only the statuses present.
    assert list(view.counts.items()) == [("pending", 4), ("in_progress", 1), ("completed", 2)]
    assert view.summary() == "4 pending, 1 in_progress, 2 completed"
    assert [it.id for it in view.in_progress] == [ids["baseline"]]
    assert view.in_progress[0].writer == "agent:b"
    # Ready: by priority, then plan order; a phase with open items and a waiting item are not ready.
    assert [it.id for it in view.ready] == [ids["launch"], ids["sweep"]]
    assert [it.id for it in view.blocked] == [ids["report"]]
    assert [it.id for it in view.recent] == [ids["bench"], ids["kill"]]  # last completed first
    depth = {it.id: it.depth for it in view.items}
    assert (depth[ids["phase"]], depth[ids["kill"]], depth[ids["launch"]], depth[ids["sweep"]]) == (
        0,
        1,
        1,
        0,
    )
    report = next(it for it in view.items if it.id == ids["report"])
    assert report.depends_on == (ids["baseline"],) and report.flag() == "blocked"
    assert [it.id for it in view.tree()][:3] == [ids["phase"], ids["kill"], ids["launch"]]


def test_every_reader_shows_the_same_plan(lg: Ledger, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _campaign(lg)
    view = lg.view()
    prime = lg.prime()
    assert prime.startswith("todoledger plan 'main' (revision 11): 4 pending, 1 in_progress, 2 completed.")
    ready_lines = prime.split("Ready next:\n")[1].split("Blocked:")[0].splitlines()
    assert [line.split("]")[0][3:] for line in ready_lines] == [it.id for it in view.ready]
    assert "Blocked: 1 item(s) waiting on others." in prime

    tools = PlanTools()
    read = tools.todoread({}, "mcp:test")
    assert read["counts"] == view.counts and list(read["counts"]) == list(view.counts)
    assert [r["id"] for r in read["ready"]] == [it.id for it in view.ready]
    assert [r["id"] for r in read["recent"]] == [it.id for it in view.recent]
    assert read["in_progress"] == [
        {"id": ids["baseline"], "content": "Baseline without speculation", "updated_by": "agent:b"}
    ]
    assert read["blocked"] == 1
    tools.close()

    render_plain.plan(view)
    plain = capsys.readouterr().out
    assert plain.splitlines()[0] == "plan main · revision 11 · 4 pending, 1 in_progress, 2 completed"
    assert [line.split()[0] for line in plain.splitlines() if "(ready)" in line] == [
        ids["launch"],
        ids["sweep"],
    ]

    md = render_markdown(view)
    assert f"  - [x] Kill servers `{ids['kill']}` (high)\n    evidence: fuser -k\n" in md

    assert "Final state: 4 pending, 1 in_progress, 2 completed." in render_md(load(lg, "main"))


WAITING: dict[str, Any] = {
    "plan": "main",
    "revision": 4,
    "items": [
        {"id": "probe1", "content": "Probe", "status": "cancelled", "priority": "high", "reason": "dropped"},
        {
            "id": "bench1",
            "content": "Benchmark",
            "status": "pending",
            "priority": "high",
            "depends_on": ["probe1"],
            "ready": True,  # as derived before the rule for cancelled blockers
            "waits_on_cancelled": ["probe1"],
            "verification": "bogus",
        },
        {
            "id": "done01",
            "content": "Train",
            "status": "completed",
            "priority": "medium",
            "evidence": "loss 0.4",
            "verification": "stale",
        },
    ],
}


def test_an_item_waiting_for_a_cancelled_item_is_never_ready() -> None:
    view = build(WAITING)
    bench = view.items[1]
    assert not bench.ready and view.ready == () and view.blocked == (bench,)
    assert bench.flag() == "waits for a cancelled item"
    assert bench.verification is None  # only the checks' vocabulary
    prime = render_prime(view)
    assert "- [bench1] Benchmark [high] (waits for a cancelled item (probe1))" in prime
    assert "Ready next:" not in prime
    assert "- [done01] Train [medium] (loss 0.4) (stale)" in prime
    md = render_markdown(view)
    assert "- [ ] Benchmark `bench1` (high; waits for probe1; waits for a cancelled item (probe1))" in md


def test_session_start_loads_the_view_without_heavy_modules(ledger_env: Path | str) -> None:
    # psycopg itself needs dataclasses, typing and pathlib: on PostgreSQL the view still adds none.
    lean = "'dataclasses', 'typing', 'pathlib'" if isinstance(ledger_env, Path) else ""
    with Ledger(ledger_env) as lg:
        lg.add("Train the drafter")
    code = (
        "import sys, json\n"
        "from todoledger.cli.entry import main\n"
        "try:\n    main(['hook', 'claude-code'])\nexcept SystemExit:\n    pass\n"
        f"heavy = ('click', 'rich', 'mcp', {lean})\n"
        "print(json.dumps([[m for m in heavy if m in sys.modules], 'todoledger.core.view' in sys.modules]))\n"
    )
    event = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": os.getcwd()}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Train the drafter" in proc.stdout
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[], True]
