"""Timestamps: ISO 8601 in UTC with milliseconds, sortable as text.

TODOLEDGER_NOW fixes the clock (an ISO time) for the README generator and
tests whose shown output includes times; nothing else sets it.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

NOW_ENV = "TODOLEDGER_NOW"


def now() -> str:
    fixed = os.environ.get(NOW_ENV)
    if fixed:
        try:
            return normalise(fixed)
        except ValueError:
            from todoledger.core.model import LedgerError

            raise LedgerError(f"{NOW_ENV}={fixed!r} is not an ISO 8601 time") from None
    # time, not datetime: every hook call stamps its write, and datetime costs more to import.
    stamp = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}Z"


def normalise(value: str | int | float) -> str:
    """Accept ISO strings and epoch seconds/milliseconds from transcripts."""
    import datetime as dt

    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        stamp = dt.datetime.fromtimestamp(seconds, dt.UTC)
    else:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.UTC)
        stamp = stamp.astimezone(dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def shift(at: str, seconds: float) -> str:
    """`at` (as `now()` writes it) moved by `seconds`: a lease's expiry."""
    import calendar

    whole = calendar.timegm(time.strptime(at[:19], "%Y-%m-%dT%H:%M:%S"))
    millis = int(at[20:23]) if len(at) >= 23 and at[19] == "." else 0
    total = whole * 1000 + millis + round(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(total // 1000)) + f".{total % 1000:03d}Z"
