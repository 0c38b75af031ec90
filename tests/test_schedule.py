"""The critical path and the parallel sets against independent brute-force
computations on small random plans, resources included."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from todoledger.core.model import LedgerError
from todoledger.core.schedule import (
    collide,
    critical_path,
    format_duration,
    normalize_uses,
    parallel_sets,
    parse_duration,
    parse_use,
)

STATUSES = ["pending", "in_progress", "completed", "cancelled"]
ALL = None
# The resource specs the tests draw from, with their units written out by hand.
UNITS: dict[str, tuple[str, frozenset[int] | None]] = {
    "server": ("server", ALL),
    "gpu": ("gpu", ALL),
    "gpu:0": ("gpu", frozenset({0})),
    "gpu:3": ("gpu", frozenset({3})),
    "gpu:1-2": ("gpu", frozenset({1, 2})),
    "gpu:0-3": ("gpu", frozenset({0, 1, 2, 3})),
    "gpu:0,3": ("gpu", frozenset({0, 3})),
    "db": ("db", ALL),
}


def clash(a: list[str], b: list[str]) -> bool:
    """Brute force: any pair of specs on one resource whose units meet."""
    for x in a:
        for y in b:
            (nx, ux), (ny, uy) = UNITS[x], UNITS[y]
            if nx == ny and (ux is None or uy is None or ux & uy):
                return True
    return False


@st.composite
def plans(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 8))
    rows = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        minutes = draw(st.one_of(st.none(), st.integers(1, 9)))
        rows.append(
            {
                "id": f"i{i}",
                "status": draw(st.sampled_from(STATUSES)),
                "priority": "medium",
                "position": float(i),
                "parent": None,
                "depends_on": [f"i{d}" for d in deps],
                "estimate": f"{minutes}m" if minutes else None,
                "uses": [],
            }
        )
    return rows


def longest_chain(rows: list[dict[str, Any]]) -> int:
    """Every chain of open items, each waiting for the one before: the longest."""
    by_id = {r["id"]: r for r in rows}
    is_open = {r["id"] for r in rows if r["status"] in ("pending", "in_progress")}

    def cost(i: str) -> int:
        est = by_id[i]["estimate"]
        return int(est[:-1]) * 60 if est else 0

    def best_ending_at(i: str) -> int:
        before = [b for b in by_id[i]["depends_on"] if b in is_open]
        return cost(i) + max((best_ending_at(b) for b in before), default=0)

    return max((best_ending_at(i) for i in is_open), default=0)


@settings(max_examples=300, deadline=None)
@given(plans())
def test_critical_path_is_the_longest_chain(rows: list[dict[str, Any]]) -> None:
    path, length = critical_path(rows)
    assert length == longest_chain(rows)
    by_id = {r["id"]: r for r in rows}
    if not any(r["status"] in ("pending", "in_progress") for r in rows):
        assert path == []
        return
    # The path is a real chain of open items whose estimates add up to its length.
    assert all(by_id[i]["status"] in ("pending", "in_progress") for i in path)
    for a, b in pairwise(path):
        assert a in by_id[b]["depends_on"]
    assert sum(parse_duration(by_id[i]["estimate"]) if by_id[i]["estimate"] else 0 for i in path) == length


def test_critical_path_follows_phases_and_skips_finished_work() -> None:
    rows = [
        {"id": "a", "status": "completed", "depends_on": [], "estimate": "5h"},
        {"id": "b", "status": "pending", "depends_on": ["a"], "estimate": "1h"},
        {"id": "phase", "status": "pending", "depends_on": ["b"], "estimate": None},
        {"id": "c", "status": "pending", "depends_on": [], "estimate": "30m", "parent": "phase"},
        {"id": "d", "status": "pending", "depends_on": [], "estimate": "1h20m"},
    ]
    path, length = critical_path(rows)
    # c waits for b through its phase; the finished a costs nothing more.
    assert (path, length) == (["b", "c"], 90 * 60)


@st.composite
def ready_sets(draw: Any) -> tuple[list[dict[str, Any]], list[str]]:
    n = draw(st.integers(0, 8))
    ready = [
        {"id": f"r{i}", "uses": draw(st.lists(st.sampled_from(sorted(UNITS)), max_size=2, unique=True))}
        for i in range(n)
    ]
    held = draw(st.lists(st.sampled_from(sorted(UNITS)), max_size=2, unique=True))
    return ready, held


@settings(max_examples=300, deadline=None)
@given(ready_sets())
def test_parallel_sets_share_no_resource_and_are_first_fit(
    case: tuple[list[dict[str, Any]], list[str]],
) -> None:
    ready, held = case
    sets = parallel_sets(ready, held)
    uses = {r["id"]: r["uses"] for r in ready}
    order = [r["id"] for r in ready]
    flat = [i for s in sets for i in s]
    assert sorted(flat) == sorted(order)  # every ready item once
    for s in sets:
        for a in s:
            for b in s:
                assert a == b or not clash(uses[a], uses[b])
    if sets:
        assert not any(clash(uses[i], held) for i in sets[0])  # the first set can start now
    for k, s in enumerate(sets):
        for x in s:
            for j in range(k):
                earlier = [y for y in sets[j] if order.index(y) < order.index(x)]
                blocked = any(clash(uses[x], uses[y]) for y in earlier) or (j == 0 and clash(uses[x], held))
                assert blocked, f"{x} would have fitted in set {j}"


def test_the_four_benchmarks_on_one_server_run_one_at_a_time() -> None:
    """The seeds' replay: four concurrency benchmarks all showed as ready, yet share one server."""
    ready = [{"id": f"bench{n}", "uses": ["server"]} for n in (1, 4, 16, 64)] + [
        {"id": "train", "uses": ["gpu:0-3"]},
        {"id": "eval", "uses": ["gpu:4-7"]},
        {"id": "notes", "uses": []},
    ]
    assert parallel_sets(ready) == (
        ("bench1", "train", "eval", "notes"),
        ("bench4",),
        ("bench16",),
        ("bench64",),
    )
    # Work in progress on the server keeps every benchmark out of what can start now.
    assert parallel_sets(ready, ["server"])[0] == ("train", "eval", "notes")


def test_resource_and_duration_syntax() -> None:
    assert parse_use("GPU:0-2,5") == ("gpu", frozenset({0, 1, 2, 5}))
    assert normalize_uses(["gpu:2-3", "server", "gpu:0,1"]) == ["gpu:0-3", "server"]
    assert normalize_uses(["gpu:1", "gpu"]) == ["gpu"]
    assert collide(["gpu"], ["gpu:7"]) and not collide(["gpu:0-1"], ["gpu:2-3"])
    assert [parse_duration(x) for x in ("15m", "2h", "1h30m", "1.5d", "45s", "90")] == [
        900,
        7200,
        5400,
        129600,
        45,
        5400,
    ]
    assert format_duration(5400) == "1h30m" and format_duration(93784) == "1d2h3m4s"
    for bad in ("gpu:3-1", "gpu:x", "a b", "gpu:0-99999", ":1"):
        with pytest.raises(LedgerError):
            parse_use(bad)
    for bad in ("soon", "0m", "15 minutes", "-5m", "400d"):
        with pytest.raises(LedgerError):
            parse_duration(bad)
