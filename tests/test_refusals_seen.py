"""The person sees what was refused (issue 31, part 5), over raw MCP (stdio, a real server
process) and the CLI: every refused write is a `refused` op with its writer and reason in
the plan's story and the report's "Refused" section, nothing else changes; an agent's cancel
of an item a person gated needs a reason, and with one is a finding; a whole list that
leaves such an item out does not drop it; refusals are capped per principal, plan and day."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import subprocess_env, todoledger_bin
from tests.mcp_wire import data_of, stdio_wire, text_of
from tests.test_mcp_duplicates import SEED_003
from todoledger import Ledger
from todoledger.ingest.report import load as load_report
from todoledger.ingest.report import render_md

PERSON = "cli:ann"


def report(db: Path, plan: str) -> str:
    with Ledger(db) as lg:
        return render_md(load_report(lg, plan))


def snapshot(db: Path, plan: str) -> list[dict[str, object]]:
    with Ledger(db) as lg:
        return [{k: v for k, v in i.items() if not k.endswith("_at")} for i in lg.items(plan)]


def refused_ops(db: Path, plan: str) -> list[tuple[str, str]]:
    with Ledger(db) as lg:
        return [(e["writer"], e["summary"]) for e in lg.ops(plan) if e["kind"] == "refused"]


def test_seed_003s_duplicate_key_call_over_mcp_is_in_the_report_with_its_reason(ledger_env: Path) -> None:
    with stdio_wire(ledger_env) as wire:
        first = wire.call("todowrite", {"todos": [{"content": "Train EAGLE-3", "status": "pending"}]})
        assert not first.get("isError"), text_of(first)
        before = snapshot(ledger_env, "main")
        refused = wire.call("todowrite", SEED_003)
        assert refused.get("isError") and 'duplicate key "priority"' in text_of(refused)
        assert snapshot(ledger_env, "main") == before  # nothing else changes
        (row,) = refused_ops(ledger_env, "main")
    writer, summary = row
    assert writer.startswith("mcp:") and 'todowrite: rejected: todos[3]: duplicate key "priority"' in summary
    text = report(ledger_env, "main")
    section = text[text.index("## Refused") :]
    assert writer in section and 'duplicate key "priority" (values "pending", "high")' in section


def test_an_agents_cancel_of_a_persons_gated_item_needs_a_reason_and_is_a_finding(ledger_env: Path) -> None:
    with stdio_wire(ledger_env) as wire:
        wrote = data_of(wire.call("todowrite", {"todos": [{"content": "Benchmark", "status": "pending"}]}))
        item = wrote["ids"][0] if "ids" in wrote else wrote["items"][0]["id"]
        with Ledger(ledger_env) as lg:
            lg.add_check(item, "file:results.json", plan="main", writer=PERSON)
        bare = wire.call("plan_update", {"id": item, "status": "cancelled"})
        assert bare.get("isError") and "only with a reason" in text_of(bare)
        assert snapshot(ledger_env, "main")[0]["status"] == "pending"
        said = wire.call(
            "plan_update", {"id": item, "status": "cancelled", "reason": "superseded by the C=64 run"}
        )
        assert not said.get("isError"), text_of(said)
    text = report(ledger_env, "main")
    assert "cancelled a person's gated item" in text and "superseded by the C=64 run" in text
    assert "only with a reason" in text[text.index("## Refused") :]  # the refused bare cancel, seen too


def test_a_whole_list_that_leaves_out_a_persons_gated_item_does_not_drop_it(ledger_env: Path) -> None:
    with stdio_wire(ledger_env) as wire:
        todos = [{"content": "Benchmark", "status": "pending"}, {"content": "Report", "status": "pending"}]
        wire.call("todowrite", {"todos": todos})
        with Ledger(ledger_env) as lg:
            gated = next(i["id"] for i in lg.items("main") if i["content"] == "Benchmark")
            lg.add_check(gated, "file:results.json", plan="main", writer=PERSON)
        reply = data_of(wire.call("todowrite", {"todos": todos[1:]}))
    assert any(f"({gated}) stays pending: it is held by {PERSON}'s gate" in n for n in reply["notices"])
    assert {i["content"]: i["status"] for i in snapshot(ledger_env, "main")}["Benchmark"] == "pending"


def test_cli_refusals_are_recorded_and_capped_per_principal_plan_and_day(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)

    def tl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([todoledger_bin(), *args], capture_output=True, text=True, env=env, timeout=60)

    assert tl("add", "Benchmark", "--writer", "opencode:s1").returncode == 0
    bad = tl("done", "zzzzzz", "--writer", "opencode:s1")
    assert bad.returncode == 1 and bad.stderr == "Error: no item 'zzzzzz' in plan 'main'\n"
    assert refused_ops(ledger_env, "main") == [("opencode:s1", "done: no item 'zzzzzz' in plan 'main'")]
    listed = tl("report", "main").stdout  # the CLI route's refusal, in report and on the board
    assert "opencode:s1: done: no item 'zzzzzz' in plan 'main'" in listed[listed.index("## Refused") :]
    page = board_page("main")
    assert "opencode:s1 : done: no item 'zzzzzz' in plan 'main'" in page[page.index("Refused") :]
    assert tl("show", "zzzzzz").returncode != 0 and len(refused_ops(ledger_env, "main")) == 1  # a read
    from todoledger.ledger import writes

    with Ledger(ledger_env) as lg:  # the cap, small here: then one counter event, then nothing
        for n in range(5):
            lg.record_refusal(f"try {n}", plan="main", writer=f"opencode:ses{n}")  # one principal
        lg.record_refusal("another agent", plan="main", writer="codex:t1")
    assert len(refused_ops(ledger_env, "main")) == 7
    with Ledger(ledger_env) as lg:
        unit = lg._unit  # the cap's own argument, through the module the facade calls
        for n in range(4):
            writes.record_refusal(unit, "main", f"opencode:more{n}", "again", cap=6)
    ops = refused_ops(ledger_env, "main")
    counters = [s for _, s in ops if s.startswith("agent:opencode reached today's cap of 6")]
    assert len(counters) == 1 and len(ops) == 8  # 6 of opencode, 1 of codex, 1 counter
    json.dumps(ops)  # plain text: what report and board show


def board_page(plan: str) -> str:
    from starlette.testclient import TestClient

    from tests.test_board_templates import Page
    from todoledger.mcp.http import create_app
    from todoledger.web.app import Board

    board = Board(name="tester")
    app, tools = create_app(routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            page = client.get(f"/plan?plan={plan}")
    finally:
        tools.close()
        board.close()
    assert page.status_code == 200
    return " ".join(Page(page.text).text)


def test_past_the_cap_one_counter_event_counts_the_rest_in_report_and_board(ledger_env: Path) -> None:
    from todoledger.ledger import writes

    with Ledger(ledger_env) as lg:
        lg.add("Benchmark", plan="main", writer="opencode:s1")
        unit = lg._unit  # the cap's own argument, through the module the facade calls
        for n in range(3):  # one principal, a new writer each time (a sessionless client)
            writes.record_refusal(unit, "main", f"opencode:ses{n}", f"try {n}", cap=2)
        writes.record_refusal(unit, "main", "codex:t1", "another agent", cap=2)
        events = lg.last_event()
    with Ledger(ledger_env) as lg:
        for n in range(4):
            assert writes.record_refusal(lg._unit, "main", f"opencode:more{n}", "again", cap=2)
        assert lg.last_event() == events and lg.check("main") == []  # counted: no event, the chain intact
    ops = refused_ops(ledger_env, "main")
    assert [s for _, s in ops].count("again") == 0 and len(ops) == 4  # 2 of opencode, its counter, codex
    text = report(ledger_env, "main")
    section = text[text.index("## Refused") :]
    assert "8 writes refused" in section  # 2 listed, 5 counted past the cap, 1 of codex
    assert "5 more refused from agent:opencode on " in section and "another agent" in section
    page = board_page("main")
    refused = page[page.index("Refused") :]
    assert "8 writes refused" in refused and "5 more refused from agent:opencode on " in refused


def test_the_board_shows_the_plans_refusals(ledger_env: Path) -> None:
    from starlette.testclient import TestClient

    from tests.test_board_templates import Page
    from todoledger.mcp.http import create_app
    from todoledger.web.app import Board

    with stdio_wire(ledger_env) as wire:
        wire.call("todowrite", {"todos": [{"content": "Train EAGLE-3", "status": "pending"}]})
        wire.call("todowrite", SEED_003)
    board = Board(name="tester")
    app, tools = create_app(routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            page = client.get("/plan?plan=main")
    finally:
        tools.close()
        board.close()
    text = " ".join(Page(page.text).text)
    refused = text[text.index("Refused") :]
    assert 'todowrite: rejected: todos[3]: duplicate key "priority"' in refused and "mcp:" in refused


def test_an_agents_undo_of_its_add_does_not_remove_an_item_a_person_gated_or_approved_since(
    ledger_env: Path,
) -> None:
    """Adversarial review: the agent added an item, a person gated it (or approved it),
    and the agent's plain `todoledger undo` took back its own add: the person's gated
    item left the plan without a reason, around the refused bare cancel and the held drop."""
    env = subprocess_env(ledger_env, CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="s1")

    def agent(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [todoledger_bin(), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    gated = agent("add", "Ship the release", "-q").stdout.strip()
    with Ledger(ledger_env) as lg:
        lg.add_check(gated, "file:release.tar", plan="main", writer=PERSON)
    approved = agent("add", "Run the migration", "--needs-approval", "-q").stdout.strip()
    with Ledger(ledger_env) as lg:
        lg.approve(approved, plan="main", writer=PERSON)
    for item in (approved, gated):
        before = snapshot(ledger_env, "main")
        undone = agent("undo")
        assert undone.returncode == 1, undone.stdout
        assert f"{item} is held by {PERSON}" in undone.stderr and "nothing was done" in undone.stderr
        assert len(undone.stderr.strip().splitlines()) == 1
        assert snapshot(ledger_env, "main") == before
        if item == approved:  # its add is the agent's last change: a person's to take back
            with Ledger(ledger_env) as lg:
                lg.undo(plan="main", writer=PERSON, any_writer=True)
    # An add nobody else touched is the agent's to undo, as before.
    mine = agent("add", "Scratch note", "-q").stdout.strip()
    assert agent("undo").returncode == 0
    assert mine not in {str(i["id"]) for i in snapshot(ledger_env, "main")}


def test_a_hook_mirror_refused_by_lint_is_recorded_and_the_hook_still_exits_0(ledger_env: Path) -> None:
    """A real `todoledger hook claude-code` run whose TodoWrite list the ledger refuses (the last of
    two "status" keys, "done", is no Claude Code status): exit 0, nothing said to the agent, the plan
    unchanged, and the refusal with its writer and reason in `todoledger report` and on the board."""
    from tests.test_hook_claude import hook, post_tool

    env = subprocess_env(ledger_env)
    fresh = json.dumps(post_tool("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}))
    bad = fresh.replace('"status": "pending"', '"status": "pending", "status": "done"')
    first = hook(env, bad)  # no plan yet: nothing is recorded (a refusal creates no plan)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    with Ledger(ledger_env) as lg:
        assert lg.plans() == []
    assert hook(env, fresh).returncode == 0
    before = snapshot(ledger_env, "main")
    proc = hook(env, bad)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert snapshot(ledger_env, "main") == before
    ((writer, summary),) = refused_ops(ledger_env, "main")
    assert writer == "claude-code:s1" and summary.startswith("claude-code list: rejected: todos[0].status")
    done = subprocess.run(
        [todoledger_bin(), "report", "main"], capture_output=True, text=True, env=env, timeout=60
    )
    section = done.stdout[done.stdout.index("## Refused") :]
    assert (
        "1 write refused" in section
        and "claude-code:s1: claude-code list: rejected: todos\\[0\\].status" in section
    )
    page = board_page("main")
    assert "claude-code:s1 : claude-code list: rejected: todos[0].status" in page[page.index("Refused") :]
