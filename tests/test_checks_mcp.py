"""Gates through the real stdio MCP server: a false "done" is refused or flagged."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.test_mcp import call, refuse, stdio
from todoledger import Ledger
from todoledger import verification as v


def test_plan_update_runs_the_gate_and_todowrite_is_told(ledger_env: Path, tmp_path: Path) -> None:
    with Ledger() as lg:
        disk = lg.add("Verify /data has space for 25K samples")
        lg.add("Run inference", depends_on=[disk["id"]])
        v.add_check(lg, disk["id"], "file:space-ok")

    async def main() -> None:
        async with stdio(ledger_env, name="opencode") as c:
            said = await refuse(
                c, "plan_update", {"id": disk["id"], "status": "completed", "evidence": "2.8T avail"}
            )
            assert said.endswith(
                f"{disk['id']} not completed: gate file:space-ok fails: space-ok: no such file"
            )
            todos = [
                {
                    "content": "Verify /data has space for 25K samples",
                    "status": "completed",
                    "priority": "high",
                },
                {"content": "Run inference", "status": "pending", "priority": "high"},
            ]
            reply = await call(c, "todowrite", {"todos": todos})
            assert any("kept as reported, not verified" in w for w in reply["warnings"])
            nxt = await call(c, "plan_next", {})
            assert nxt["ready"] == []  # "Run inference" waits for a verified disk, not a reported one
            (tmp_path / "space-ok").write_text("")
            done = await call(c, "plan_update", {"id": disk["id"], "status": "completed"})
            assert done["item"]["status"] == "completed"

    anyio.run(main)
    with Ledger() as lg:
        rows = {i["content"]: i for i in lg.show()["items"]}
    assert rows["Verify /data has space for 25K samples"]["verification"] == "verified"
    assert rows["Run inference"]["ready"] is True
