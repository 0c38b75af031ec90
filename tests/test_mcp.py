"""`todoledger mcp` (stdio) and `todoledger serve` (streamable HTTP) through
the official SDK's client, the MCP Inspector's CLI, and raw HTTP: real
server processes, a real uvicorn server, real SQLite files."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from tests.conftest import person_env, subprocess_env, todoledger_bin
from todoledger import Ledger, LedgerError
from todoledger.mcp.tools import INSTRUCTIONS, footprint_tokens

TOKEN = "test-token-0123456789abcdef"
CLAUDE = [
    {"content": "Reproduce the flaky test", "status": "completed", "activeForm": "Reproducing"},
    {"content": "Fix the race in the cache", "status": "in_progress", "activeForm": "Fixing the race"},
    {"content": "Add a regression test", "status": "pending", "activeForm": "Adding a test"},
]
OPENCODE = [
    {"content": "Read the spec", "status": "completed", "priority": "high", "id": "1"},
    {"content": "Write the parser", "status": "in_progress", "priority": "high", "id": "2"},
    {"content": "Document it", "status": "pending", "priority": "low", "id": "3"},
]
CODEX = [
    {"content": "Inspect logs", "status": "completed"},
    {"content": "Patch config", "status": "in_progress"},
]
GEMINI = [
    {"description": "Survey callers", "status": "in_progress"},
    {"description": "Rename API", "status": "pending"},
]


# helpers -----------------------------------------------------------------------


def stdio_params(db: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=todoledger_bin(), args=["mcp"], env={"TODOLEDGER_DB": str(db), **env}
    )


def mcp_process(db: Path | str, stdin: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """`todoledger mcp` as a raw process, for JSON-RPC lines written by hand."""
    return subprocess.Popen(
        [todoledger_bin(), "mcp"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(db),
    )


@asynccontextmanager
async def stdio(db: Path, name: str = "pytest", **env: str) -> AsyncIterator[Client]:
    async with Client(stdio_params(db, **env), client_info=Implementation(name=name, version="1")) as client:
        yield client


@asynccontextmanager
async def http(
    url: str, name: str = "pytest", mode: str = "auto", token: str | None = TOKEN
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as hc,
        Client(
            streamable_http_client(url, http_client=hc),
            client_info=Implementation(name=name, version="1"),
            mode=mode,
        ) as client,
    ):
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    """The tool's JSON result; a tool error fails the test."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    return json.loads(text)


async def refuse(client: Client, tool: str, args: dict[str, Any]) -> str:
    """The tool error's message, which must be one short sentence."""
    result = await client.call_tool(tool, args)
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, f"{tool}({args}) was accepted: {text}"
    assert "\n" not in text and "Traceback" not in text and len(text) < 400, text
    return text


def snapshot(db: Path | str) -> Any:
    if isinstance(db, Path) and not db.exists():
        return None
    with Ledger(db) as lg:
        plans = lg.plans()
        # A refused call is recorded for the person (a `refused` op, issue 31): nothing else changes.
        return plans, {
            p["plan"]: (
                list(lg.export(p["plan"])),
                len([o for o in lg.ops(p["plan"]) if o["kind"] != "refused"]),
            )
            for p in plans
        }


def nothing(db: Path | str) -> Any:
    """The snapshot of a ledger never written: no file; on PostgreSQL, no plan."""
    return None if isinstance(db, Path) else ([], {})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(proc: subprocess.Popen[bytes], port: int) -> None:
    """Until the server listens; its stderr if it died first."""
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(
                    f"serve did not start: {proc.stderr.read().decode() if proc.stderr else ''}"
                ) from None
            time.sleep(0.05)


@pytest.fixture
def server(ledger_env: Path) -> Iterator[str]:
    """`todoledger serve` on a free loopback port, with a token."""
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--token", TOKEN],
        env=person_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_port(proc, port)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# the tool set ------------------------------------------------------------------


