"""Refused writes past the day's cap, as people read them (issue 31).

A principal's refusals in a plan are recorded one by one up to a cap a day;
past it, one counter event says the cap was reached, and a row of counts
(store `refusal_counts`, keyed by the counter event's source key) counts every
refusal after it: a count, since the events are hash-chained and never updated.
Report and board show the counter as "N more refused from <principal>".
"""

from __future__ import annotations

COUNTER = "refused-cap"


def counter_key(plan: str, principal: str, day: str) -> str:
    """The counter event's source key: one per plan, principal and day."""
    return f"{COUNTER}:{plan}:{principal}:{day}"


def counter_note(principal: str, cap: int) -> str:
    """What the counter event itself says, true when it is written."""
    return (
        f"{principal} reached today's cap of {cap} refusals recorded one by one:"
        " the rest are counted, not recorded one by one"
    )


def line(summary: str | None, at: str, counted: int | None, counted_from: str | None) -> str:
    """A refusal's line: its reason, or for a counter event the refusals it counted."""
    if counted is not None and counted_from is not None:
        return f"{counted} more refused from {counted_from} on {at[:10]} (past the day's cap: counted, not listed)"
    return summary or "no reason recorded"


def how_many(counted: list[int | None]) -> str:
    """Refused writes in all, in words: one per refusal event, a counter event's count for it."""
    n = sum(1 if c is None else c for c in counted)
    return f"{n} write refused" if n == 1 else f"{n} writes refused"
