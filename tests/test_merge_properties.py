"""Properties of whole-list merging, on a real (in-memory) SQLite store."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from todoledger import Ledger
from todoledger.core.merge import is_rewording
from todoledger.store.sqlite import SQLiteStore

WORDS = ["train", "deploy", "benchmark", "fix", "keys", "server", "tokens", "16", "10", "5", "check", "sweep"]
contents = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
statuses = st.sampled_from(["pending", "in_progress", "completed", "cancelled"])
priorities = st.sampled_from(["high", "medium", "low"])


@st.composite
def todo_lists(draw: st.DrawFn) -> list[dict[str, str]]:
    texts = draw(
        st.lists(contents, min_size=0, max_size=8, unique_by=lambda t: " ".join(t.split()).casefold())
    )
    return [{"content": t, "status": draw(statuses), "priority": draw(priorities)} for t in texts]


def fresh() -> Ledger:
    return Ledger(store=SQLiteStore(None))


def view_of(lg: Ledger, ids: list[str]) -> list[tuple[str, str, str]]:
    items = {i["id"]: i for i in lg.show()["items"]}
    return [(items[i]["content"], items[i]["status"], items[i]["priority"]) for i in ids]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(first=todo_lists(), second=todo_lists())
def test_write_reproduces_the_new_list(first: list[dict[str, str]], second: list[dict[str, str]]) -> None:
    with fresh() as lg:
        lg.write({"todos": first}, writer="w") if first else None
        res = lg.write({"todos": second}, writer="w") if second else None
        if res is None:
            return
        assert view_of(lg, res.ids) == [(t["content"], t["status"], t["priority"]) for t in second]
        order = [i["id"] for i in lg.show()["items"]]
        positions = [order.index(i) for i in res.ids]
        assert positions == sorted(positions)
        assert lg.check() == []


@SETTINGS
@given(mine=todo_lists(), theirs=todo_lists(), later=todo_lists())
def test_a_writer_never_removes_items_outside_its_base(
    mine: list[dict[str, str]], theirs: list[dict[str, str]], later: list[dict[str, str]]
) -> None:
    with fresh() as lg:
        if theirs:
            lg.write({"todos": theirs}, writer="other")
        if mine:
            lg.write({"todos": mine}, writer="me")
        before = {i["id"]: i for i in lg.show()["items"]}
        seen = set(lg.repo.base("main", "me"))
        if later:
            lg.write({"todos": later}, writer="me")
        after = {i["id"]: i for i in lg.show()["items"]}
        for item_id, item in before.items():
            assert item_id in after
            if item_id in seen:
                continue
            # Someone else's item: this writer's list may move it on, never drop or reopen it.
            assert after[item_id]["reason"] != "dropped by me"
            rank = {"pending": 0, "in_progress": 1, "completed": 2, "cancelled": 2}
            assert rank[after[item_id]["status"]] >= rank[item["status"]]


@SETTINGS
@given(
    lists=st.lists(todo_lists(), min_size=1, max_size=5),
    writers=st.lists(st.sampled_from("abc"), min_size=5, max_size=5),
)
def test_state_always_equals_replay_and_undo_restores(
    lists: list[list[dict[str, str]]], writers: list[str]
) -> None:
    with fresh() as lg:
        snapshots: list[Any] = []
        for todos, writer in zip(lists, writers, strict=False):
            if not todos:
                continue
            before = [
                (i["id"], i["content"], i["status"], i["priority"], i["reason"]) for i in lg.show()["items"]
            ]
            lg.write({"todos": todos}, writer=writer)
            if [
                (i["id"], i["content"], i["status"], i["priority"], i["reason"]) for i in lg.show()["items"]
            ] != before:
                snapshots.append(before)
            assert lg.check() == []
        for snapshot in reversed(snapshots):
            lg.undo(any_writer=True, writer="cli:tester")  # a person undoes whoever wrote last
            assert sorted(
                (i["id"], i["content"], i["status"], i["priority"], i["reason"]) for i in lg.show()["items"]
            ) == sorted(snapshot)
            assert lg.check() == []


def test_rewording_rules() -> None:
    assert is_rewording("Benchmark with 16 draft tokens", "Benchmark 16 draft tokens")
    assert not is_rewording("Benchmark with 10 draft tokens", "Benchmark with 5 draft tokens")
    assert not is_rewording("Train the drafter", "Deploy the server")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)
todo_like = st.fixed_dictionaries(
    {
        "todos": st.lists(
            st.dictionaries(
                st.sampled_from(["content", "status", "priority", "activeForm", "id", "description"]),
                json_values,
                max_size=5,
            ),
            max_size=5,
        )
    }
)


@SETTINGS
@given(payload=json_values | todo_like)
def test_write_raises_only_its_own_error_on_arbitrary_json(payload: object) -> None:
    import json

    from todoledger.core.model import LedgerError

    with fresh() as lg:
        try:
            lg.write(json.dumps(payload), writer="fuzz")
        except LedgerError:
            assert lg.show()["items"] == [] and lg.ops() == []
        assert lg.check() == []


@SETTINGS
@given(data=st.binary(max_size=200))
def test_write_raises_only_its_own_error_on_arbitrary_bytes(data: bytes) -> None:
    from todoledger.core.model import LedgerError

    with fresh() as lg:
        try:
            lg.write(data, writer="fuzz")
        except LedgerError:
            assert lg.ops() == []


def test_huge_payloads_get_a_clear_limit_error_quickly() -> None:
    import json

    import pytest

    from todoledger.core.model import LimitError

    big_content = json.dumps({"todos": [{"content": "x" * 10_000_000, "status": "pending"}]})
    many = json.dumps({"todos": [{"content": f"item {k}", "status": "pending"} for k in range(100_000)]})
    with fresh() as lg:
        for payload, message in ((big_content, "the limit is 2 MB"), (many, "the limit is 2 MB")):
            with pytest.raises(LimitError, match=message):
                lg.write(payload, writer="w")
        few_bytes_many_items = json.dumps(
            {"todos": [{"content": "a", "status": "pending"}] * 2001}, separators=(",", ":")
        )
        with pytest.raises(LimitError, match="2,001 items; the limit is 2,000"):
            lg.write(few_bytes_many_items, writer="w")
        assert lg.show()["items"] == []
