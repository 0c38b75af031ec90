"""The recovery text's size (`prime`: what SessionStart hooks and `todoread`'s
prime resource hand an agent), in tokens (characters / 4, as bench_mcp.py
counts the tool list), printed beside today's in one run:

    .venv/bin/python bench/bench_recovery.py

"Today's" is the same plan's text without what issue 18 added (the dropped
items named with their ids, and the items closed while an agent's list works
on them), which is what `prime` printed before: the drops only as a count.
Plans: the seeds' campaign (`todoledger demo`) after a compaction whose list,
rebuilt from the summary, left two items out, with a person's cancel an agent
then listed again; and the same plan with 100 more items dropped, where the
section stays a few lines (the rest counted): the bench fails if the dropped
section grows with the number of drops.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from todoledger import Ledger
from todoledger.core.prime import render_prime
from todoledger.core.view import PlanView
from todoledger.demo import AGENT, load_demo

SUMMARY_DROPS = [
    "Benchmark baseline (no speculation)",
    "Verify --speculative-num-steps 1 really drafts 16 tokens",
]


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def today(view: PlanView) -> PlanView:
    """The view without the sections this change added."""
    return PlanView(
        plan=view.plan,
        revision=view.revision,
        items=view.items,
        counts=view.counts,
        in_progress=view.in_progress,
        ready=view.ready,
        blocked=view.blocked,
        recent=view.recent,
        claimed=view.claimed,
    )


def campaign(lg: Ledger, more_drops: int) -> PlanView:
    load_demo(lg)
    plan = "demo"
    current = [
        i
        for i in lg.show(plan)["items"]
        if i["created_by"] == AGENT and i["status"] in ("pending", "in_progress")
    ]
    full = [{"content": i["content"], "status": i["status"], "priority": i["priority"]} for i in current]
    full += [{"content": text, "status": "pending", "priority": "high"} for text in SUMMARY_DROPS]
    full += [
        {"content": f"Sweep point {n}: {n * 2} draft tokens", "status": "pending"} for n in range(more_drops)
    ]
    lg.write({"todos": full}, plan=plan, writer=AGENT, dialect="opencode")
    # After the compaction: the list rebuilt from the summary leaves the two (and the sweep points) out.
    lg.write({"todos": full[: len(current)]}, plan=plan, writer=AGENT, dialect="opencode")
    # A person cancels one item; the agent's next list still works on it.
    target = full[0]["content"]
    item = next(i["id"] for i in lg.show(plan)["items"] if i["content"] == target)
    lg.cancel(item, plan=plan, writer="cli:reviewer", reason="the server is being rebuilt")
    lg.write(
        {"todos": [{**full[0], "status": "in_progress"}, *full[1 : len(current)]]},
        plan=plan,
        writer=AGENT,
        dialect="opencode",
    )
    return lg.view(plan)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        for more in (0, 100):
            with Ledger(Path(tmp) / f"l{more}.db") as lg:
                view = campaign(lg, more)
            now, before = render_prime(view), render_prime(today(view))
            section = _section(now, "Dropped (")
            rows.append((len(view.dropped), tokens(before), tokens(now), tokens(section), now))
    print("recovery text (prime), tokens = characters / 4, today's beside this change's:")
    for dropped, before, now, section, _ in rows:
        print(
            f"   seeds' campaign, {dropped:>3} dropped: today {before:>4} tokens, now {now:>4} tokens"
            f" ({now / before:.2f}x; the dropped section {section} tokens)"
        )
    bounded = rows[1][3] <= rows[0][3] + 5  # the same few lines, only the count of the rest differs
    print(f"   the dropped section does not grow with the drops: {'ok' if bounded else 'MISSED'}")
    print("\nthe text now, for the campaign with its ten drops:\n")
    print(rows[0][4])
    if not bounded:
        sys.exit(1)


def _section(text: str, head: str) -> str:
    """The lines of one section of the recovery text, its head line included."""
    lines = text.splitlines()
    if not any(line.startswith(head) for line in lines):
        return ""
    start = next(i for i, line in enumerate(lines) if line.startswith(head))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("- ")), len(lines))
    return "\n".join(lines[start:end])


if __name__ == "__main__":
    main()
