"""`core.graph.derive_links` against a direct reading of its rule, on random
plans of phases, sub-items and dependencies (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from todoledger.core.graph import derive_links, open_below

STATUSES = ["pending", "in_progress", "completed", "cancelled"]


@st.composite
def plans(draw: st.DrawFn) -> list[tuple[str, str | None, str, list[str]]]:
    n = draw(st.integers(1, 12))
    ids = [f"i{k}" for k in range(n)]
    rows = []
    for k, item in enumerate(ids):
        parent = draw(st.sampled_from([None, *ids[:k]]))  # parents come first: no cycles
        deps = draw(st.lists(st.sampled_from(ids[:k]), max_size=3, unique=True)) if k else []
        rows.append((item, parent, draw(st.sampled_from(STATUSES)), deps))
    return rows


def below(rows: list[tuple[str, str | None, str, list[str]]], item: str) -> list[str]:
    children = [r[0] for r in rows if r[1] == item]
    return children + [g for c in children for g in below(rows, c)]


@settings(max_examples=300, deadline=None)
@given(plans(), st.data())
def test_ready_means_every_prerequisite_finished_to_the_bottom(
    rows: list[tuple[str, str | None, str, list[str]]], data: st.DataObject
) -> None:
    held = frozenset(data.draw(st.lists(st.sampled_from([r[0] for r in rows]), max_size=2)))
    status = {r[0]: r[2] for r in rows}
    parent = {r[0]: r[1] for r in rows}
    deps = {r[0]: r[3] for r in rows}

    def open_work_below(item: str) -> bool:
        return any(status[d] in ("pending", "in_progress") for d in below(rows, item))

    def finished(item: str) -> bool:
        return status[item] == "completed" and item not in held and not open_work_below(item)

    def blocked(item: str) -> bool:
        node: str | None = item
        while node is not None:
            if not all(finished(b) for b in deps[node]):
                return True
            node = parent[node]
        return False

    derived = derive_links(rows, held)
    assert open_below(rows) == {r[0] for r in rows if open_work_below(r[0])}
    for item, _, st_, _ in rows:
        want_ready = st_ == "pending" and not blocked(item) and not open_work_below(item)
        assert derived[item] == (blocked(item), want_ready), item