def test_tools_list_is_small_and_teaches_the_habit(ledger_env: Path) -> None:
    async def main() -> None:
        async with stdio(ledger_env) as c:
            tools = (await c.list_tools()).tools
            instructions = c.instructions or ""
        assert [t.name for t in tools] == [
            "todowrite",
            "todoread",
            "plan_next",
            "plan_update",
            "plan_verify",
            "plan_sweep",
        ]
        listed = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools])
        assert footprint_tokens(listed) <= 1100, footprint_tokens(listed)  # six tools (issue 33)
        assert instructions == INSTRUCTIONS and footprint_tokens(instructions) <= 300
        for habit in ("one item in_progress", "evidence", "todoread"):
            assert habit in instructions
        for t in tools:
            assert all(p in t.input_schema["properties"] for p in ("plan", "writer")), t.name
        assert "in_progress" in (tools[0].description or "") and "evidence" in (tools[3].description or "")

    anyio.run(main)


def test_stdio_each_dialect_read_update_claim_resources(ledger_env: Path) -> None:
    async def main() -> None:
        async with stdio(ledger_env, name="codex", TODOLEDGER_PLAN="cx") as cx:  # the server's default plan
            codex = await call(cx, "todowrite", {"todos": CODEX})
            assert codex["plan"] == "cx" and [t["content"] for t in codex["todos"]] == [
                "Inspect logs",
                "Patch config",
            ]
            bare = await call(cx, "plan_update", {"id": codex["ids"][1], "status": "completed"})
            assert bare["hint"] == "add evidence: what shows it is done"
        async with stdio(ledger_env, name="claude-code") as c:
            claude = await call(c, "todowrite", {"todos": CLAUDE})
            assert claude["todos"] == CLAUDE and claude["plan"] == "main" and len(claude["ids"]) == 3
            opencode = await call(c, "todowrite", {"todos": OPENCODE, "plan": "oc"})
            assert [t["content"] for t in opencode["todos"]] == [t["content"] for t in OPENCODE]
            assert [t["id"] for t in opencode["todos"]] == opencode["ids"]
            gemini = await call(c, "todowrite", {"todos": GEMINI, "plan": "gem"})
            assert gemini["todos"] == GEMINI

            read = await call(c, "todoread", {})
            assert read["counts"] == {"completed": 1, "in_progress": 1, "pending": 1}
            fix = claude["ids"][1]
            assert fix in [i["id"] for i in read["in_progress"]]
            assert "items" not in read
            full = await call(c, "todoread", {"all": True, "plan": "oc"})
            assert [i["content"] for i in full["items"]] == [t["content"] for t in OPENCODE]

            done = await call(
                c, "plan_update", {"id": fix, "status": "completed", "evidence": "pytest: 41 passed"}
            )
            assert done["item"]["status"] == "completed" and done["item"]["evidence"] == "pytest: 41 passed"
            test_id = claude["ids"][2]
            await call(
                c, "plan_update", {"id": test_id, "depends_on": fix, "priority": "high", "notes": "after fix"}
            )

            ready = await call(c, "plan_next", {})
            assert [i["id"] for i in ready["ready"]] == [test_id]
            claimed = await call(c, "plan_next", {"claim": True})
            assert claimed["claimed"]["id"] == test_id
            assert (await call(c, "plan_next", {"claim": True}))["claimed"] is None

            plan_md = (await c.read_resource("todoledger://plan/main")).contents[0].text  # type: ignore[union-attr]
            assert "- [x] Fix the race in the cache" in plan_md and "evidence: pytest: 41 passed" in plan_md
            prime = (await c.read_resource("todoledger://prime")).contents[0].text  # type: ignore[union-attr]
            assert prime.startswith("todoledger plan 'main'") and "Add a regression test" in prime

        with Ledger(ledger_env) as lg:
            items = {i["id"]: i for i in lg.items("main")}
            assert items[test_id]["status"] == "in_progress" and items[test_id]["depends_on"] == [fix]
            writers = {op["writer"] for op in lg.ops("main")}
            assert len(writers) == 1 and writers.pop().startswith("mcp:claude-code:")
            assert {i["content"] for i in lg.items("gem")} == {"Survey callers", "Rename API"}
            assert [(i["content"], i["status"]) for i in lg.items("cx")] == [
                ("Inspect logs", "completed"),
                ("Patch config", "completed"),
            ]
            assert lg.check() == []

    anyio.run(main)


