"""Timestamps: ISO 8601 in UTC with milliseconds, sortable as text.

TODOLEDGER_NOW fixes the clock (an ISO time) for the README generator and
tests whose shown output includes times, and only on a ledger created with
`init --test-clock` (recorded in the ledger, never switched on later): on any
other ledger a fixed clock would let a writer date its own writes, make a live
lease look lapsed and `reclaim` it (issue 29). The store that opens a ledger
says which it is (`fixed_clock_allowed`); before any ledger is open, and on a
ledger without the mark, the real clock stands.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

NOW_ENV = "TODOLEDGER_NOW"

# Whether the open ledger was created with a test clock: set by the store that opened it
# (store/settings.py), asked only while TODOLEDGER_NOW is set, so the real clock costs nothing.
_fixed_allowed: list[Callable[[], bool]] = []


def fixed_clock_allowed(probe: Callable[[], bool] | None) -> None:
    """The ledger this process opened last: `probe()` says whether it honours TODOLEDGER_NOW."""
    _fixed_allowed[:] = [probe] if probe is not None else []


def now() -> str:
    fixed = os.environ.get(NOW_ENV)
    if fixed and _fixed_allowed and _fixed_allowed[0]():
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
    whole = epoch(at[:19])
    millis = int(at[20:23]) if len(at) >= 23 and at[19] == "." else 0
    total = whole * 1000 + millis + round(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(total // 1000)) + f".{total % 1000:03d}Z"


def epoch(text: str) -> int:
    """Seconds since 1970 of `YYYY-MM-DDTHH:MM:SS` in UTC, as
    `calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))` gives them,
    without `time.strptime`: its first call imports `datetime`, `locale`,
    `calendar` and compiles a dozen patterns, which `next --claim` paid on
    every call. ValueError for what is not such a time."""
    if (
        len(text) != 19
        or text[4] != "-"
        or text[7] != "-"
        or text[10] != "T"
        or text[13] != ":"
        or text[16] != ":"
    ):
        raise ValueError(f"not a time: {text!r}")
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days_in = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not (
        1 <= month <= 12 and 1 <= day <= days_in[month - 1] and hour < 24 and minute < 60 and second < 62
    ):
        raise ValueError(f"not a time: {text!r}")
    # Days from 1970-01-01 to the date (the proleptic Gregorian calendar, as timegm counts).
    y = year - (month <= 2)
    era = y // 400
    of_era = y - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468
    return days * 86400 + hour * 3600 + minute * 60 + second
