"""Replay of the seeds' campaign through the real stdio MCP server, with local
stand-ins (demo_checks.stand_ins: an HTTP server for SGLang's /health, a
temporary folder for /data): the agent claims, the reviewer's gates prove or
refuse, and the report's proof section tells verified from self-checked from
reported, with the per-writer table exact.

The campaign: the five seeds' todo lists (`load_demo`, the agent's writer), the
reviewer's "Verify ..." items, then the agent working the Verify items over MCP
as opencode (the seeds' agent) would: one gate the reviewer set (the server's
/health), one check the agent writes itself, one claim with only words behind
it, and the disk the reviewer's gate refuses."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio

from tests.test_mcp import call, refuse, stdio
from todoledger import Ledger
from todoledger.demo import AGENT, REVIEWER, load_demo
from todoledger.demo_checks import SHORTFALL, TB, stand_ins
from todoledger.ingest.report import load, render_md

SERVER = "Verify the SGLang EAGLE3 server is still up after its ~15-minute start"
RESTART = "Verify the server restarts cleanly between draft-token configurations (zombie GPU processes)"
NORM = "Verify norm_before_residual in the AQ-MedAI drafter config"
DISK = "Verify /data has room for the hidden states of 25K samples (~5.4 TB estimated, 2.8 TB free)"


def test_replay_tells_verified_from_self_checked_from_reported(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        load_demo(lg)
        ids = {i["content"]: i["id"] for i in lg.show("demo")["items"]}
    with stand_ins() as (url, folder):
        data = Path(folder) / "data"
        data.mkdir()
        need = (shutil.disk_usage(data).free + SHORTFALL) / TB
        with Ledger(ledger_env) as lg:
            # The reviewer (a person, through the Python API) gates two of the seeds' assumptions.
            lg.add_check(ids[SERVER], f"{url}/health", plan="demo", writer=REVIEWER)
            lg.add_check(ids[DISK], f"disk:{data}>={need:.4f}T", plan="demo", writer=REVIEWER)
        probe = f"cmd:{sys.executable} -c \"import urllib.request; urllib.request.urlopen('{url}/health')\""

        async def agent() -> dict[str, Any]:
            async with stdio(ledger_env, name="opencode") as c:
                # The reviewer's gate holds: the claim goes through, proven by the reviewer.
                done = await call(
                    c, "plan_update", {"plan": "demo", "id": ids[SERVER], "status": "completed"}
                )
                # The agent writes its own check, then claims: it holds, but it is the agent's own.
                await call(c, "plan_update", {"plan": "demo", "id": ids[RESTART], "check": probe})
                await call(c, "plan_update", {"plan": "demo", "id": ids[RESTART], "status": "completed"})
                # Words only.
                await call(
                    c,
                    "plan_update",
                    {
                        "plan": "demo",
                        "id": ids[NORM],
                        "status": "completed",
                        "evidence": "checked the config",
                    },
                )
                # The reviewer's disk gate refuses the claim: nothing is written.
                said = await refuse(
                    c, "plan_update", {"plan": "demo", "id": ids[DISK], "status": "completed"}
                )
                assert f"{ids[DISK]} not completed: gate disk:{data}>=" in said
                return dict(done["item"])

        item = anyio.run(agent)
        assert item["status"] == "completed"
    with Ledger(ledger_env) as lg:
        report = load(lg, "demo")
    how = {c.item: (c.claimed_by, c.how()) for c in report.claims.items}
    (mcp,) = {who for who, _ in how.values() if who.startswith("mcp:")}
    assert mcp.startswith("mcp:opencode:")
    assert how[ids[SERVER]] == (mcp, f"verified by {REVIEWER}")
    assert how[ids[RESTART]] == (mcp, "self-checked")
    assert how[ids[NORM]] == (mcp, "reported")
    assert ids[DISK] not in how  # refused: never claimed
    # The seeds' own completions (msg 4950's Phase 0.1 and 0.2): the agent's word, evidence
    # quoted by the reviewer, no check.
    phase = {c.content[:9]: c.how() for c in report.claims.items if c.claimed_by == AGENT}
    assert phase == {"Phase 0.1": "reported", "Phase 0.2": "reported"}
    assert report.claims.rows() == [
        # writer, claimed, independent, self-checked, reported, failed/stale, reopened, forced, gate removed
        # The reviewer's two: what the refused call of msg 4329 held (seed 003), on the seed's word.
        (REVIEWER, "2", "0", "0", "2", "0", "0", "0", "0"),
        (mcp, "3", "1", "1", "1", "0", "0", "0", "0"),
        (AGENT, "2", "0", "0", "2", "0", "0", "0", "0"),
    ]
    text = render_md(report)
    assert f"| {mcp} | 3 | 1 | 1 | 1 | 0 | 0 | 0 | 0 |" in text
    assert f"verified by {REVIEWER} |" in text and "| self-checked |" in text
