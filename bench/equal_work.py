"""Every comparison with a peer compares equal work, checked in the run (issue 30:
bench_show.py gave its two plans one folder name, so `show` drew 750 open items
while `task list` drew 1,750, and a 0.85-1.03x figure was published from it).

Before a peer comparison is timed, `check` runs each side once on the same
terminal (or pipe) it is timed on and asserts that both hold the same number
of items and that both print the same items, the same number of rows: the run
stops with the difference otherwise. Items are told apart by their text,
`item <n>` as the benchmarks write them (ours and the peer's alike).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ITEM = re.compile(rb"\bitem (\d+)\b")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class UnequalWork(SystemExit):
    """The two sides of a comparison did not do the same work: no figure stands."""


def drawn(output: bytes) -> list[int]:
    """The items an output draws, in order, once each (by their `item <n>` text)."""
    seen: dict[int, None] = {}
    for m in ITEM.finditer(ANSI.sub(b"", output)):
        seen.setdefault(int(m.group(1)), None)
    return list(seen)


def held_by_ledger(db: Path) -> int:
    from todoledger import Ledger

    with Ledger(db) as lg:
        return len(lg.items())


def held_by_taskwarrior(task: str, env: dict[str, str]) -> int:
    """Tasks Taskwarrior holds (pending and completed; deleted ones are not held)."""
    out = subprocess.run([task, "export"], env=env, capture_output=True, check=True).stdout
    return sum(1 for t in json.loads(out or b"[]") if t.get("status") != "deleted")


def check(
    name: str, held: tuple[int, int], outputs: tuple[bytes, bytes] | None, *, same_items: bool = True
) -> str:
    """Assert equal work for comparison `name`: (ours, theirs) held and printed
    (`outputs` None: a write, which prints no list). `same_items` False: the same
    number of rows, each side choosing its own (`next`: each its own order).
    Returns the line a benchmark prints with its figure."""
    if held[0] != held[1]:
        raise UnequalWork(f"{name}: unequal work: ours holds {held[0]} items, the peer {held[1]}")
    if outputs is None:
        return f"equal work checked: both hold {held[0]} items"
    ours, theirs = drawn(outputs[0]), drawn(outputs[1])
    if len(ours) != len(theirs) or (same_items and set(ours) != set(theirs)):
        raise UnequalWork(
            f"{name}: unequal work: ours draws {len(ours)} items, the peer {len(theirs)}"
            f" ({len(set(ours) ^ set(theirs))} differ)"
        )
    return f"equal work checked: both hold {held[0]} items and draw the same {len(ours)} rows"
