"""The agents' verbs encode JSON without the `json` package (`core/jsontext.py`):
the text must be `json.dumps`'s, byte for byte, for every value it can take."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoledger.core.jsontext import compact, encoder, indented, loads, loads_bytes

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


# loads_bytes: a hook's event on stdin, read as json.loads reads bytes ------------------------
def _outcome(read: Any, data: bytes) -> tuple[str, str]:
    try:
        return "value", reference(read(data))
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@given(VALUES, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32-be"]))
def test_loads_bytes_reads_what_json_loads_reads_in_every_encoding_json_detects(
    value: Any, encoding: str
) -> None:
    data = json.dumps(value).encode(encoding)
    assert _outcome(loads_bytes, data) == _outcome(json.loads, data)


@pytest.mark.parametrize(
    "data",
    [b"", b" ", b"{", b'{"a": 1} x', b'{"a": \xff}', b"\xef\xbb\xbf{}", b'{"a": "\xed\xa0\x80"}', b"[1,]"],
)
def test_loads_bytes_refuses_what_json_refuses_in_its_words(data: bytes) -> None:
    assert _outcome(loads_bytes, data) == _outcome(json.loads, data)


def test_bad_text_is_json_s_own_error_where_json_was_never_imported() -> None:
    """The C scanner raises its error through `json.decoder`: in a process that never
    imported `json` (a hook) that was a SystemError, which no caller expects."""
    import subprocess
    import sys

    probe = (
        "import sys\nfrom todoledger.core.jsontext import loads, loads_bytes\n"
        "assert 'json' not in sys.modules\n"
        "for read, bad in ((loads, '{\"a\" 1}'), (loads_bytes, b'{\"a\": nul}'), (loads, '[1] x')):\n"
        "    try:\n        read(bad)\n    except ValueError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "JSONDecodeError Expecting ':' delimiter: line 1 column 6 (char 5)",
        "JSONDecodeError Expecting value: line 1 column 7 (char 6)",
        "JSONDecodeError Extra data: line 1 column 5 (char 4)",
    ]


TASK_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


@given(TASK_VALUES, st.sampled_from([2, 1, 4]))
def test_indented_is_json_dumps_indented_byte_for_byte(value: Any, indent: int) -> None:
    """The panel's task files (panel/rows.py) are written as Claude Code writes them."""
    assert indented(value, indent) == json.dumps(value, indent=indent, ensure_ascii=False)


@pytest.mark.parametrize("value", [{"f": 1.5}, {1: "int key"}, [math.nan], ("a", "tuple"), {"s": {1}}])
def test_indented_leaves_other_values_to_json(value: Any) -> None:
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False)
    except TypeError:
        with pytest.raises(TypeError):
            indented(value)
        return
    assert indented(value) == expected


@given(VALUES)
def test_the_canonical_options_text_is_json_dumps_sorted_byte_for_byte(value: Any) -> None:
    """A check's canonical text (core/checkspec.py), which a person's trust signs."""
    ours = encoder(separators=(", ", ": "), sort_keys=True)
    try:
        expected = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except TypeError:  # keys of mixed types cannot be sorted: refused alike
        with pytest.raises(TypeError):
            ours(value)
        return
    assert ours(value) == expected
