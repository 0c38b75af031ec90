"""A hook makes its own event durable before it replays older spooled ones
(issue 30): it joins the spool first, then the replay runs in the time left.
Before, a hook replayed the whole spool first: killed during that replay (an
agent's hook timeout), its own event was lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import hold_write_lock, spool_of, subprocess_env, todoledger_bin
from tests.test_hook_claude import post_tool
from todoledger import Ledger
from todoledger.hooks import HOOK_BUSY_MS, spool


def todowrite(*contents: str) -> bytes:
    todos = [{"content": c, "status": "pending", "activeForm": c} for c in contents]
    return json.dumps(post_tool("TodoWrite", {"todos": todos})).encode()


def spooled(db: Path | str) -> int:
    folder = spool_of(db)
    return sum(1 for n in os.listdir(folder) if n.endswith(".json")) if folder.is_dir() else 0


def test_a_hook_killed_during_a_replay_keeps_its_own_event(ledger_env: Path | str) -> None:
    db = ledger_env
    with Ledger(db) as lg:
        lg.add("Set up", writer="setup")
    for k in range(3):  # older events an outage left behind
        spool("claude-code", todowrite(f"older list {k}"), os.getcwd())
    before = spooled(db)
    assert before == 3
    lock = hold_write_lock(db)  # the ledger cannot take any of them now: the replay waits
    try:
        hook = subprocess.Popen(
            [todoledger_bin(), "hook", "claude-code"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=subprocess_env(db),
        )
        assert hook.stdin is not None
        hook.stdin.write(todowrite("older list 2", "own event"))
        hook.stdin.close()
        # Kill it while its replay waits on the ledger (well inside the busy wait of the
        # first spooled event), as soon as its own event is on disk, or at the latest then.
        give_up = time.monotonic() + HOOK_BUSY_MS / 1000 * 0.9
        while spooled(db) == before and time.monotonic() < give_up:
            time.sleep(0.01)
        time.sleep(0.05)
        hook.send_signal(signal.SIGKILL)
        hook.wait(timeout=30)
    finally:
        lock.close()
    flushed = subprocess.run(
        [todoledger_bin(), "flush"], capture_output=True, text=True, env=subprocess_env(db), timeout=60
    )
    assert flushed.returncode == 0, flushed.stderr
    with Ledger(db) as lg:
        contents = {i["content"] for i in lg.items() if i["status"] == "pending"}
    assert "own event" in contents  # its own event survived the kill, and came last
    assert spooled(db) == 0
