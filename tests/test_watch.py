"""`todoledger watch` across processes, on both backends (PG_MODULES):
LISTEN/NOTIFY on PostgreSQL, polling of the event sequence on SQLite."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from todoledger import Ledger

from .conftest import subprocess_env, todoledger_bin


def test_watch_prints_each_change_from_another_process_as_it_happens(ledger_env: Path | str) -> None:
    with Ledger() as lg:
        lg.add("Profile the kernel", writer="a")
    watcher = subprocess.Popen(
        [todoledger_bin(), "watch", "--json", "--since", "0", "--count", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(ledger_env),
    )
    guard = threading.Timer(60, watcher.kill)  # a hung watch fails the test instead of hanging it
    guard.start()
    try:
        assert watcher.stdout is not None
        first = json.loads(watcher.stdout.readline())  # the backlog: the watcher is up and waiting
        assert (first["field"], first["new"]["content"]) == ("created", "Profile the kernel")
        writer = subprocess.run(
            [todoledger_bin(), "add", "Fix the race", "--plan", "other", "--writer", "b"],
            capture_output=True,
            text=True,
            env=subprocess_env(ledger_env),
        )
        assert writer.returncode == 0, writer.stderr
        second = json.loads(watcher.stdout.readline())
        assert (second["plan"], second["new"]["content"], second["writer"]) == ("other", "Fix the race", "b")
        with Ledger() as lg:
            lg.done(first["item"], writer="c", force=True)
        third = json.loads(watcher.stdout.readline())
        assert (third["field"], third["new"], third["seq"]) == ("status", "completed", second["seq"] + 1)
        assert watcher.wait(timeout=30) == 0
    finally:
        guard.cancel()
        watcher.kill()


def test_watch_for_a_person_is_one_sanitised_line_per_event(ledger_env: Path | str) -> None:
    with Ledger() as lg:
        lg.add("Clean \x1b[31mred\x1b[0m text", writer="a")
    done = subprocess.run(
        [todoledger_bin(), "watch", "--since", "0", "--count", "1"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert "\x1b" not in done.stdout and "main/" in done.stdout and "(a)" in done.stdout