def test_http_modern_and_legacy_sessions(server: str, ledger_env: Path) -> None:
    async def main() -> None:
        async with http(server, name="remote-a") as a:
            wrote = await call(a, "todowrite", {"todos": CLAUDE})
            ids = wrote["ids"]
            assert wrote["todos"] == CLAUDE
            me = wrote["writer"]
            assert me.startswith("mcp:remote-a:req-")
        async with http(server, name="remote-a") as other:  # another agent, same client name
            theirs = [{"content": "Other agent's task", "status": "pending", "activeForm": "Doing it"}]
            assert (await call(other, "todowrite", {"todos": theirs}))["writer"] != me
        async with http(server, name="remote-b", mode="legacy") as b:
            assert b.protocol_version.startswith("2025")
            read = await call(b, "todoread", {})
            assert read["counts"] == {"completed": 1, "in_progress": 1, "pending": 2}  # nothing dropped
            await call(b, "plan_update", {"id": ids[1], "status": "completed", "evidence": "ci green"})
            claimed = await call(b, "plan_next", {"claim": True})
            assert claimed["claimed"]["id"] == ids[2]
            md = (await b.read_resource("todoledger://plan/main")).contents[0].text  # type: ignore[union-attr]
            assert "(in progress, mcp:remote-b:" in md
        with Ledger(ledger_env) as lg:
            ops = lg.ops("main")
            assert ops[0]["writer"] == me
            legacy = ops[-1]["writer"]
            assert legacy.startswith("mcp:remote-b:") and len(legacy.rsplit(":", 1)[1]) == 8
            assert lg.get(ids[2])["updated_by"] == legacy
        async with http(server, name="remote-a") as a2:
            # Passing the writer back keeps one view: what it leaves out is dropped, only its own.
            temp = {"content": "Temporary probe", "status": "pending", "activeForm": "Probing"}
            await call(a2, "todowrite", {"todos": [*CLAUDE, temp], "writer": me})
            await call(a2, "todowrite", {"todos": CLAUDE, "writer": me})
        with Ledger(ledger_env) as lg:
            by_content = {i["content"]: i for i in lg.items("main")}
            probe = by_content["Temporary probe"]
            assert probe["status"] == "dropped" and probe["reason"].startswith(
                f"dropped by {me} at revision "
            )
            assert by_content["Other agent's task"]["status"] == "pending"
            assert by_content[CLAUDE[1]["content"]]["status"] == "completed"  # completed by remote-b: kept

    anyio.run(main)


