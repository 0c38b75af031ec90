"""MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663) over the raw protocol, on
real processes: `todoledger mcp` on pipes and `todoledger serve` over HTTP, each
task's work in a detached worker process, its state a row of the ledger.

Every test records the task states it saw (`seen`), in order, as its client
polled them; the checks are a person's (`cli:tester`), as every verify test sets
them up: an agent's own command never runs on its word."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import TESTER, hashed_tokens, person_env, subprocess_env, todoledger_bin
from tests.test_mcp import free_port
from todoledger import Ledger

VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
POLL_LIMIT = 90.0  # seconds a test polls before it gives up (a bound, not a timing claim)


def envelope(name: str, tasks: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"extensions": {EXTENSION: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
    }


class Stdio:
    """One `todoledger mcp` process on pipes, spoken to in the 2026-07-28 envelope."""

    def __init__(self, db: Path | str, name: str = "claude-code", *args: str, **env: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [todoledger_bin(), "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=subprocess_env(db, **env),
        )
        self.n = 0

    def rpc(self, method: str, params: dict[str, Any] | None = None, tasks: bool = True) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.n += 1
        body = {**(params or {}), "_meta": envelope(self.name, tasks)}
        line = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": body})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            out = self.proc.stdout.readline()
            assert out, "the server closed stdout"
            message: dict[str, Any] = json.loads(out)
            if message.get("id") == self.n:
                return message

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


class Http:
    """Sessionless 2026-07-28 requests to `todoledger serve`, under a bearer token."""

    def __init__(self, url: str, token: str, name: str = "claude-code") -> None:
        self.url, self.token, self.name = url, token, name

    def rpc(self, method: str, params: dict[str, Any] | None = None, tasks: bool = True) -> dict[str, Any]:
        body = {**(params or {}), "_meta": envelope(self.name, tasks)}
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": method,
        }
        name = (params or {}).get("taskId") or (params or {}).get("name")
        if name:
            headers["Mcp-Name"] = str(name)
        reply = httpx2.post(
            self.url,
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": body},
            headers=headers,
            timeout=60,
        )
        text = reply.text
        assert reply.status_code == 200 or '"error"' in text, text  # a JSON-RPC error comes with a 4xx
        if text.startswith(("event:", "data:")):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        found: dict[str, Any] = json.loads(text)
        return found


def result(message: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in message, message
    found: dict[str, Any] = message["result"]
    return found


def poll(client: Any, task_id: str, until: set[str], seen: list[str]) -> dict[str, Any]:
    """tasks/get until the status is one of `until`; each status seen is appended."""
    deadline = time.monotonic() + POLL_LIMIT
    while True:
        got = result(client.rpc("tasks/get", {"taskId": task_id}))
        if not seen or seen[-1] != got["status"]:
            seen.append(got["status"])
        if got["status"] in until:
            return got
        assert time.monotonic() < deadline, f"task still {got['status']}: {got.get('statusMessage')}"
        time.sleep(min(got["pollIntervalMs"], 200) / 1000)


def gated_item(db: Path | str, check: str, plan: str = "main") -> str:
    """An item with a person's check (trusted: written by the person, as verify tests do)."""
    with Ledger(db) as lg:
        item = lg.add("Benchmark the draft model", plan=plan, writer=TESTER)["id"]
        lg.add_check(item, check, plan=plan, writer=TESTER)
    return str(item)


