"""`todoledger stats`: many sessions at a glance.

How many plans and items, how many items got done, how long an item took
(first seen to completed), and which anomalies come up most.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from todoledger.ingest.findings import duration
from todoledger.ingest.report import TITLES, Report, load  # TITLES: every finding's one name
from todoledger.ledger import Ledger


def summarise(reports: list[Report]) -> dict[str, Any]:
    items = completed = 0
    took: list[float] = []
    anomalies: Counter[str] = Counter()
    plans_with: Counter[str] = Counter()
    calls = 0
    for r in reports:
        calls += sum(1 for c in r.story.calls if c.kind == "write")
        for it in r.story.items.values():
            if it.removed:
                continue
            items += 1
            done = it.last("completed")
            if it.status == "completed" and done is not None:
                completed += 1
                took.append(max(0.0, _seconds(it.added_at, done.at)))
        codes = Counter(f.code for f in r.findings)
        anomalies.update(codes)
        plans_with.update(codes.keys())
    median = statistics.median(took) if took else 0.0
    return {
        "plans": len(reports),
        "calls": calls,
        "items": items,
        "completed": completed,
        "completion_rate": round(completed / items, 4) if items else 0.0,
        "median_seconds_per_item": round(median, 3),
        "anomalies": [
            {"code": code, "title": TITLES.get(code, code), "count": n, "plans": plans_with[code]}
            for code, n in anomalies.most_common()
        ],
    }


def _seconds(a: str, b: str) -> float:
    from todoledger.ingest.story import seconds_between

    return seconds_between(a, b)


def for_plans(ledger: Ledger, plans: list[str]) -> dict[str, Any]:
    return summarise([load(ledger, p) for p in dict.fromkeys(plans)])


def render_text(data: dict[str, Any], top: int = 8) -> str:
    lines = [
        f"plans: {data['plans']}   todo calls: {data['calls']}   items: {data['items']}",
        f"completed: {data['completed']} ({data['completion_rate']:.0%})"
        f"   median time per completed item: {duration(data['median_seconds_per_item'])}",
    ]
    if data["anomalies"]:
        lines.append("most common anomalies:")
        for a in data["anomalies"][:top]:
            lines.append(f"  {a['count']:>6}  {a['title']}  (in {a['plans']} of {data['plans']} plans)")
    else:
        lines.append("no anomalies found")
    return "\n".join(lines) + "\n"
