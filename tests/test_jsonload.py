"""Strict JSON loading: duplicate keys, limits, invalid input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoledger.core.jsonload import json_path, load, load_checked, payload_size, size_text
from todoledger.core.model import MAX_PAYLOAD_BYTES, Finding, LedgerError, LimitError, LintError

SEED_DUPLICATE = '{"content":"Benchmark 16 speculative tokens","priority":"pending","priority":"high"}'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


def only_finding(exc: LintError) -> Finding:
    assert len(exc.findings) == 1
    return exc.findings[0]


def test_loads_plain_json() -> None:
    assert load('{"todos": [{"content": "a"}]}') == {"todos": [{"content": "a"}]}
    assert load_checked(b'[1, "x", null]') == ([1, "x", None], [])


def test_seed_duplicate_key_is_reported_with_values() -> None:
    value, findings = load_checked('{"todos": [' + SEED_DUPLICATE + "]}")
    assert value == {"todos": [{"content": "Benchmark 16 speculative tokens", "priority": "high"}]}
    assert findings == [
        Finding(
            "error",
            "todos[0]",
            "duplicate-key",
            'duplicate key "priority" (values "pending", "high"); the first was lost',
        )
    ]


def test_load_raises_on_duplicate_key() -> None:
    with pytest.raises(LintError) as e:
        load(SEED_DUPLICATE)
    assert (
        str(e.value) == 'rejected: $: duplicate key "priority" (values "pending", "high"); the first was lost'
    )


def test_duplicate_paths_in_nested_objects_and_arrays() -> None:
    text = '{"a": {"b": [0, {"x": 1, "x": 2, "x": [3]}]}, "odd key": {"k": 1, "k": 1}, "a2": 1}'
    _, findings = load_checked(text)
    assert [(f.where, f.message) for f in findings] == [
        ("a.b[1]", 'duplicate key "x" (values 1, 2, [3]); the first 2 were lost'),
        ('["odd key"]', 'duplicate key "k" (values 1, 1); the first was lost'),
    ]


def test_duplicates_follow_document_order_past_index_nine() -> None:
    items = ['{"c": 1}'] * 12
    items[2] = items[11] = '{"c": 1, "c": 2}'
    _, findings = load_checked('{"todos": [' + ",".join(items) + "]}")
    assert [f.where for f in findings] == ["todos[2]", "todos[11]"]


def test_long_duplicate_values_are_shortened() -> None:
    long = "x" * 100
    _, findings = load_checked(f'{{"k": "{long}", "k": 1}}')
    assert findings[0].message == f'duplicate key "k" (values "{"x" * 38}…, 1); the first was lost'


def test_invalid_json_names_line_and_column() -> None:
    with pytest.raises(LintError) as e:
        load('{"todos": [\n  {"content": "a",}\n]}')
    f = only_finding(e.value)
    assert (f.level, f.where, f.code) == ("error", "$", "invalid-json")
    assert f.message == "invalid JSON at line 2 column 19: Expecting property name enclosed in double quotes"


def test_bytes_that_are_not_utf8_are_invalid_json() -> None:
    with pytest.raises(LintError) as e:
        load(b'{"a":\n "\xff"}')
    assert only_finding(e.value).message == "invalid JSON at line 2 column 3: not UTF-8 (byte 0xff)"


def test_utf8_bom_is_accepted() -> None:
    assert load(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_non_standard_constants_are_rejected(text: str) -> None:
    with pytest.raises(LintError) as e:
        load(text)
    assert only_finding(e.value).message.startswith("invalid JSON: ")
    assert "is not valid JSON" in only_finding(e.value).message


def test_float_overflow_is_rejected() -> None:
    with pytest.raises(LintError) as e:
        load('{"a": [1.5, -1e999]}')
    assert only_finding(e.value).message == "invalid JSON: number -1e999 is out of range"
    assert load("[1e308, 2.5]") == [1e308, 2.5]


def test_empty_input_is_invalid() -> None:
    with pytest.raises(LintError) as e:
        load(b"")
    assert only_finding(e.value).message == "invalid JSON at line 1 column 1: Expecting value"


def test_deep_nesting_is_a_lint_error() -> None:
    with pytest.raises(LintError) as e:
        load("[" * 100_000 + "]" * 100_000)
    assert only_finding(e.value).message == "invalid JSON: nested too deeply to read"


def test_oversized_payload_is_refused_before_parsing() -> None:
    data = b"[" + b" " * int(10.5 * 1024 * 1024) + b"]"
    with pytest.raises(LimitError) as e:  # timed beside parsing in bench/bench_limits.py
        load(data)
    assert str(e.value) == "payload is 10.5 MB; the limit is 2 MB"


def test_oversized_str_counts_utf8_bytes() -> None:
    # 700,000 chars of 4 bytes each: under the limit in chars, over it in bytes.
    text = '"' + "😀" * 700_000 + '"'
    assert payload_size(text) == 2_800_002
    with pytest.raises(LimitError, match=r"^payload is 2\.7 MB; the limit is 2 MB$"):
        load(text)


def test_payload_exactly_at_limit_is_read() -> None:
    text = '"' + "a" * (MAX_PAYLOAD_BYTES - 2) + '"'
    assert len(load(text)) == MAX_PAYLOAD_BYTES - 2
    with pytest.raises(LimitError):
        load(text + " ")


def test_size_text() -> None:
    assert [size_text(n) for n in (12, 2048, 3 * 1024 * 1024, int(1.25 * 1024 * 1024))] == [
        "12 bytes",
        "2 KB",
        "3 MB",
        "1.2 MB",
    ]


def test_json_path() -> None:
    assert json_path([]) == "$"
    assert json_path(["todos", 3, "status"]) == "todos[3].status"
    assert json_path([0, "a b"]) == '[0]["a b"]'


@given(json_values)
def test_roundtrip_of_any_json_value(value: Any) -> None:
    assert load(json.dumps(value)) == value


@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_ledger_errors(data: bytes) -> None:
    try:
        value, findings = load_checked(data)
    except LedgerError:
        return
    assert load(json.dumps(value)) == value
    assert all(f.code == "duplicate-key" for f in findings)
