"""`core.timefmt.epoch`: the seconds `calendar.timegm(time.strptime(...))` gives,
without `time.strptime` (which `next --claim` used to import on every call)."""

from __future__ import annotations

import calendar
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoledger.core.timefmt import epoch, shift

STAMPS = st.integers(min_value=-62135596800, max_value=253402300799)  # years 1 to 9999


def reference(text: str) -> int:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


@given(STAMPS)
def test_epoch_is_timegm_of_strptime(stamp: int) -> None:
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp))
    text = text.rjust(19, "0")  # years before 1000 as now() would never write them, but still times
    assert epoch(text) == reference(text) == stamp


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-29T00:00:00",
        "2026-13-01T00:00:00",
        "2026-04-31T00:00:00",
        "2026-01-01T24:00:00",
        "2026-01-01 00:00:00",
        "2026-01-01T00:00",
        "20260101T000000Z..",
        "2026-0a-01T00:00:00",
    ],
)
def test_what_strptime_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        reference(text)
    with pytest.raises(ValueError):
        epoch(text)


def test_shift_crosses_days_years_and_leap_days() -> None:
    assert shift("2024-02-28T23:59:59.999Z", 0.001) == "2024-02-29T00:00:00.000Z"
    assert shift("2026-12-31T23:30:00.250Z", 1800) == "2027-01-01T00:00:00.250Z"
    assert shift("2026-03-01T00:00:00.000Z", -1) == "2026-02-28T23:59:59.000Z"
