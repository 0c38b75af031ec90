"""The report's record of claims: how each completed item was proven, and per
writer how its claims of "done" fared; on a history written through the
ledger (both backends) and on an ingested transcript."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from todoledger.cli.main import cli
from todoledger.ingest.claims import COLUMNS
from todoledger.ingest.html import render_html
from todoledger.ingest.report import load, render_json, render_md
from todoledger.ledger import Ledger

PLAN = "claims"
TRANSCRIPTS = Path(__file__).parent / "data" / "transcripts" / "public"
AGENT_MCP = "mcp:claude-code:s1"  # the agent's MCP server
AGENT_SHELL = "agent-shell:claude-code:s1"  # the same agent, from its shell
AGENT_HOOK = "claude-code:s1"  # the same agent, through its hooks
CI = "agent:ci@ci"  # another principal: a CI token's identity
ANN, BOB = "cli:ann", "cli:bob"  # people, through the Python API with an explicit identity


def history(lg: Ledger, tmp: Path) -> dict[str, str]:
    """One completion of each kind; returns item ids by name."""
    ok = tmp / "built.txt"
    ok.write_text("yes\n")
    gone = tmp / "served.txt"
    gone.write_text("yes\n")

    def add(name: str) -> str:
        return str(lg.add(name, plan=PLAN, writer=AGENT_MCP)["id"])

    ids = {n: add(n) for n in ("build", "selftest", "report", "serve", "reopen", "force", "removed", "ci")}
    # A person's gate that holds: verified by ann.
    lg.add_check(ids["build"], f"cmd:test -f {ok}", plan=PLAN, writer=ANN)
    lg.done(ids["build"], plan=PLAN, writer=AGENT_MCP)
    # The agent's own check (written over MCP), its claim from its shell: self-checked.
    lg.add_check(ids["selftest"], f"cmd:test -f {ok}", plan=PLAN, writer=AGENT_MCP)
    lg.done(ids["selftest"], plan=PLAN, writer=AGENT_SHELL)
    # No check at all: reported.
    lg.done(ids["report"], plan=PLAN, writer=AGENT_HOOK)
    # A person's gate that held at the claim, then fails on a person's re-run: failed later.
    lg.add_check(ids["serve"], f"cmd:test -f {gone}", plan=PLAN, writer=ANN)
    lg.done(ids["serve"], plan=PLAN, writer=AGENT_MCP)
    gone.unlink()
    lg.verify([ids["serve"]], plan=PLAN, writer=ANN)
    # Claimed, reopened by a person, claimed again with nothing behind it.
    lg.done(ids["reopen"], plan=PLAN, writer=AGENT_MCP)
    lg.update(ids["reopen"], plan=PLAN, writer=ANN, status="in_progress")
    lg.done(ids["reopen"], plan=PLAN, writer=AGENT_MCP)
    # A person forces past a failing gate.
    lg.add_check(ids["force"], f"cmd:test -f {tmp / 'never'}", plan=PLAN, writer=ANN)
    lg.done(ids["force"], plan=PLAN, writer=BOB, force=True, force_reason="shipping anyway")
    # A failing gate removed by a person, then the agent claims it.
    check = lg.add_check(ids["removed"], f"cmd:test -f {tmp / 'never'}", plan=PLAN, writer=ANN)
    lg.remove_check(check["id"], plan=PLAN, writer=BOB)
    lg.done(ids["removed"], plan=PLAN, writer=AGENT_MCP)
    # Another principal's check (a CI token's) cross-checks the agent's claim: no person's, so not proof.
    lg.add_check(ids["ci"], f"cmd:test -f {ok}", plan=PLAN, writer=CI)
    lg.done(ids["ci"], plan=PLAN, writer=AGENT_HOOK)
    return ids


def test_each_completion_says_how_it_was_proven_and_each_writer_how_its_claims_fared(
    tmp_path: Path, ledger_backend: str
) -> None:
    with Ledger() as lg:
        ids = history(lg, tmp_path)
        report = load(lg, PLAN)
    how = {c.item: (c.claimed_by, c.how()) for c in report.claims.items}
    assert how == {
        ids["build"]: (AGENT_MCP, "verified by cli:ann"),
        ids["selftest"]: (AGENT_SHELL, "self-checked"),
        ids["report"]: (AGENT_HOOK, "reported"),
        ids["serve"]: (AGENT_MCP, "failed"),
        ids["reopen"]: (AGENT_MCP, "reported"),
        ids["force"]: (BOB, "forced"),
        ids["removed"]: (AGENT_MCP, "gate removed by cli:bob"),
        ids["ci"]: (AGENT_HOOK, "cross-checked"),
    }
    assert COLUMNS == (
        "claimed",
        "proven independently",
        "checked, not proven",
        "reported",
        "failed or stale later",
        "reopened",
        "forced",
        "gate removed",
    )
    assert report.claims.rows() == [
        # writer, claimed, independent, self-checked, reported, failed/stale, reopened, forced, gate removed
        (AGENT_SHELL, "1", "0", "1", "0", "0", "0", "0", "0"),
        (AGENT_HOOK, "2", "0", "1", "1", "0", "0", "0", "0"),
        (BOB, "1", "0", "0", "0", "0", "0", "1", "0"),
        (AGENT_MCP, "5", "1", "0", "1", "1", "1", "0", "1"),
    ]
    text = render_md(report)
    section = text[text.index("## Claims by writer") : text.index("## Timeline")]
    assert "| mcp:claude-code:s1 | 5 | 1 | 0 | 1 | 1 | 1 | 0 | 1 |" in section
    proof = text[text.index("## Proof of completions") : text.index("## Claims by writer")]
    assert f"| {ids['removed']} removed | mcp:claude-code:s1 |" in proof
    assert "gate removed by cli:bob |" in proof
    data = json.loads(render_json(report))
    assert data["claims"]["writers"][3] == {
        "writer": AGENT_MCP,
        "claimed": 5,
        "proven independently": 1,
        "checked, not proven": 0,
        "reported": 1,
        "failed or stale later": 1,
        "reopened": 1,
        "forced": 0,
        "gate removed": 1,
    }
    html = render_html(report)
    assert "<h2>Claims by writer</h2>" in html and "<td>verified by cli:ann</td>" in html


def test_a_transcript_answers_how_often_the_agent_said_done_without_proof(tmp_path: Path) -> None:
    """A vendored Claude Code session (TodoWrite and a plan approved in plan mode),
    ingested: each of its completions stands on the agent's word."""
    source = TRANSCRIPTS / "claude-jsonl__jnarowski_agentcmd__full-session-two.jsonl"
    rollout = tmp_path / "session.jsonl"
    shutil.copy(source, rollout)
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(rollout)])
    assert result.exit_code == 0, result.output
    with Ledger() as lg:
        plans = [p["plan"] for p in lg.plans()]
        assert len(plans) == 1, plans
        report = load(lg, plans[0])
    rows = report.claims.rows()
    assert rows == EXPECTED_TRANSCRIPT_ROWS, rows
    assert {c.how() for c in report.claims.items} == {"reported"}


EXPECTED_TRANSCRIPT_ROWS = [
    # writer, claimed, independent, self-checked, reported, failed/stale, reopened, forced, gate removed
    ("claude-code:8a2518dd-ff41-4d5f-83a1-407b03598cc6", "2", "0", "0", "2", "0", "0", "0", "0"),
]
