"""core/record.py's `dataclass` (the hook path's stand-in for `dataclasses`): the methods it
compiles on first use behave as the standard module's, `__eq__` and `__hash__` compiled
apart from `__init__` (issue 30: most records are never compared)."""

from __future__ import annotations

import dataclasses

import pytest

from todoledger.core import record


def _pair(frozen: bool) -> tuple[type, type]:
    def body() -> dict[str, object]:
        return {
            "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "_hidden": "int"},
            "b": "x",
            "c": record.field(default_factory=list),
        }

    ours = record.dataclass(type("Rec", (), body()), frozen=frozen)
    theirs_body = body()
    theirs_body["c"] = dataclasses.field(default_factory=list)
    theirs_body["__annotations__"] = {"a": "int", "b": "str", "c": "list[int]"}
    theirs = dataclasses.dataclass(type("Rec", (), theirs_body), frozen=frozen)
    return ours, theirs


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("compare_first", [False, True])
def test_records_behave_as_dataclasses(frozen: bool, compare_first: bool) -> None:
    ours, theirs = _pair(frozen)
    if compare_first:  # the comparison compiled before any __init__ is, and the other way round
        left, right = object.__new__(ours), object.__new__(ours)
        left.__dict__.update(a=1, b="x", c=())
        right.__dict__.update(a=1, b="x", c=())
        assert left == right
        if frozen:
            assert hash(left) == hash(right)
    for make in (ours, theirs):
        one, same, other = make(1), make(1, "x", []), make(2, "y", [3])
        assert (one == same, one == other, one != other) == (True, False, True)
        assert one.__eq__(3) is NotImplemented
        assert (one.a, one.b, one.c, other.c) == (1, "x", [], [3])
        assert make(1).c is not make(1).c  # a fresh default each time
        assert repr(other) == "Rec(a=2, b='y', c=[3])"
        if frozen:
            assert hash(make(1, "x", ())) == hash(make(1, "x", ()))
            with pytest.raises(AttributeError):
                one.a = 5  # type: ignore[misc]
        else:
            assert make.__hash__ is None
            one.a = 5
            assert one.a == 5 and one != same
