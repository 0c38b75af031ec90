"""The team contention run: processes as two simulated hosts, each
with its own connection, write whole lists, update single items, claim with
short leases, renew, pause past their lease and come back, release, finish.

`run` returns what the processes were told (acknowledged writes) and
`verify` checks the ledger against it: no lost update, no double claim, no
write by a fenced-out holder, and the events replay to the final state.
tests/test_contention.py runs it briefly; bench/bench_team.py for 60 s.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Any

from todoledger import Ledger
from todoledger.core.model import BusyError, LedgerError

POOL = 120  # items to claim
LEASE = 1  # seconds: short, so leases lapse during the run
PAUSE = 1.5  # a holder that pauses this long has lost its lease


def prepare(target: str, processes: int) -> None:
    with Ledger(target) as lg:
        lg.write(
            {"todos": [{"content": f"shared task {n}", "status": "pending"} for n in range(POOL)]},
            writer="lead",
        )
        for p in range(processes):
            lg.add(f"notes of worker {p}", plan="notes", writer="lead")


def worker(args: tuple[str, int, int, float, int]) -> dict[str, Any]:
    target, index, processes, seconds, seed = args
    host = "A" if index < processes // 2 else "B"
    me = f"host{host}:p{index}"
    rng = random.Random(seed)
    acks: dict[str, Any] = {
        "writer": me,
        "lists": None,
        "notes": [],
        "fenced_writes": [],
        "refused": 0,
        "claims": 0,
        "busy": 0,
    }
    with Ledger(target) as lg:
        mine = next(i["id"] for i in lg.items("notes") if i["content"] == f"notes of worker {index}")
        steps = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            steps += 1
            roll = rng.random()
            try:
                if roll < 0.3:
                    todos = [
                        {
                            "content": f"{me} step {k}",
                            "status": rng.choice(["pending", "in_progress", "completed"]),
                        }
                        for k in range(5)
                    ]
                    lg.write({"todos": todos}, plan="lists", writer=me)
                    acks["lists"] = {t["content"]: t["status"] for t in todos}
                elif roll < 0.5:
                    value = f"{me} note {steps}"
                    lg.update(mine, plan="notes", writer=me, notes=value)
                    acks["notes"].append(value)
                else:
                    _claim_round(lg, me, rng, steps, acks)
            except BusyError:
                acks["busy"] += 1
    return acks


def _claim_round(lg: Ledger, me: str, rng: random.Random, steps: int, acks: dict[str, Any]) -> None:
    got = lg.next(claim=True, writer=me, lease=LEASE)
    if not got:
        return
    acks["claims"] += 1
    item, token = got[0]["id"], got[0]["token"]
    for n in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            time.sleep(PAUSE)  # a pause (GC, a laptop lid): the lease lapses meanwhile
        value = f"{me} token {token} write {steps}.{n}"
        try:
            if rng.random() < 0.3:
                lg.renew(item, writer=me, token=token, lease=LEASE)
            lg.update(item, writer=me, token=token, notes=value)
        except LedgerError as exc:
            if "fenced" not in str(exc) and "no longer claimed" not in str(exc):
                raise
            acks["refused"] += 1
            return
        acks["fenced_writes"].append((item, token, value))
    end = rng.random()
    try:
        if end < 0.3:
            lg.release(item, writer=me, token=token)
        elif end < 0.4:
            lg.done(item, writer=me, token=token, evidence=f"{me} finished")
    except LedgerError as exc:
        if "fenced" not in str(exc) and "no longer claimed" not in str(exc):
            raise
        acks["refused"] += 1


def run(
    targets: tuple[str, str], seconds: float, processes: int = 16, seed: int = 11
) -> list[dict[str, Any]]:
    """`targets`: how host A and host B spell the same ledger."""
    prepare(targets[0], processes)
    jobs = [
        (targets[0] if p < processes // 2 else targets[1], p, processes, seconds, seed * 1000 + p)
        for p in range(processes)
    ]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.map(worker, jobs)


def verify(target: str, results: list[dict[str, Any]]) -> dict[str, int]:
    """Raise AssertionError on any violation; return the run's figures."""
    with Ledger(target) as lg:
        assert lg.check() == [], "the events do not replay to the stored state"
        # No lost update: every acknowledged write is in the history, and each
        # writer's own item and list end as its last acknowledged write left them.
        notes = {i["content"]: i["notes"] for i in lg.items("notes")}
        lists = {i["content"]: i["status"] for i in lg.items("lists")}
        for r in results:
            index = r["writer"].rpartition(":p")[2]
            if r["notes"]:
                assert notes[f"notes of worker {index}"] == r["notes"][-1], f"{r['writer']}: note lost"
            for content, status in (r["lists"] or {}).items():
                assert lists[content] == status, f"{r['writer']}: {content} lost its last status"
        history = lg.history()
        written = {e["new"] for e in history if e["field"] == "notes"}
        for r in results:
            for _item, _token, value in r["fenced_writes"]:
                assert value in written, f"acknowledged write lost: {value}"
        # No double claim, no write by a fenced-out holder: walk each shared item's events.
        ops = {o["op"]: o["kind"] for o in lg.ops()}
        holder: dict[str, tuple[str, int] | None] = {}
        latest: dict[str, tuple[str, int]] = {}
        for e in history:
            item = e["item"]
            if e["field"] == "claimed":
                assert holder.get(item) is None, (
                    f"{item} claimed by {e['new']['holder']} while {holder[item]} held it"
                )
                holder[item] = latest[item] = (e["new"]["holder"], e["new"]["token"])
            elif e["field"] == "released":
                holder[item] = None
            elif item in latest and ops[e["op"]] not in ("claim", "reclaim", "release"):
                assert e["writer"] == latest[item][0], (
                    f"{e['writer']} wrote {item} after {latest[item]} claimed it"
                )
        list_writes, note_writes = len(lg.ops("lists")), len(lg.ops("notes"))
    return {
        "claims": sum(r["claims"] for r in results),
        "fenced_refusals": sum(r["refused"] for r in results),
        "fenced_writes": sum(len(r["fenced_writes"]) for r in results),
        "list_writes": list_writes,
        "single_updates": note_writes + sum(len(r["fenced_writes"]) for r in results),
        "releases_on_expiry": sum(
            1 for e in history if e["field"] == "released" and e["new"]["why"] == "expired"
        ),
        "busy": sum(r["busy"] for r in results),
        "events": len(history),
    }
