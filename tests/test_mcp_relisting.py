"""Dropped is not cancelled, over the MCP server an agent uses by default:
a compaction followed by a list written from the summary, a new session
re-listing a dropped item, and a person's cancel followed by an agent
re-listing the item. Each through real server processes, over stdio and HTTP,
in raw JSON-RPC and through the SDK's client; the person acts from the
command line (a person's token); the plan is then read back through
`todoread`, the `prime` recovery text (the SessionStart hooks' text), `show`
and the board."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import person_env, subprocess_env, todoledger_bin
from tests.mcp_wire import Agent, HttpWire, SdkWire, StdioWire, data_of, text_of
from tests.test_mcp import TOKEN, free_port, http, stdio, wait_for_port

BASELINE = "Benchmark baseline (no speculation)"
VERIFY = "Verify --speculative-num-steps 1 really drafts 16 tokens"
# Seed 000's list (msg 4350) and the two items the issue saw lost after a compaction.
FULL = [
    {
        "content": "Check if SGLang EAGLE3 server is still running on container",
        "status": "in_progress",
        "priority": "high",
    },
    {
        "content": "SCP and run benchmark_eagle3.py on container (16 draft tokens)",
        "status": "pending",
        "priority": "high",
    },
    {"content": "Benchmark with 10 draft tokens", "status": "pending", "priority": "high"},
    {"content": "Benchmark with 5 draft tokens", "status": "pending", "priority": "high"},
    {"content": BASELINE, "status": "pending", "priority": "high"},
    {"content": VERIFY, "status": "pending", "priority": "medium"},
]
# What the agent rebuilt from its summary after the compaction: the last two are gone.
FROM_SUMMARY = [
    {**FULL[0], "status": "completed"},
    {**FULL[1], "status": "in_progress"},
    FULL[2],
    FULL[3],
]
ROUTES = ["stdio raw", "stdio sdk", "http raw", "http sdk"]
# The agent's writer: over HTTP, a server no person started writes its single token's
# holders as its starter's (`script:root@mcp:opencode:...`, docs/security.md).
AGENT = r"(?:\S+@)?mcp:opencode:"


@pytest.fixture
def serve(ledger_env: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--token", TOKEN],
        env=subprocess_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_port(proc, port)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


@contextmanager
def session(route: str, db: Path | str, url: str, name: str) -> Iterator[Agent]:
    """A new agent session on the route: a new process (stdio) or connection (HTTP)."""
    wire: Any
    if route == "stdio raw":
        wire = StdioWire(db, name)
    elif route == "stdio sdk":
        wire = SdkWire(stdio(db, name=name))  # type: ignore[arg-type]  # a ledger URL works as well
    elif route == "http raw":
        wire = HttpWire(url, TOKEN, name)
    else:
        wire = SdkWire(http(url, name=name))
    try:
        yield Agent(wire)
    finally:
        wire.close()


def cli(db: Path | str, *args: str, person: bool = False) -> str:
    proc = subprocess.run(
        [todoledger_bin(), *args],
        capture_output=True,
        env=person_env(db) if person else subprocess_env(db),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def prime_text(agent: Agent) -> str:
    """The recovery text over MCP where the route reads resources (the SDK's
    client); everywhere, `todoledger prime` (what the SessionStart hooks hand back)."""
    wire = agent.wire
    if isinstance(wire, SdkWire):
        got = wire.portal.call(wire.client.read_resource, "todoledger://prime")
        return str(got.contents[0].text)  # type: ignore[union-attr]
    return ""


def ids_of(db: Path | str, url: str, route: str) -> dict[str, str]:
    with session(route, db, url, "reader") as reader:
        data = reader.data("todoread", {"all": True})
    return {it["content"]: it["id"] for it in data["items"]}


@pytest.mark.parametrize("route", ROUTES)
def test_a_list_rebuilt_from_a_summary_leaves_the_dropped_items_named_in_every_recovery(
    route: str, ledger_env: Path, serve: str
) -> None:
    with session(route, ledger_env, serve, "opencode") as agent:
        agent.data("todowrite", {"todos": FULL})
        # The compaction happened in the agent; it writes its list from its summary, reading nothing first.
        reply = agent.data("todowrite", {"todos": FROM_SUMMARY})
        assert {d["content"] for d in reply["dropped"]} == {BASELINE, VERIFY}  # the reply names them
        read = agent.data("todoread", {})
        mcp_prime = prime_text(agent)
    ids = ids_of(ledger_env, serve, route)
    # The recovery reads name each dropped item with its id, and how to revive it; never a bare count.
    assert read["counts"].get("dropped") == 2 and "cancelled" not in read["counts"]
    assert {(d["id"], d["content"]) for d in read["dropped"]} == {
        (ids[BASELINE], BASELINE),
        (ids[VERIFY], VERIFY),
    }
    assert "listed again to revive" in read["dropped_note"]
    assert all(re.match(f"dropped by {AGENT}", d["reason"]) for d in read["dropped"])
    for text in (cli(ledger_env, "prime"), mcp_prime):
        if not text:
            continue
        assert "listed again to revive" in text
        assert f"[{ids[BASELINE]}] {BASELINE}" in text and f"[{ids[VERIFY]}] {VERIFY}" in text
        assert len(text.splitlines()) <= 16  # a few lines, not the plan


@pytest.mark.parametrize("route", ROUTES)
def test_a_new_session_listing_a_dropped_item_revives_it_and_is_told(
    route: str, ledger_env: Path, serve: str
) -> None:
    with session(route, ledger_env, serve, "opencode") as first:
        first.data("todowrite", {"todos": FULL})
        first.data("todowrite", {"todos": FROM_SUMMARY})
        dropper = first.writer
    ids = ids_of(ledger_env, serve, route)
    with session(route, ledger_env, serve, "opencode") as second:
        listed = [*FROM_SUMMARY, {"content": BASELINE, "status": "in_progress", "priority": "high"}]
        reply = second.data("todowrite", {"todos": listed})
        read = second.data("todoread", {"all": True})
    # Revived in the status listed (before: kept "cancelled", a conflict, no hint).
    assert "conflicts" not in reply, reply
    (notice,) = [n for n in reply["notices"] if BASELINE in n]
    assert re.match(re.escape(f"'{BASELINE}' ({ids[BASELINE]}) was dropped by ") + AGENT, notice), notice
    assert notice.endswith("; listed again, it is in_progress")
    if dropper is not None:
        assert f"dropped by {dropper} at revision 2" in notice
    rows = {it["content"]: it for it in read["items"]}
    assert rows[BASELINE]["status"] == "in_progress" and "reason" not in rows[BASELINE]  # its reason went
    assert rows[VERIFY]["status"] == "dropped"  # what it did not list stays dropped


@pytest.mark.parametrize("route", ROUTES)
def test_a_persons_cancel_is_not_undone_by_an_agents_list_and_the_contradiction_shows(
    route: str, ledger_env: Path, serve: str
) -> None:
    why = "the baseline server is down until Monday"
    with session(route, ledger_env, serve, "opencode") as agent:
        agent.data("todowrite", {"todos": FULL})
        ids = ids_of(ledger_env, serve, route)
        baseline = ids[BASELINE]
        cli(ledger_env, "cancel", baseline, "--reason", why, person=True)
        working = [{**it, "status": "in_progress"} if it["content"] == BASELINE else it for it in FULL]
        working[0] = {**working[0], "status": "completed"}
        reply = agent.data("todowrite", {"todos": working})
        me = reply.get("writer") or agent.writer
        # Not revived: who cancelled it, why, and the one call that restores it.
        assert reply["conflicts"] == [
            {"id": baseline, "field": "status", "kept": "cancelled", "yours": "in_progress"}
        ]
        (notice,) = [n for n in reply["notices"] if baseline in n]
        assert notice == (
            f"'{BASELINE}' ({baseline}) was cancelled by cli:tester: {why!r}; listed as in_progress, it stays"
            f" cancelled. To restore it: plan_update id={baseline} status=in_progress; or stop and ask cli:tester"
        )
        # Reading the plan does not hide it: the agent's latest list still says it works on it.
        read = agent.data("todoread", {})
        (contested,) = read["contested"]
        assert contested["id"] == baseline and contested["status"] == "cancelled"
        label = contested["contested"][0]
        assert re.match(f"listed as in progress by {AGENT}", label) and label.endswith(
            ", but cancelled by cli:tester"
        )
        if me is not None:
            assert label == f"listed as in progress by {me}, but cancelled by cli:tester"
        for text in (cli(ledger_env, "prime"), prime_text(agent), cli(ledger_env, "show")):
            if text:
                assert label in text, text
        page = httpx2.get(
            serve.removesuffix("/mcp") + "/plan?plan=main",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
        assert page.status_code == 200 and label in page.text
        # The call the notice names restores it; the contradiction is over.
        restored = agent.call("plan_update", {"id": baseline, "status": "in_progress"})
        assert data_of(restored)["item"]["status"] == "in_progress", text_of(restored)
        read = agent.data("todoread", {})
    assert "contested" not in read
    assert label not in cli(ledger_env, "show")