def test_http_token_origin_and_size_are_enforced(server: str, ledger_env: Path) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "todowrite", "arguments": {"todos": CLAUDE}},
    }
    accept = {"accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as hc:
        missing = hc.post(server, json=body, headers=accept)
        wrong = hc.post(server, json=body, headers=accept | {"Authorization": "Bearer nope"})
        good = accept | {"Authorization": f"Bearer {TOKEN}"}
        evil_origin = hc.post(server, json=body, headers=good | {"Origin": "http://evil.example"})
        rebinding = hc.post(server, json=body, headers=good | {"Host": "evil.example"})
        huge = hc.post(
            server,
            content=b'{"x":"' + b"a" * (3 * 1024 * 1024) + b'"}',
            headers=good | {"content-type": "application/json"},
        )
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert "missing bearer token" in missing.json()["error"] and "wrong bearer token" in wrong.json()["error"]
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert evil_origin.status_code == 403 and rebinding.status_code == 421
    assert huge.status_code == 413
    assert snapshot(ledger_env) == (
        [],
        {},
    )  # nothing was written: no plan, no item (the starter's token aside)

    async def wrong_token() -> None:
        async with http(server, token="wrong-token") as c:
            await c.list_tools()

    with pytest.raises(Exception) as refused:
        anyio.run(wrong_token)
    # The server answered (no connection error) and refused; the same client with the token works.
    assert "Server returned an error response" in _messages(refused.value), _messages(refused.value)

    async def right_token() -> None:
        async with http(server) as c:
            assert len((await c.list_tools()).tools) == 6

    anyio.run(right_token)


def _messages(exc: BaseException) -> str:
    """Every message in an exception, its groups and causes (the SDK nests them)."""
    parts = [f"{type(exc).__name__}: {exc}"]
    for inner in getattr(exc, "exceptions", ()):
        parts.append(_messages(inner))
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None and linked is not exc:
            parts.append(_messages(linked))
    return " | ".join(parts)


def test_serve_refuses_remote_exposure_without_token(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    env.pop("TODOLEDGER_TOKEN", None)
    proc = subprocess.run(
        [todoledger_bin(), "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode != 0
    assert "refusing to serve on 0.0.0.0 without a token" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_input_gets_one_clear_error_and_changes_nothing(ledger_env: Path) -> None:
    async def main() -> None:
        async with stdio(ledger_env) as c:
            assert "known plans: none yet" in await refuse(c, "todoread", {"plan": "ghost"})
            assert snapshot(ledger_env) == nothing(ledger_env)  # reading created no ledger
            wrote = await call(c, "todowrite", {"todos": CLAUDE})
            item = wrote["ids"][0]
            before = snapshot(ledger_env)
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("todowrite", {}, '"todos" is required'),
                ("todowrite", {"todos": "Fix it"}, "must be an array"),
                ("todowrite", {"todos": [{"content": "", "status": "pending"}]}, "rejected"),
                ("todowrite", {"todos": [{"content": "x", "status": "finished"}]}, "rejected"),
                (
                    "todowrite",
                    {"todos": [{"task": "x"}]},
                    'unknown payload: not opencode (todos[0] has no "content")',
                ),
                ("todowrite", {"bogus": 1, "todos": []}, "has no argument 'bogus'"),
                ("todowrite", {"todos": [], "plan": 7}, '"plan" must be a string, not a number'),
                (
                    "todowrite",
                    {"todos": CLAUDE, "plan": CODEX},
                    '"plan" must be a string, not an array',
                ),
                ("todowrite", {"plan": "main"}, '"todos" is required'),
                ("todowrite", {"todos": [{"content": "x" * 3_000_000, "status": "pending"}]}, "the limit is"),
                ("todoread", {"all": "yes"}, "true or false"),
                ("todoread", {"plan": "ghost"}, "known plans: 'main'"),
                ("plan_next", {"plan": "ghost", "claim": True}, "known plans: 'main'"),
                ("plan_next", {"limit": 0}, "between 1 and 100"),
                ("plan_next", {"limit": "3"}, "must be an integer"),
                ("plan_update", {"id": item, "status": "completed", "plan": "ghost"}, "known plans: 'main'"),
                ("plan_update", {"status": "completed"}, '"id" is required'),
                ("plan_update", {"id": 5, "status": "completed"}, '"id" must be a string'),
                ("plan_update", {"id": "zzzzzz", "status": "completed"}, "no item 'zzzzzz'"),
                ("plan_update", {"id": item, "status": "finished"}, "must be one of pending"),
                ("plan_update", {"id": item}, "nothing to change"),
                ("plan_update", {"id": item, "depends_on": item}, "cannot wait for itself"),
                ("plan_update", {"id": item, "content": "  "}, "must not be empty"),
                ("nosuchtool", {}, "nosuchtool"),
            ]
            for tool, args, expected in cases:
                message = await refuse(c, tool, args)
                assert expected in message, (tool, args, message)
            assert snapshot(ledger_env) == before
            created = await call(c, "todowrite", {"todos": GEMINI, "plan": "fresh"})
            assert created["plan"] == "fresh" and (await call(c, "todoread", {"plan": "fresh"}))["counts"]

    anyio.run(main)


STDIO_RACERS = 4


@pytest.mark.slow
def test_claim_race_every_item_claimed_exactly_once(server: str, ledger_env: Path) -> None:
    """32 sessions race for 500 ready items on one ledger: 4 stdio server
    processes and 28 HTTP sessions on one `serve`, so five processes write the
    ledger side by side (each stdio process costs a second of start-up CPU
    that the race itself does not need)."""
    with Ledger(ledger_env) as lg:
        result = lg.write(
            {"todos": [{"content": f"shard {n:03d}", "status": "pending"} for n in range(500)]},
            writer="setup",
        )
        all_ids = set(result.ids)
    claims: dict[str, list[str]] = {}

    async def racer(name: str, opened: Any) -> None:
        async with opened as c:
            mine = claims.setdefault(name, [])
            while True:
                got = await call(c, "plan_next", {"claim": True})
                if got["claimed"] is None:
                    return
                mine.append(got["claimed"]["id"])

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(STDIO_RACERS):
                tg.start_soon(racer, f"stdio-{n:02d}", stdio(ledger_env, name=f"stdio-{n:02d}"))
            for n in range(32 - STDIO_RACERS):
                tg.start_soon(racer, f"http-{n:02d}", http(server, name=f"http-{n:02d}"))

    anyio.run(main)
    counted = Counter(i for ids in claims.values() for i in ids)
    assert len(claims) == 32
    assert set(counted) == all_ids and set(counted.values()) == {1}
    with Ledger(ledger_env) as lg:
        starts = Counter(
            e["item"] for e in lg.history() if e["field"] == "status" and e["new"] == "in_progress"
        )
        assert set(starts) == all_ids and set(starts.values()) == {1}
        owner = {i["id"]: i["updated_by"] for i in lg.items()}
        for name, ids in claims.items():
            assert all(owner[i].startswith(f"mcp:{name}:") for i in ids)
        assert lg.check() == []
    assert sum(1 for ids in claims.values() if ids) > 1  # it was a race, not one winner


def inspector_bin() -> str:
    """The pinned MCP Inspector, installed beside the agent CLIs
    (tests/e2e/install_agents.sh, which .ci/run calls): `npx -y` would ask the
    registry on every call, 15-45 s a test."""
    from tests.e2e.agents import CACHE, INSTALL_SCRIPT

    path = CACHE / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
    if not path.exists() and shutil.which("npm") is not None:
        subprocess.run(["bash", str(INSTALL_SCRIPT), "inspector"], capture_output=True, timeout=600)
    if not path.exists() or shutil.which("node") is None:
        pytest.skip(
            "the MCP Inspector is not installed: run tests/e2e/install_agents.sh inspector (needs Node.js)"
        )
    return str(path)


@pytest.mark.slow
@pytest.mark.xdist_group("npx")  # one install at a time in the shared npm cache
def test_mcp_inspector_cli(ledger_env: Path) -> None:
    base = [inspector_bin(), "--cli", todoledger_bin(), "mcp"]
    env = subprocess_env(ledger_env)
    listed = subprocess.run(
        [*base, "--method", "tools/list"], env=env, capture_output=True, text=True, timeout=180
    )
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == [
        "todowrite",
        "todoread",
        "plan_next",
        "plan_update",
        "plan_verify",
        "plan_sweep",
    ]
    todos = json.dumps(
        [{"content": "Inspect the inspector", "status": "in_progress", "activeForm": "Inspecting"}]
    )
    called = subprocess.run(
        [*base, "--method", "tools/call", "--tool-name", "todowrite", "--tool-arg", f"todos={todos}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert called.returncode == 0, called.stderr
    answer = json.loads(called.stdout)
    assert answer.get("isError") is not True
    assert json.loads(answer["content"][0]["text"])["todos"][0]["content"] == "Inspect the inspector"
    with Ledger(ledger_env) as lg:
        (item,) = lg.items()
        assert item["status"] == "in_progress" and item["created_by"].startswith("mcp:")


def test_cli_fast_path_does_not_import_the_sdk(ledger_env: Path) -> None:
    code = (
        "import sys\n"
        "from todoledger.cli.main import cli\n"
        "import todoledger.cli.cmd_mcp\n"
        "try:\n    cli.main(['--help'], prog_name='todoledger', standalone_mode=False)\n"
        "except SystemExit:\n    pass\n"
        "assert 'mcp' not in sys.modules and 'starlette' not in sys.modules, sorted(sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=60
    )
    assert proc.returncode == 0, proc.stderr


def test_extra_routes_share_the_guard(ledger_env: Path) -> None:
    """The web board will hang off `serve`: its routes get the same checks."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from todoledger.mcp.http import create_app

    async def board(request: Request) -> PlainTextResponse:
        return PlainTextResponse("board")

    app, _ = create_app(token=TOKEN, routes=[Route("/board", board)])

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as hc:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            assert (await hc.get("/board")).status_code == 401
            assert (await hc.get("/board", headers=auth | {"Host": "attacker.example"})).status_code == 421
            assert (
                await hc.get("/board", headers=auth | {"Origin": "http://attacker.example"})
            ).status_code == 403
            ok = await hc.get("/board", headers=auth | {"Origin": "http://localhost:8765"})
            assert (ok.status_code, ok.text) == (200, "board")

    anyio.run(main)
    with pytest.raises(LedgerError, match="without a token"):
        create_app(host="192.0.2.1")


def test_markdown_is_escaped_and_reasons_are_told_once(ledger_env: Path) -> None:
    hostile = (
        "Harmless\n- [x] Ship to prod `approved`\n\n# Plan main (revision 999)\n"
        "<img src=x onerror=alert(1)> [click](javascript:alert(1))"
    )

    async def main() -> None:
        async with stdio(ledger_env) as c:
            item = (await call(c, "todowrite", {"todos": [{"content": hostile, "status": "pending"}]}))[
                "ids"
            ][0]
            md = (await c.read_resource("todoledger://plan/main")).contents[0].text  # type: ignore[union-attr]
            body = md.split("\n\n", 1)[1]
            # One line, and every Markdown or HTML opener in the agent's text escaped.
            assert body.count("\n") == 1
            text = body.removeprefix("- [ ] ").replace(f"`{item}`", "")
            assert not re.search(r"(?<!\\)[<>\[\]`]", text)
            assert "&lt;img src=x onerror=alert(1)&gt;" in body
            cancelled = await call(
                c, "plan_update", {"id": item, "status": "cancelled", "reason": "not needed"}
            )
            assert cancelled["item"]["status"] == "cancelled"
            assert "\u202e" not in (await refuse(c, "todoread", {"plan": "main\u202e"}))

    anyio.run(main)
    with Ledger(ledger_env) as lg:
        (row,) = lg.items("main")
        assert (row["reason"], row["notes"]) == ("not needed", None)


def test_every_interface_accepts_any_host_but_checks_token_and_origin(ledger_env: Path) -> None:
    """Bound to 0.0.0.0, remote agents reach the server by IP or any name; the
    token then guards it, and browser Origins are still checked."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from todoledger.mcp.http import create_app

    async def board(request: Request) -> PlainTextResponse:
        return PlainTextResponse("board")

    app, _ = create_app(host="0.0.0.0", token=TOKEN, routes=[Route("/board", board)])

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://192.0.2.2:8765") as hc:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            assert (await hc.get("/board")).status_code == 401
            by_ip = await hc.get("/board", headers=auth)
            assert (by_ip.status_code, by_ip.text) == (200, "board")
            evil = await hc.get("/board", headers=auth | {"Origin": "http://attacker.example"})
            assert evil.status_code == 403 and "--allow-host" in evil.json()["error"]

    anyio.run(main)


def test_origins_are_compared_exactly_not_pattern_matched(ledger_env: Path) -> None:
    """Issue 7 B6: with `--host 0.0.0.0` Origins went through fnmatch, where `[::1]`
    is a character class: `http://[::1]:port` was refused and `http://1:80` accepted."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from todoledger.mcp.http import create_app

    async def board(request: Request) -> PlainTextResponse:
        return PlainTextResponse("board")

    app, _ = create_app(host="0.0.0.0", token=TOKEN, routes=[Route("/board", board)])
    verdicts: dict[str, int] = {}

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://192.0.2.2:8765") as hc:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            for origin in (
                "http://[::1]:8765",
                "https://[::1]",
                "http://LOCALHOST:8765",
                "http://127.0.0.1",
                "http://1:80",
                "http://:1",
                "http://localhost.attacker.example",
                "http://localhost:notaport",
                "http://user@localhost:8765",
                "ftp://localhost",
                "null",
            ):
                verdicts[origin] = (await hc.get("/board", headers=auth | {"Origin": origin})).status_code

    anyio.run(main)
    allowed = {o for o, status in verdicts.items() if status == 200}
    assert allowed == {"http://[::1]:8765", "https://[::1]", "http://LOCALHOST:8765", "http://127.0.0.1"}
    assert set(verdicts.values()) == {200, 403}


def test_a_client_that_closes_the_pipe_early_ends_the_server_quietly(ledger_env: Path) -> None:
    """An agent that stops reading (closes our stdout) ends the session: no error, no traceback."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = mcp_process(ledger_env)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(requests[0]).encode() + b"\n")
    proc.stdin.flush()
    assert proc.stdout.read(10) == b'{"jsonrpc"'
    proc.stdout.close()  # the client stops reading
    for request in requests[1:]:
        proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
