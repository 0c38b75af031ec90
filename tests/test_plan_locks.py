"""Per-plan write locks on PostgreSQL (store/postgres.py): writers of two
plans do not wait for each other, writers of one plan queue, a cross-plan
operation waits for every plan's writers; and `todoledger watch` prints every
event exactly once, in order, while writers of several plans commit side by
side and its connections are killed. Real PostgreSQL, real `todoledger`
subprocesses; who waits is read from pg_stat_activity, never from a clock."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from todoledger import Ledger

from .conftest import person_env, register_tester, subprocess_env, todoledger_bin
from .pgserver import ledger_url


def until(condition: Callable[[], Any], what: str, seconds: float = 60) -> Any:
    """Wait for `condition` to hold (a bound on a hang, not a timing assert)."""
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)
    return found


def lock_waiters(admin: psycopg.Connection[Any], name: str) -> int:
    """Backends of the process named `name` waiting for an advisory lock."""
    return len(
        admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = %s AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
            (name,),
        ).fetchall()
    )


def start(url: str, name: str, *args: str, person: bool = False) -> subprocess.Popen[str]:
    env = person_env(url, PGAPPNAME=name) if person else subprocess_env(url, PGAPPNAME=name)
    return subprocess.Popen(
        [todoledger_bin(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def finished(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


@contextmanager
def holding(url: str, plan: str) -> Iterator[None]:
    """Another connection's write transaction on `plan`, open until the block ends."""
    with Ledger(url) as holder, holder.store.write(plan):  # type: ignore[attr-defined]
        yield


def test_writers_of_two_plans_go_side_by_side_and_a_cross_plan_operation_waits_for_both() -> None:
    url = ledger_url()
    with Ledger(url) as lg:
        for plan in ("alpha", "beta", "gamma"):
            lg.add(f"first of {plan}", plan=plan, writer="setup")
    register_tester(url)  # a token is a cross-plan write: before the holders take their plans
    with psycopg.connect(url, autocommit=True) as admin, holding(url, "alpha"), holding(url, "beta"):
        # A third plan's writer goes through while alpha and beta are held.
        finished(start(url, "w-gamma", "add", "second of gamma", "--plan", "gamma", "--writer", "g"))
        # Alpha's next writer waits for alpha's holder; a cross-plan operation
        # (an undo: cross-plan by rule, see ledger/history.py) waits for every holder.
        alpha = start(url, "w-alpha", "add", "second of alpha", "--plan", "alpha", "--writer", "a")
        until(lambda: lock_waiters(admin, "w-alpha") == 1, "alpha's writer waiting for alpha's lock")
        cross = start(url, "w-cross", "undo", "--plan", "gamma", "--any", person=True)
        until(lambda: lock_waiters(admin, "w-cross") == 1, "the cross-plan undo waiting")
        # Gamma's writers still go side by side with alpha's and beta's holders...
        # (not past the waiting cross-plan operation: PostgreSQL queues a shared lock
        # behind an exclusive one that waits, so a cross-plan operation is never starved)
        assert alpha.poll() is None and cross.poll() is None
    finished(alpha)
    finished(cross)
    with Ledger(url) as lg:
        gamma = [e for e in lg.watch(after=0, stop=lambda: True) if e["plan"] == "gamma"]
        alpha_events = [e for e in lg.watch(after=0, stop=lambda: True) if e["plan"] == "alpha"]
        assert [i["content"] for i in lg.items(plan="alpha")] == ["first of alpha", "second of alpha"]
        assert [i["content"] for i in lg.items(plan="gamma")] == ["first of gamma"]  # the undo took it back
        assert lg.check() == []
    # In the feed, the gamma write came before both waiters, which committed once the holders let go.
    second_gamma = next(e["seq"] for e in gamma if e["field"] == "created" and "second" in str(e["new"]))
    assert second_gamma < max(e["seq"] for e in alpha_events)
    assert second_gamma < gamma[-1]["seq"]  # the undo's event


WRITERS = 4
ADDS = 15
WRITER_SCRIPT = """
import sys
from todoledger import Ledger
plan, n = sys.argv[1], int(sys.argv[2])
with Ledger() as lg:
    for k in range(n):
        lg.add(f"{plan} item {k}", plan=plan, writer=f"agent-{plan}")
"""


def kill(admin: psycopg.Connection[Any], name: str) -> int:
    """Terminate every backend of the process named `name`; how many there were."""
    rows = admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name = %s",
        (name,),
    ).fetchall()
    return len(rows)


def test_watch_sees_every_event_once_in_order_while_plans_commit_side_by_side_and_it_is_killed() -> None:
    url = ledger_url()
    with Ledger(url) as lg:
        lg.add("before the feed", plan="p0", writer="setup")
        since = lg.last_event()
    total = WRITERS * ADDS  # one `created` event per add
    watch = start(url, "watch-under-test", "watch", "--json", "--since", str(since), "--count", str(total))
    guard = threading.Timer(240, watch.kill)  # a hung watch fails the test instead of hanging it
    guard.start()
    admin = psycopg.connect(url, autocommit=True)
    kills = [0]
    try:
        # Killed once before any writer starts: it must come back, whatever the writers do.
        until(lambda: kill(admin, "watch-under-test"), "watch connected")
        kills[0] += 1
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER_SCRIPT, f"p{n}", str(ADDS)],
                env=subprocess_env(url),
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(WRITERS)
        ]
        # Kill watch's connections (the reading one and the listening one) while they write.
        while any(w.poll() is None for w in writers) and kills[0] < 50:
            kills[0] += bool(kill(admin, "watch-under-test"))
            time.sleep(0.05)
        for w in writers:
            assert w.wait(timeout=120) == 0, w.stderr.read() if w.stderr else ""
        out, err = watch.communicate(timeout=180)
    finally:
        guard.cancel()
        watch.kill()
        admin.close()
    assert watch.returncode == 0, err
    seen = [json.loads(line) for line in out.splitlines()]
    with Ledger(url) as lg:
        expected = [e["seq"] for e in lg.watch(after=since, stop=lambda: True)]
        assert lg.check() == []  # one tamper-evident chain, though plans committed side by side
    assert len(expected) == total
    assert [e["seq"] for e in seen] == expected  # every event, once, in order
    assert {e["plan"] for e in seen} == {f"p{n}" for n in range(WRITERS)}
    assert "watch: reconnected to" in err and "internal error" not in err
