"""Gates through the real stdio MCP server: a false "done" is refused or flagged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio

from tests.conftest import TESTER, person_env, todoledger_bin
from tests.test_mcp import TOKEN, call, free_port, http, refuse, snapshot, stdio, wait_for_port
from todoledger import Ledger


def test_plan_update_runs_the_gate_and_todowrite_is_told(ledger_env: Path, tmp_path: Path) -> None:
    with Ledger() as lg:
        disk = lg.add("Verify /data has space for 25K samples")
        lg.add("Run inference", depends_on=[disk["id"]])
        lg.add_check(disk["id"], "file:space-ok", writer=TESTER)  # a person's gate: it proves the claim

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
            assert any("not as completed" in w for w in reply["warnings"])
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


def test_plan_update_adds_a_gate_and_metrics_and_plan_verify_returns_receipts(
    ledger_env: Path, tmp_path: Path
) -> None:
    target = tmp_path / "bench.json"
    with Ledger() as lg:
        item = lg.add("Benchmark 16 draft tokens")["id"]

    async def main() -> None:
        async with stdio(ledger_env) as c:
            said = await call(
                c, "plan_update", {"id": item, "check": f"file:{target}", "metrics": ["tok_s=60", "tok_s=62"]}
            )
            assert said["check"]["trusted"] is True  # written over stdio: this machine's user
            assert said["metrics"] == ["tok_s=60 (run 1)", "tok_s=62 (run 2)"]
            first = await call(c, "plan_verify", {"ids": [item]})
            assert [(r["item"], r["result"]) for r in first["receipts"]] == [(item, "fails")]
            assert first["receipts"][0]["output"] == f"{target}: no such file"
            target.write_text("{}")
            second = await call(c, "plan_verify", {})
            assert [r["result"] for r in second["receipts"]] == ["holds"]
            done = await call(c, "plan_update", {"id": item, "status": "completed"})
            assert done["item"]["status"] == "completed"
            # Bad input: one line, nothing written.
            before = snapshot(ledger_env)
            for args, line in (
                ({"id": item, "check": "disk:/x>=lots"}, "lots"),
                ({"id": item, "metrics": ["tok_s=fast"]}, "is not a number"),
                ({"id": item, "metrics": ["tok_s=1", ""]}, "non-empty strings"),
                ({"id": item, "check": "file:x", "metrics": ["bad"]}, "NAME=NUMBER"),
                ({"ids": [item, 3]}, "non-empty strings"),
            ):
                tool = "plan_verify" if "ids" in args else "plan_update"
                assert line in await refuse(c, tool, args)
            assert snapshot(ledger_env) == before

    anyio.run(main)
    with Ledger() as lg:
        assert [m["value"] for m in lg.metrics(item)] == [60.0, 62.0]
        # The agent wrote the check and completed the item: its own check proves nothing more.
        assert lg.show()["items"][0]["verification"] == "self-checked"


def serve_on(ledger_env: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--token", TOKEN, *extra],
        env=person_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_port(proc, port)
    return proc, f"http://127.0.0.1:{port}/mcp"


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_checks_over_http_are_untrusted_and_serve_runs_none_without_allow_checks(
    ledger_env: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    local = tmp_path / "ran-local"
    with Ledger() as lg:
        item = lg.add("Deploy SGLang")["id"]
        mine = lg.add("Check the disk")["id"]
        lg.add_check(mine, f"cmd:touch {local}")  # written on this machine: trusted
    spec = f"cmd:touch {marker}"
    proc, url = serve_on(ledger_env)
    try:

        async def closed() -> None:
            async with http(url) as c:
                added = await call(c, "plan_update", {"id": item, "check": spec})
                assert added["check"]["trusted"] is False and "todoledger trust" in added["check"]["hint"]
                skipped = await call(c, "plan_verify", {"ids": [item]})
                assert skipped["receipts"] == [] and "todoledger trust" in skipped["skipped"][0]["why"]
                said = await refuse(c, "plan_verify", {"ids": [mine]})
                assert "started without --allow-checks" in said
                said = await refuse(c, "plan_update", {"id": item, "status": "completed"})
                assert "runs only where checks are allowed" in said and "(the check" not in said

        anyio.run(closed)
    finally:
        stop_server(proc)
    with Ledger() as lg:
        lg.trust([item], writer="cli:tester")  # a person approves the exact text
        assert lg.get(item)["status"] == "pending"
    assert not marker.exists()
    proc, url = serve_on(ledger_env, "--allow-checks")
    try:

        async def allowed() -> None:
            async with http(url) as c:
                ran = await call(c, "plan_verify", {"ids": [item]})
                assert [r["result"] for r in ran["receipts"]] == ["holds"]
                other = await call(c, "plan_update", {"id": item, "check": f"file:{marker}.other"})
                assert other["check"]["trusted"] is False
                again = await call(c, "plan_verify", {"ids": [item]})
                assert len(again["receipts"]) == 1 and again["skipped"][0]["check"] == other["check"]["id"]

        anyio.run(allowed)
    finally:
        stop_server(proc)
    assert marker.exists() and not local.exists()


def test_plan_update_overrides_a_failing_gate_only_with_a_reason(ledger_env: Path) -> None:
    """MCP's way past a failing gate is `done --force --reason`'s: force and reason,
    recorded in history. A refusal names the tool's arguments, not the CLI's flags."""
    with Ledger() as lg:
        gated = lg.add("Server is up")["id"]
        lg.add_check(gated, "cmd:false")
        dropped = lg.add("Benchmark on the old box")["id"]

    async def main() -> None:
        async with stdio(ledger_env, name="codex") as c:
            said = await refuse(c, "plan_update", {"id": gated, "status": "completed", "force": True})
            assert said.endswith("overriding a failing gate needs force true with a reason"), said
            assert "--" not in said
            before = snapshot(ledger_env)  # the refused override left the gate's receipt, nothing else
            for args in (
                {"status": "completed", "reason": "checked on the box"},  # no force: no override
                {"status": "in_progress", "force": True, "reason": "checked on the box"},
                {"notes": "x", "reason": "why"},
            ):
                said = await refuse(c, "plan_update", {"id": gated, **args})
                assert said.startswith('"reason" says why an item is cancelled or completed past'), said
            blank = {"id": gated, "status": "completed", "force": True, "reason": " "}
            assert await refuse(c, "plan_update", blank) == '"reason" must not be empty'
            assert snapshot(ledger_env) == before
            done = await call(
                c,
                "plan_update",
                {"id": gated, "status": "completed", "force": True, "reason": "checked on the box"},
            )
            assert done["item"]["status"] == "completed"
            assert done["hint"] == "completed past its gate on your reason (kept in history); it shows failed"
            # A cancellation's reason is the same argument; notes stay notes.
            cancelled = await call(
                c,
                "plan_update",
                {"id": dropped, "status": "cancelled", "reason": "the box is gone", "notes": "see ops log"},
            )
            assert cancelled["item"]["status"] == "cancelled"

    anyio.run(main)
    with Ledger() as lg:
        forced = [e for e in lg.history(item=gated) if e["field"] == "forced"]
        assert len(forced) == 1
        assert forced[0]["new"]["past"] == "gates" and forced[0]["new"]["reason"] == "checked on the box"
        assert [(g["spec"], g["result"]) for g in forced[0]["new"]["gates"]] == [("cmd:false", "fails")]
        assert forced[0]["writer"].startswith("mcp:codex:")
        rows = {i["id"]: i for i in lg.show()["items"]}
        assert rows[gated]["verification"] == "failed"  # overridden, not verified
        row = lg.get(dropped)
        assert (row["reason"], row["notes"]) == ("the box is gone", "see ops log")
