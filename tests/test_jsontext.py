"""The agents' verbs encode JSON without the `json` package (`core/jsontext.py`):
the text must be `json.dumps`'s, byte for byte, for every value it can take."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoledger.core.jsontext import compact, encoder, loads

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # any code point, control characters and lone surrogates included
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


def reference(value: Any, default: Any = None) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)


@given(VALUES)
def test_the_text_is_json_dumps_byte_for_byte(value: Any) -> None:
    assert compact(value) == reference(value)


@pytest.mark.parametrize(
    "value",
    [
        "\x1b[2J\u2028\u202e\x7f\ud800",
        {"position": 1e-05, "big": 1e300, "tiny": 5e-324, "neg": -0.0, "n": math.nan, "i": math.inf},
        {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
    ],
)
def test_corner_cases(value: Any) -> None:
    assert compact(value) == reference(value)


def test_what_json_refuses_is_refused_the_same_way() -> None:
    for bad in ({"a": {1, 2}}, [object()], {("tuple", "key"): 1}):
        with pytest.raises(TypeError) as ours:
            compact(bad)
        with pytest.raises(TypeError) as theirs:
            reference(bad)
        assert str(ours.value) == str(theirs.value)
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference detected"):
        compact(circular)
    assert compact([circular[:0]]) == "[[]]"  # a failed encode leaves nothing behind


def test_a_default_is_used_as_json_uses_it() -> None:
    value = {"when": object, "set": {3}}
    assert encoder(repr)(value) == reference(value, default=repr)


@given(VALUES, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_loads_reads_what_json_loads_reads(value: Any, space: str) -> None:
    text = space + reference(value) + space
    ours, theirs = loads(text), json.loads(text)
    assert reference(ours) == reference(theirs)  # NaN != NaN: compared as text


@pytest.mark.parametrize("bad", ["", "  ", "[1,", '{"a" 1}', "[1] x", "nul", '"\x01"', "[1]]"])
def test_loads_refuses_what_json_loads_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        loads(bad)
