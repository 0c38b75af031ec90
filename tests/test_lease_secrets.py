"""Lease holders are proven by a secret, not by a name (issue 29, Why: "lease
holders are strings"). The tests read the lease's number from `history --json`,
as any writer can, and replay it: refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from todoledger import Ledger, LedgerError
from todoledger.core.timefmt import shift
from todoledger.identity import MARKER_VARS

from .conftest import subprocess_env, todoledger_bin
from .test_mcp import refuse, stdio

T0 = "2026-03-01T10:00:00.000Z"


def history_token(db: Path | str, item: str) -> int:
    """The lease's number as `todoledger history --json` shows it to anyone."""
    out = subprocess.run(
        [todoledger_bin(), "history", item, "--json"], capture_output=True, text=True, env=subprocess_env(db)
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    rows = rows if isinstance(rows, list) else rows.get("events", rows)
    return max(int(r["new"]["token"]) for r in rows if r["field"] == "claimed")


def claimed(lg: Ledger, writer: str, **kw: Any) -> dict[str, Any]:
    got = lg.next(claim=True, writer=writer, **kw)
    assert got, "nothing was ready"
    return got[0]


def test_the_secret_goes_to_the_claimant_only(ledger_env: Path | str) -> None:
    from todoledger.mcp.tools import PlanTools

    with Ledger() as lg:
        lg.add("Build", writer="lead")
        got = claimed(lg, "codex:w9")
        secret = got["lease_secret"]
        assert len(secret) == 32 and int(secret, 16) >= 0  # 128 bits
        shown = json.dumps(
            [lg.history(), lg.leases(), lg.show(), lg.export_text() if hasattr(lg, "export_text") else ""]
        )
        assert secret not in shown
    tools = PlanTools()
    try:
        mine = tools.plan_next({"claim": True}, "mcp:a:s1")
        other = tools.plan_next({}, "mcp:b:s2")
        assert "lease_secret" not in json.dumps([mine, other])  # the server keeps it for its session
    finally:
        tools.close()


def test_a_name_and_a_number_from_the_history_do_not_make_a_holder_on_the_command_line(
    ledger_env: Path | str,
) -> None:
    """Before: `--writer codex:w9` from the command line, markers unset, completed
    Codex's leased item, and the history blamed Codex."""
    with Ledger() as lg:
        lg.add("Build", writer="lead")
        item = claimed(lg, "codex:w9")["id"]
    token = history_token(ledger_env, item)
    env = {k: v for k, v in subprocess_env(ledger_env).items() if k not in MARKER_VARS}
    for extra in ([], ["--token", str(token)]):
        ran = subprocess.run(
            [todoledger_bin(), "done", item, "--evidence", "mine", "--writer", "codex:w9", *extra],
            capture_output=True,
            text=True,
            env=env,
        )
        assert ran.returncode == 1, ran.stdout
        assert "leased to codex:w9" in ran.stderr or "secret was not shown" in ran.stderr, ran.stderr
    with Ledger() as lg:
        assert [i["status"] for i in lg.items()] == ["in_progress"]


def test_another_client_naming_the_holders_session_over_mcp_is_refused(ledger_env: Path | str) -> None:
    """Before: the agent's own stdio client announced Codex's client name and passed
    Codex's session writer: it completed Codex's leased item."""
    from todoledger.mcp.tools import PlanTools

    with Ledger() as lg:
        lg.add("Build", writer="lead")
    codex = PlanTools()
    try:
        item = codex.plan_next({"claim": True}, "mcp:codex:aaaa1111")["claimed"]["id"]
    finally:
        codex.close()
    token = history_token(ledger_env, item)

    async def main() -> None:
        async with stdio(
            Path(str(ledger_env)) if isinstance(ledger_env, Path) else ledger_env, name="codex"
        ) as c:  # type: ignore[arg-type]
            args = {"id": item, "status": "completed", "evidence": "x", "writer": "mcp:codex:aaaa1111"}
            said = await refuse(c, "plan_update", args)
            assert "leased to mcp:codex:aaaa1111" in said or "another client's session" in said, said
            said = await refuse(c, "plan_update", args | {"token": token})
            assert "secret was not shown" in said or "another client's session" in said, said

    anyio.run(main)
    with Ledger() as lg:
        assert [i["status"] for i in lg.items()] == ["in_progress"]


def test_a_former_holders_late_done_does_not_overwrite_the_successors(ledger_env: Path | str) -> None:
    """Before (4 of 4 runs on PostgreSQL): a stale holder's `done`, sent after the
    successor had completed the item, overwrote the successor's evidence."""
    with Ledger() as setup:
        setup.add("Build", writer="lead")
    first, second = Ledger(), Ledger()  # two agents, each with its own claims
    try:
        stale = claimed(first, "agent-a", lease=60, at=T0)
        again = claimed(second, "agent-b", at=shift(T0, 120))
        assert again["id"] == stale["id"]
        second.done(again["id"], writer="agent-b", evidence="b measured it", at=shift(T0, 130))
        for kw in ({}, {"token": stale["token"]}):
            with pytest.raises(LedgerError, match="fenced"):
                first.done(stale["id"], writer="agent-a", evidence="a's late word", at=shift(T0, 140), **kw)
    finally:
        first.close()
        second.close()
    with Ledger() as lg:
        item = lg.items()[0]
        assert (item["status"], item["evidence"]) == ("completed", "b measured it")
