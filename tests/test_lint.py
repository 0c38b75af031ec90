"""Item-level lint and lint_payload."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoledger.core.lint import CUT_LIMITS, check_item_count, lint_items, looks_truncated
from todoledger.core.model import MAX_CONTENT_CHARS, Finding, Incoming, LedgerError, LimitError
from todoledger.dialects import lint_payload

# Real truncated content from the seeds.
SEED_TRUNCATED = "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..."


def item(i: int, content: str | None = "Write tests", status: str | None = "pending", **kw: Any) -> Incoming:
    return Incoming(content=content, status=status, where=f"todos[{i}]", **kw)


def lines(findings: list[Finding]) -> list[str]:
    return [f.line() for f in findings]


def test_clean_list_has_no_findings() -> None:
    items = [item(0, "Read code", "completed", priority="high"), item(1, "Fix bug", "in_progress")]
    assert lint_items(items, "opencode") == []


def test_empty_content_is_an_error() -> None:
    assert lines(lint_items([item(0, "  \n")], "opencode")) == ["error: todos[0].content: content is empty"]


def test_status_that_is_a_priority_value() -> None:
    findings = lint_items([item(0, status="high")], "opencode")
    assert findings == [
        Finding(
            "error",
            "todos[0].status",
            "bad-status",
            'status "high" is a priority value; '
            "status must be one of pending, in_progress, completed, cancelled",
        )
    ]


def test_priority_that_is_a_status_value() -> None:
    findings = lint_items([item(0, priority="pending")], "opencode")
    assert lines(findings) == [
        'error: todos[0].priority: priority "pending" is a status value; '
        "priority must be one of high, medium, low"
    ]


def test_unknown_values_and_spelling_hint() -> None:
    findings = lint_items([item(0, "a", "in-progress"), item(1, "b", "done", priority="urgent")], "opencode")
    assert lines(findings) == [
        'error: todos[0].status: status "in-progress" is not one of pending, in_progress, completed, '
        'cancelled; did you mean "in_progress"?',
        'error: todos[1].status: status "done" is not one of pending, in_progress, completed, cancelled',
        'error: todos[1].priority: priority "urgent" is not one of high, medium, low',
    ]


def test_more_than_one_in_progress_names_the_items() -> None:
    items = [
        item(0, "a", "in_progress"),
        item(1, "b"),
        item(2, "c", "in_progress"),
        item(3, "d", "in_progress"),
    ]
    assert lines(lint_items(items, "opencode")) == [
        "warning: todos: 3 items are in_progress (todos[0], todos[2], todos[3]); only one should be at a time"
    ]


def test_codex_and_gemini_findings_use_their_own_keys() -> None:
    codex = [
        Incoming("a", "in_progress", where="plan[0]"),
        Incoming("", "in_progress", where="plan[1]"),
    ]
    assert lines(lint_items(codex, "codex")) == [
        "error: plan[1].step: step is empty",
        "warning: plan: 2 items are in_progress (plan[0], plan[1]); only one should be at a time",
    ]
    gemini = [Incoming("Run tests...", "pending", where="todos[0]")]
    assert lines(lint_items(gemini, "gemini")) == [
        "warning: todos[0].description: description ends with an ellipsis; it looks truncated"
    ]


def test_seed_truncated_content_warns() -> None:
    findings = lint_items([item(0, SEED_TRUNCATED)], "opencode")
    assert findings == [
        Finding(
            "warning", "todos[0].content", "truncated", "content ends with an ellipsis; it looks truncated"
        )
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Deploy the server…", "ends with an ellipsis"),
        ("Deploy...  ", "ends with an ellipsis"),
        ("x" * 99 + "y", "is exactly 100 characters and stops mid-word"),
        ("a" * 255 + "7", "is exactly 256 characters and stops mid-word"),
        ("é" * 1024, "is exactly 1024 characters and stops mid-word"),
    ],
)
def test_looks_truncated(text: str, why: str) -> None:
    assert looks_truncated(text) == why


def test_every_cut_limit_is_checked() -> None:
    assert sorted(CUT_LIMITS) == [64, 100, 128, 200, 255, 256, 500, 512, 1000, 1024]
    assert all(looks_truncated("a" * n) for n in CUT_LIMITS)
    # Natural sentence lengths seen in real transcripts are not flagged.
    real = "Review repository structure and identify packages/services using Supabase client"
    assert looks_truncated(real) is None and looks_truncated(real[:50]) is None


@pytest.mark.parametrize(
    "text",
    [
        "x" * 79 + ".",  # closing punctuation
        "x" * 79 + ")",
        "x" * 81,  # not a cut length
        "x" * 99,
        "Fix the bug",
        "Wait for it..",  # two dots are not an ellipsis
    ],
)
def test_not_truncated(text: str) -> None:
    assert looks_truncated(text) is None


def test_duplicate_items_warn_at_the_second() -> None:
    items = [item(0, "Run the tests"), item(1, "Other"), item(2, "  run   THE tests ")]
    assert lines(lint_items(items, "opencode")) == [
        'warning: todos[2].content: same content as todos[0]: "  run   THE tests "'
    ]


def test_content_too_long_is_an_error() -> None:
    findings = lint_items([item(0, "x" * (MAX_CONTENT_CHARS + 1) + ".")], "opencode")
    assert lines(findings) == ["error: todos[0].content: content is 4,002 characters; the limit is 4,000"]
    assert lint_items([item(0, "x" * (MAX_CONTENT_CHARS - 1) + ".")], "opencode") == []


def test_lone_surrogate_is_an_error() -> None:
    assert lines(lint_items([item(0, "bad \ud800 text")], "opencode")) == [
        "error: todos[0].content: content contains invalid Unicode (a lone surrogate)"
    ]


def test_a_nul_character_is_an_error_on_every_backend() -> None:
    assert lines(lint_items([item(0, "bad \x00 text")], "opencode")) == [
        "error: todos[0].content: content contains a NUL character"
    ]


def test_too_many_items_is_a_limit_error() -> None:
    with pytest.raises(LimitError, match=r"^payload has 2,001 items; the limit is 2,000$"):
        lint_items([item(i, f"t{i}") for i in range(2001)], "opencode")
    check_item_count(2000)


def test_patch_skips_list_checks_and_unsaid_content() -> None:
    patch = [Incoming(None, "in_progress", ext_id="1"), Incoming(None, "in_progress", ext_id="2")]
    assert lint_items(patch, "claude-tasks", whole=False) == []
    assert lines(lint_items([Incoming("", "pending")], "claude-tasks", whole=False)) == [
        "error: subject: subject is empty"
    ]


def test_lint_payload_returns_errors_and_warnings_together() -> None:
    payload = {
        "todos": [
            {"content": "A", "status": "in_progress", "priority": "high"},
            {"content": "B...", "status": "in_progress", "priority": "pending"},
            {"content": "", "status": "high"},
        ]
    }
    assert lines(lint_payload(payload)) == [
        "warning: todos[1].content: content ends with an ellipsis; it looks truncated",
        'error: todos[1].priority: priority "pending" is a status value; priority must be one of high, '
        "medium, low",
        "error: todos[2].content: content is empty",
        'error: todos[2].status: status "high" is a priority value; status must be one of pending, '
        "in_progress, completed, cancelled",
        "warning: todos: 2 items are in_progress (todos[0], todos[1]); only one should be at a time",
    ]


def test_lint_payload_seed_duplicate_key() -> None:
    text = (
        '{"todos":[{"content":"Deploy SGLang with EAGLE3 drafter (16 spec tokens)","priority":"high",'
        '"status":"in_progress"},{"content":"Benchmark 16 speculative tokens","priority":"pending",'
        '"priority":"high"}]}'
    )
    assert lines(lint_payload(text)) == [
        'error: todos[1]: duplicate key "priority" (values "pending", "high"); the first was lost',
        'error: todos[1].status: "status" is missing',
    ]


def test_lint_payload_unreadable_input_is_one_finding() -> None:
    assert lines(lint_payload("{nope")) == [
        "error: $: invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes"
    ]
    assert lint_payload({"x": 1}) == [
        Finding(
            "error",
            "$",
            "unknown-payload",
            'unknown payload: not opencode (no "todos"), claude-code (no "todos"), '
            'claude-tasks (no "subject" or "taskId"), codex (no "plan"), gemini (no "todos")',
        )
    ]
    assert lines(lint_payload({"todos": []}, "nope")) == [
        'error: $: unknown dialect "nope"; expected auto or one of opencode, claude-code, claude-tasks, '
        "codex, gemini"
    ]


def test_lint_payload_raises_limit_error() -> None:
    # Timed beside parsing in bench/bench_limits.py.
    big = json.dumps({"todos": [{"content": "x" * (10 * 1024 * 1024), "status": "pending"}]})
    with pytest.raises(LimitError, match=r"^payload is 10 MB; the limit is 2 MB$"):
        lint_payload(big)
    many = json.dumps({"todos": [{}] * 100_000})
    with pytest.raises(LimitError, match=r"^payload has 100,000 items; the limit is 2,000$"):
        lint_payload(many)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["todos", "plan", "content", "status", "priority", "id", "step", "subject", "taskId"]
            )
            | st.text(max_size=5),
            children,
            max_size=5,
        )
    ),
    max_leaves=40,
)


@given(json_values)
def test_lint_payload_never_raises_on_any_json_value(value: Any) -> None:
    findings = lint_payload(value)
    assert all(isinstance(f, Finding) for f in findings)


@given(st.binary(max_size=300))
def test_lint_payload_never_raises_on_any_bytes(data: bytes) -> None:
    findings = lint_payload(data)
    assert all(isinstance(f, Finding) for f in findings)
    if data == b"":
        assert findings[0].code == "invalid-json"


def test_lint_payload_reports_what_it_cannot_read_and_raises_only_for_size() -> None:
    """A payload no dialect can read, or a dialect that does not exist, is one error
    finding in the asked dialect's terms; only an oversized payload raises."""
    expected = {
        "auto": ("unknown-payload", "unknown payload: expected a JSON object, got an array"),
        "opencode": ("wrong-shape", 'expected an object with "todos", got an array'),
        "codex": ("wrong-shape", 'expected an object with "plan", got an array'),
    }
    for name, (code, message) in expected.items():
        assert lint_payload(b"[]", name) == [Finding("error", "$", code, message)]
    (unknown,) = lint_payload(b"[]", "nope")
    assert (unknown.level, unknown.code) == ("error", "unknown-payload") and '"nope"' in unknown.message
    with pytest.raises(LimitError) as raised:
        lint_payload(b"[" + b" " * (3 * 1024 * 1024) + b"]", "auto")
    assert isinstance(raised.value, LedgerError) and str(raised.value).startswith("payload is 3 MB")