def processes_with(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ")
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state not in (b"Z", b"X") and int(name) != os.getpid():
            out.append(int(name))
    return out


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + POLL_LIMIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# discover ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["lean", "sdk"])
def test_discover_advertises_the_tasks_extension_on_stdio(ledger_env: Path, path: str) -> None:
    extra = {"TODOLEDGER_MCP_PATH": "sdk"} if path == "sdk" else {}
    server = Stdio(ledger_env, **extra)
    try:
        found = result(server.rpc("server/discover"))
        assert found["capabilities"]["extensions"] == {EXTENSION: {}}
        # Without the extension declared, tasks/* is refused as the SEP says (-32021).
        refused = server.rpc("tasks/get", {"taskId": "0" * 32}, tasks=False)
        assert refused["error"]["code"] == -32021
        missing = server.rpc("tasks/get", {"taskId": "0" * 32})
        assert missing["error"]["code"] == -32602 and "task not found" in missing["error"]["message"]
    finally:
        server.close()


# stdio ---------------------------------------------------------------------------------------


def test_plan_verify_is_a_task_whose_result_a_new_server_returns(ledger_env: Path) -> None:
    item = gated_item(ledger_env, "cmd:sleep 1; echo verified-by-worker")
    first = Stdio(ledger_env)
    created = result(first.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
    first.close()  # the stdio server dies with its client; the worker goes on
    assert created["resultType"] == "task" and created["status"] == "working"
    assert len(created["taskId"]) == 32 and int(created["taskId"], 16) >= 0  # 128 bits, in hex
    assert created["ttlMs"] is None and created["pollIntervalMs"] >= 500
    seen = [created["status"]]

    second = Stdio(ledger_env)  # a new server process answers from the row
    try:
        done = poll(second, created["taskId"], {"completed", "failed", "cancelled"}, seen)
        assert done["status"] == "completed", done
        data = done["result"]["structuredContent"]
        assert [(r["item"], r["result"]) for r in data["receipts"]] == [(item, "holds")]
        assert "verified-by-worker" in data["receipts"][0]["output"]
        assert done["ttlMs"] >= 24 * 3600 * 1000  # kept a day after it ended, counted from creation
        # Another principal (another agent kind) is told it does not exist.
        intruder = Stdio(ledger_env, "codex")
        try:
            refused = intruder.rpc("tasks/get", {"taskId": created["taskId"]})
            assert refused["error"]["code"] == -32602 and "task not found" in refused["error"]["message"]
            assert intruder.rpc("tasks/cancel", {"taskId": created["taskId"]})["error"]["code"] == -32602
            answer = {"taskId": created["taskId"], "inputResponses": {"approve": {"action": "accept"}}}
            assert intruder.rpc("tasks/update", answer)["error"]["code"] == -32602
        finally:
            intruder.close()
        # An answer to a request the task never made is acknowledged and ignored (SEP-2663).
        assert result(second.rpc("tasks/update", answer))["resultType"] == "complete"
        with Ledger(ledger_env) as lg:
            kept = lg.task(created["taskId"], None)
        assert kept is not None and kept["input_requests"] is None and kept["status"] == "completed"
        # Without the extension declared: today's synchronous reply.
        plain = result(second.rpc("tools/call", {"name": "plan_verify", "arguments": {}}, tasks=False))
        assert "resultType" not in plain or plain["resultType"] == "complete"
        assert [r["result"] for r in plain["structuredContent"]["receipts"]] == ["holds"]
    finally:
        second.close()
    assert seen[0] == "working" and seen[-1] == "completed", seen
    with Ledger(ledger_env) as lg:
        told = [e["new"]["status"] for e in lg.history("main") if e["field"] == "task"]
        receipts = lg.receipts(item)
    assert told == ["working", "completed"]  # each transition is an event of the plan
    # The worker's receipt is the task's recorded writer's (the synchronous one's is the second server's).
    assert receipts[0]["by"] == created_writer(ledger_env, created["taskId"]) != receipts[1]["by"]


def created_writer(db: Path | str, task_id: str) -> str:
    """The writer the task recorded (the worker writes only as it)."""
    with Ledger(db) as lg:
        row = lg.task(task_id, None)
    assert row is not None and row["writer"].startswith("mcp:claude-code:")
    assert row["principal"] == "agent:claude-code"
    assert row["workers"] == 1  # its first worker did it (started before its server exited): no resume
    return str(row["writer"])


def test_the_worker_verifies_the_plan_its_server_was_started_for(ledger_env: Path) -> None:
    gated_item(ledger_env, "cmd:test -d .")
    item = gated_item(ledger_env, "cmd:test -f /etc/hostname", plan="gpu")
    server = Stdio(ledger_env, "claude-code", "--plan", "gpu")
    try:
        created = result(server.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
        seen = [created["status"]]
        done = poll(server, created["taskId"], {"completed", "failed", "cancelled"}, seen)
    finally:
        server.close()
    assert seen == ["working", "completed"] or seen == ["completed"], seen
    data = done["result"]["structuredContent"]
    assert data["plan"] == "gpu" and [r["item"] for r in data["receipts"]] == [item]


def test_a_call_that_runs_no_command_stays_synchronous(ledger_env: Path, tmp_path: Path) -> None:
    gated_item(ledger_env, f"file:{tmp_path / 'absent'}")
    server = Stdio(ledger_env)
    try:
        plain = result(server.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
        assert plain.get("resultType") != "task"
        assert [r["result"] for r in plain["structuredContent"]["receipts"]] == ["fails"]
    finally:
        server.close()


def test_cancel_from_a_new_server_ends_the_running_verify_and_leaves_no_process(ledger_env: Path) -> None:
    marker = f"sleep 6{os.getpid() % 1000}.5"  # this test's own command, found by its text
    gated_item(ledger_env, f"cmd:{marker}")
    first = Stdio(ledger_env)
    created = result(first.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
    seen = [created["status"]]
    wait_until(lambda: processes_with(marker), "the check never started")
    # The client's server goes away: its output ends at once (the worker holds none of
    # the client's pipes), while the worker's check runs on.
    first.close()
    assert first.proc.stdout is not None and first.proc.stdout.read() == b""
    assert processes_with(marker)
    # A person sees it running, with its status message.
    listed = subprocess.run(
        [todoledger_bin(), "tasks"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert f"{created['taskId']}  working" in listed.stdout and "verifying: 1 check (cmd:)" in listed.stdout
    as_json = subprocess.run(
        [todoledger_bin(), "tasks", "--json"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert [(t["id"], t["status"]) for t in json.loads(as_json.stdout)] == [(created["taskId"], "working")]
    server = Stdio(ledger_env)  # the client reconnected: a new server process
    try:
        assert result(server.rpc("tasks/cancel", {"taskId": created["taskId"]}))["resultType"] == "complete"
        done = poll(server, created["taskId"], {"completed", "failed", "cancelled"}, seen)
    finally:
        server.close()
    assert done["status"] == "cancelled", done
    assert seen == ["working", "cancelled"], seen
    wait_until(lambda: not processes_with(marker), "the cancelled check's process is still running")
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
    assert row is not None and row["cancel"] is True
    # The worker itself exits once it has stored the outcome.
    wait_until(lambda: not processes_with(f"taskworker {row['id']}"), "the worker is still running")


def test_sigkill_of_the_worker_then_get_starts_a_new_one_or_fails_with_the_resume_line(
    ledger_env: Path,
) -> None:
    marker = f"sleep 7{os.getpid() % 1000}.5"
    gated_item(ledger_env, f"cmd:{marker}")
    server = Stdio(ledger_env)
    seen: list[str] = []
    messages: list[str] = []
    try:
        created = result(server.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
        task_id = created["taskId"]
        seen.append(created["status"])
        for attempt in (1, 2, 3):
            wait_until(lambda: processes_with(marker), f"worker {attempt}'s check never started")
            with Ledger(ledger_env) as lg:
                row = lg.task(task_id, None)
            assert row is not None and row["workers"] == attempt
            os.kill(int(row["pid"]), signal.SIGKILL)
            wait_until(lambda: not processes_with(f"taskworker {task_id}"), "the killed worker lingers")
            # Its check's process group ends with it (the kernel's parent-death signal).
            wait_until(lambda: not processes_with(marker), "the killed worker's check lingers")
            got = result(server.rpc("tasks/get", {"taskId": task_id}))
            seen.append(got["status"])
            messages.append(got.get("statusMessage", ""))
        # A new worker twice (verify is resumable), then the third lapse fails it.
        assert seen == ["working", "working", "working", "failed"], seen
        assert all(m.startswith("resumed: worker") for m in messages[:2]), messages
        error = got["error"]
        assert error["code"] == -32603
        assert "while running its checks" in error["message"]
        assert "todoledger verify --plan main" in error["message"]
        assert error["data"]["resume"] == "todoledger verify --plan main"
    finally:
        server.close()


def test_a_worker_started_after_a_sigkill_completes_the_verify(ledger_env: Path) -> None:
    marker = f"sleep 2.{os.getpid() % 1000}"
    item = gated_item(ledger_env, f"cmd:{marker}; test -d .")
    first = Stdio(ledger_env)
    created = result(first.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
    first.close()
    seen = [created["status"]]
    wait_until(lambda: processes_with(marker), "the check never started")
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
    assert row is not None
    os.kill(int(row["pid"]), signal.SIGKILL)
    wait_until(lambda: not processes_with(f"taskworker {row['id']}"), "the killed worker lingers")
    server = Stdio(ledger_env)  # a new server process: its get starts a new worker
    try:
        resumed = result(server.rpc("tasks/get", {"taskId": created["taskId"]}))
        assert resumed["status"] == "working" and resumed["statusMessage"].startswith(
            "resumed: worker 2 started"
        )
        done = poll(server, created["taskId"], {"completed", "failed", "cancelled"}, seen)
    finally:
        server.close()
    assert seen == ["working", "completed"], seen
    assert [(r["item"], r["result"]) for r in done["result"]["structuredContent"]["receipts"]] == [
        (item, "holds")
    ]
    with Ledger(ledger_env) as lg:
        told = [e["new"]["status"] for e in lg.history("main") if e["field"] == "task"]
        receipts = lg.receipts(item)
    assert told == ["working", "working", "completed"]  # created, resumed, completed
    assert len(receipts) == 1  # the killed worker recorded nothing: its run was done once, by the second


# HTTP ----------------------------------------------------------------------------------------

BOT = "bot-token-0123456789abcdef"
OTHER = "other-token-0123456789abcd"


def launch(db: Path | str, tokens: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`todoledger serve --tokens` as the person, started (not waited for: see `ready`)."""
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens), "--allow-checks"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=person_env(db),
    )
    return proc, f"http://127.0.0.1:{port}/mcp"


def ready(proc: subprocess.Popen[bytes], url: str) -> tuple[subprocess.Popen[bytes], str]:
    """The server once it answers."""
    deadline = time.monotonic() + POLL_LIMIT
    while True:
        try:
            httpx2.get(url, timeout=1)
            return proc, url
        except httpx2.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    return hashed_tokens(tmp_path / "tokens", f"{BOT} agent:ci\n{OTHER} agent:other\n")


@pytest.fixture
def two_servers(ledger_env: Path | str, tokens: Path) -> Iterator[tuple[str, str]]:
    procs = [launch(ledger_env, tokens) for _ in range(2)]  # both start at once
    try:
        for proc, url in procs:
            ready(proc, url)
        yield procs[0][1], procs[1][1]
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(10)


def test_over_http_a_task_is_created_on_one_server_and_read_on_another(
    ledger_env: Path | str, two_servers: tuple[str, str]
) -> None:
    item = gated_item(ledger_env, "cmd:sleep 1; echo over-http")
    one, other = two_servers
    discovered = result(Http(one, BOT).rpc("server/discover"))
    assert discovered["capabilities"]["extensions"] == {EXTENSION: {}}
    created = result(Http(one, BOT).rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
    assert created["resultType"] == "task"
    seen = [created["status"]]
    done = poll(Http(other, BOT), created["taskId"], {"completed", "failed", "cancelled"}, seen)
    assert done["status"] == "completed", done
    assert [(r["item"], r["result"]) for r in done["result"]["structuredContent"]["receipts"]] == [
        (item, "holds")
    ]
    assert seen[0] == "working" and seen[-1] == "completed", seen
    # Another token's identity is another principal: not found, on either server.
    for url in (one, other):
        refused = Http(url, OTHER).rpc("tasks/get", {"taskId": created["taskId"]})
        assert refused["error"]["code"] == -32602 and "task not found" in refused["error"]["message"]
    # Without the extension: the synchronous reply.
    plain = result(Http(one, BOT).rpc("tools/call", {"name": "plan_verify", "arguments": {}}, tasks=False))
    assert plain["resultType"] == "complete" and "receipts" in plain["structuredContent"]
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
    assert row is not None and row["principal"] == "agent:ci" and row["writer"].startswith("agent:ci@")
