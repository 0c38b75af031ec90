"""Reading each agent's payload, auto-detection, envelopes, rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import PUBLIC_TRANSCRIPTS
from todoledger.core.model import Finding, Incoming, LedgerError, LimitError, LintError
from todoledger.dialects import DIALECTS, TOOL_DIALECTS, detect, parse, read, render

TRANSCRIPTS = PUBLIC_TRANSCRIPTS


def error_lines(exc: LintError) -> list[str]:
    return [f.line() for f in exc.findings]


# --- each dialect verbatim ---------------------------------------------------


def test_opencode() -> None:
    pw = parse(
        {"todos": [{"content": "Read", "status": "Completed ", "priority": "HIGH", "id": 7}]}, "opencode"
    )
    assert pw.dialect == "opencode"
    assert pw.whole is True
    assert pw.items == [Incoming("Read", "completed", "high", ext_id="7", where="todos[0]")]
    assert pw.findings == []


def test_opencode_without_priority_leaves_it_unsaid() -> None:
    pw = parse('{"todos": [{"content": "Read", "status": "pending"}]}')
    assert pw.dialect == "opencode"
    assert pw.items[0].priority is None


def test_claude_code_current_shape() -> None:
    payload = {"todos": [{"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"}]}
    pw = parse(payload)
    assert pw.dialect == "claude-code"
    assert pw.items == [Incoming("Run tests", "in_progress", active_form="Running tests", where="todos[0]")]


def test_claude_code_old_shape_via_tool_name() -> None:
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "TodoWrite",
        "input": {"todos": [{"id": "1", "content": "Examine", "status": "pending", "priority": "high"}]},
    }
    pw = parse(block)
    assert pw.dialect == "claude-code"
    assert pw.items == [Incoming("Examine", "pending", "high", ext_id="1", where="todos[0]")]


def test_old_claude_shape_alone_reads_as_opencode_since_readings_agree() -> None:
    payload = {"todos": [{"id": "1", "content": "Examine", "status": "pending", "priority": "high"}]}
    assert detect(payload) == "opencode"
    assert parse(payload).items == parse(payload, "claude-code").items


def test_codex_forms() -> None:
    args = {"explanation": "Start", "plan": [{"step": "Scan repo", "status": "in_progress"}]}
    text = json.dumps(args)
    expected = [Incoming("Scan repo", "in_progress", where="plan[0]")]
    for payload in (
        args,
        text,
        text.encode(),
        {"arguments": text},
        {"name": "update_plan", "arguments": text},
        {"type": "function_call", "name": "update_plan", "arguments": text, "call_id": "call_1"},
        {"name": "update_plan", "arguments": args},
    ):
        pw = parse(payload)
        assert (pw.dialect, pw.items, pw.explanation) == ("codex", expected, "Start"), payload


def test_codex_duplicate_key_inside_arguments_string_is_rooted_at_the_arguments() -> None:
    text = '{"plan": [{"step": "a", "status": "pending", "status": "completed"}]}'
    with pytest.raises(LintError) as e:
        parse({"name": "update_plan", "arguments": text})
    assert error_lines(e.value) == [
        'error: plan[0]: duplicate key "status" (values "pending", "completed"); the first was lost'
    ]


def test_gemini_with_cancelled_and_blocked() -> None:
    payload = {
        "todos": [
            {"description": "Plan", "status": "cancelled"},
            {"description": "Build", "status": "blocked"},
        ]
    }
    pw = parse(payload)
    assert pw.dialect == "gemini"
    assert pw.items == [
        Incoming("Plan", "cancelled", where="todos[0]"),
        Incoming("Build", "pending", where="todos[1]"),
    ]
    assert pw.findings == [
        Finding(
            "warning",
            "todos[1].status",
            "status-mapped",
            'status "blocked" has no ledger equivalent; read as "pending" (record blockers as dependencies)',
        )
    ]


def test_gemini_hook_envelope() -> None:
    hook = {
        "session_id": "s",
        "hook_event_name": "AfterTool",
        "tool_name": "write_todos",
        "tool_input": {"todos": [{"description": "Run tests", "status": "in_progress"}]},
        "tool_response": {"llmContent": "ok"},
    }
    pw = parse(json.dumps(hook), "gemini")
    assert (pw.dialect, [i.content for i in pw.items]) == ("gemini", ["Run tests"])


def test_claude_task_create_takes_id_from_response() -> None:
    hook = {
        "tool_name": "TaskCreate",
        "tool_input": {"subject": "Ship it", "description": "details", "activeForm": "Shipping"},
        "tool_response": {"task": {"id": 12, "subject": "Ship it"}},
    }
    pw = parse(hook, "claude-code")  # a Claude hook may name either Claude dialect
    assert (pw.dialect, pw.whole) == ("claude-tasks", False)
    assert pw.items == [
        Incoming("Ship it", "pending", active_form="Shipping", ext_id="12", notes="details", where="")
    ]


def test_claude_task_create_without_response_has_no_id() -> None:
    pw = parse({"subject": "Ship it"})
    assert pw.items == [Incoming("Ship it", "pending", where="")]


@pytest.mark.parametrize("key", ["taskId", "id", "task_id"])
def test_claude_task_update_reads_every_id_spelling(key: str) -> None:
    payload = {key: 4, "status": "deleted", "subject": "New title", "addBlockedBy": ["1", 2], "owner": "me"}
    pw = parse(payload, "claude-tasks")
    assert pw.whole is False
    assert pw.items == [
        Incoming("New title", "cancelled", ext_id="4", reason="deleted", blocked_by=["1", "2"], where="")
    ]


def test_claude_task_update_status_only_and_id_from_response() -> None:
    pw = parse(
        {"tool_name": "TaskUpdate", "tool_input": {"status": "completed"}, "tool_response": {"taskId": "9"}}
    )
    assert pw.items == [Incoming(None, "completed", ext_id="9", where="")]


def test_claude_task_update_without_id_is_an_error() -> None:
    with pytest.raises(LintError) as e:
        parse({"name": "TaskUpdate", "input": {"status": "completed"}})
    assert error_lines(e.value) == ['error: taskId: TaskUpdate needs a "taskId"']


def test_claude_task_bad_status() -> None:
    with pytest.raises(LintError) as e:
        parse({"taskId": "1", "status": "medium"})
    assert error_lines(e.value) == [
        'error: status: status "medium" is a priority value; status must be one of pending, in_progress, '
        "completed, cancelled"
    ]


def test_opencode_tool_part_envelope() -> None:
    part = {
        "type": "tool",
        "tool": "todowrite",
        "state": {"input": {"todos": [{"content": "a", "status": "pending"}]}},
    }
    assert detect(part) == "opencode"


# --- errors ------------------------------------------------------------------


def test_seed_duplicate_key_payload_is_rejected() -> None:
    text = '{"todos":[{"content":"Benchmark 16 speculative tokens","priority":"pending","priority":"high"}]}'
    with pytest.raises(LintError) as e:
        parse(text)
    assert e.value.findings[0] == Finding(
        "error",
        "todos[0]",
        "duplicate-key",
        'duplicate key "priority" (values "pending", "high"); the first was lost',
    )
    assert error_lines(e.value)[1] == 'error: todos[0].status: "status" is missing'
    assert str(e.value).startswith('rejected: todos[0]: duplicate key "priority"')


def test_duplicate_key_inside_hook_stdin_is_rooted_at_tool_input() -> None:
    text = (
        '{"tool_name":"TodoWrite","tool_input":{"todos":[{"content":"a","status":"pending"},'
        '{"content":"b","status":"pending","status":"completed","activeForm":"B"}]}}'
    )
    with pytest.raises(LintError) as e:
        parse(text)
    assert [f.where for f in e.value.findings] == ["todos[1]"]


def test_missing_fields_and_wrong_types() -> None:
    payload = {
        "todos": [
            {"content": "a", "status": "pending"},
            {"status": "pending"},
            "x",
            {"content": 3, "status": 1},
        ]
    }
    with pytest.raises(LintError) as e:
        parse(payload)
    assert error_lines(e.value) == [
        'error: todos[1].content: "content" is missing',
        "error: todos[2]: todos[2] is a string, not an object",
        'error: todos[3].content: "content" must be a string, not a number',
        'error: todos[3].status: "status" must be a string, not a number',
    ]
    assert (
        str(e.value)
        == 'rejected: todos[1].content: "content" is missing (and 3 more: `todoledger lint` lists them)'
    )


def test_explicit_dialect_with_wrong_shape() -> None:
    with pytest.raises(LintError) as e:
        parse({"plan": []}, "gemini")
    assert error_lines(e.value) == ['error: todos: "todos" must be an array of items, got nothing']


def test_unknown_payload_names_every_dialect_tried() -> None:
    with pytest.raises(LedgerError) as e:
        parse({"todos": [{"title": "a"}], "plan": "x"})
    assert str(e.value) == (
        'unknown payload: not opencode (todos[0] has no "content"), claude-code (todos[0] has no "content"), '
        'claude-tasks (has "todos"), codex ("plan" is a string, not an array), '
        'gemini (todos[0] has no "description")'
    )
    assert not isinstance(e.value, LintError)


def test_ambiguous_payload() -> None:
    with pytest.raises(LedgerError) as e:
        parse({"todos": [{"content": "a", "description": "b", "status": "pending"}]})
    assert str(e.value) == (
        "ambiguous payload: it reads differently as opencode and claude-code and gemini; "
        "name the dialect explicitly"
    )
    assert (
        parse({"todos": [{"content": "a", "description": "b", "status": "pending"}]}, "gemini")
        .items[0]
        .content
        == "b"
    )


def test_lone_list_item_is_not_a_task_patch() -> None:
    with pytest.raises(LedgerError) as e:
        parse({"id": "1", "content": "a", "status": "pending"})
    assert 'claude-tasks (has "content")' in str(e.value)


def test_codex_rollout_line_is_unwrapped() -> None:
    line = {
        "timestamp": "2025-09-25T09:50:00Z",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "update_plan", "arguments": '{"plan": []}'},
    }
    pw = parse(line)
    assert (pw.dialect, pw.items) == ("codex", [])


def test_non_object_payloads() -> None:
    for payload, got in (("[1, 2]", "an array"), ("3", "a number"), ("null", "null")):
        with pytest.raises(LedgerError, match=f"^unknown payload: expected a JSON object, got {got}$"):
            parse(payload)


def test_unknown_dialect_and_tool_names() -> None:
    with pytest.raises(LedgerError, match=r'^unknown dialect "claude"; expected auto or one of opencode, '):
        parse({"todos": []}, "claude")
    with pytest.raises(LedgerError, match=r'^"Bash" is not a todo tool; expected one of '):
        parse({"tool_name": "Bash", "tool_input": {"command": "ls"}})
    with pytest.raises(LedgerError, match=r"^the payload is a write_todos call \(gemini\), not codex$"):
        parse({"name": "write_todos", "args": {"todos": []}}, "codex")
    with pytest.raises(LedgerError, match=r'^unknown dialect "x"'):
        render("x", [])


def test_tool_names_cover_every_dialect() -> None:
    assert set(TOOL_DIALECTS.values()) == set(DIALECTS)
    assert TOOL_DIALECTS["TodoWrite"] == "claude-code"
    assert TOOL_DIALECTS["todowrite"] == "opencode"


def test_warnings_do_not_reject() -> None:
    pw = parse({"todos": [{"content": "Launch SGLang with K2.5 base + AQ-MedA...", "status": "pending"}]})
    assert [f.code for f in pw.findings] == ["truncated"]


def test_deeply_nested_dict_payload() -> None:
    deep: Any = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(LedgerError):
        parse({"todos": [{"content": "a", "status": deep}]})


def test_deeply_nested_text_payload() -> None:
    with pytest.raises(LintError, match="nested too deeply"):
        parse('{"todos": ' + "[" * 200_000 + "]" * 200_000 + "}")


# --- limits ------------------------------------------------------------------


def test_ten_megabyte_content_is_refused() -> None:
    # How fast, beside parsing it: bench/bench_limits.py.
    text = json.dumps({"todos": [{"content": "x" * (10 * 1024 * 1024), "status": "pending"}]})
    for payload in (text, text.encode()):
        with pytest.raises(LimitError, match=r"^payload is 10 MB; the limit is 2 MB$"):
            parse(payload)


def test_hundred_thousand_items_are_refused() -> None:
    items = [{"content": f"t{i}", "status": "pending"} for i in range(100_000)]
    with pytest.raises(LimitError, match=r"^payload is 4\.\d MB; the limit is 2 MB$"):
        parse(json.dumps({"todos": items}))
    for dialect in ("auto", "opencode", "claude-code"):
        with pytest.raises(LimitError, match=r"^payload has 100,000 items; the limit is 2,000$"):
            parse({"todos": items}, dialect)
    with pytest.raises(LimitError, match=r"^payload has 100,000 items; the limit is 2,000$"):
        parse(json.dumps({"todos": [{}] * 100_000}))


# --- render ------------------------------------------------------------------

LEDGER_ITEMS: list[dict[str, Any]] = [
    {"id": "a1", "content": "Read", "status": "completed", "priority": "high", "active_form": "Reading"},
    {"id": "a2", "content": "Drop", "status": "cancelled", "priority": None, "active_form": None},
    {"id": "a3", "content": "Fix", "status": "in_progress", "priority": "low", "active_form": None},
]


def test_render_each_dialect() -> None:
    assert render("opencode", LEDGER_ITEMS) == {
        "todos": [
            {"content": "Read", "status": "completed", "priority": "high", "id": "a1"},
            {"content": "Drop", "status": "cancelled", "priority": "medium", "id": "a2"},
            {"content": "Fix", "status": "in_progress", "priority": "low", "id": "a3"},
        ]
    }
    assert render("claude-code", LEDGER_ITEMS) == {
        "todos": [
            {"content": "Read", "status": "completed", "activeForm": "Reading"},
            {"content": "Fix", "status": "in_progress", "activeForm": "Fix"},
        ]
    }
    assert render("codex", LEDGER_ITEMS) == {
        "plan": [{"step": "Read", "status": "completed"}, {"step": "Fix", "status": "in_progress"}]
    }
    assert render("gemini", LEDGER_ITEMS) == {
        "todos": [
            {"description": "Read", "status": "completed"},
            {"description": "Drop", "status": "cancelled"},
            {"description": "Fix", "status": "in_progress"},
        ]
    }
    assert render("claude-tasks", LEDGER_ITEMS) == {
        "tasks": [
            {"id": "a1", "subject": "Read", "status": "completed"},
            {"id": "a3", "subject": "Fix", "status": "in_progress"},
        ]
    }


@pytest.mark.parametrize("dialect", ["opencode", "claude-code", "codex", "gemini"])
def test_render_then_parse_round_trips(dialect: str) -> None:
    open_items = [it for it in LEDGER_ITEMS if it["status"] != "cancelled"]
    pw = parse(render(dialect, open_items), dialect)
    assert [(i.content, i.status) for i in pw.items] == [("Read", "completed"), ("Fix", "in_progress")]


# --- real transcripts ----------------------------------------------------------


def claude_calls(name: str) -> list[dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    for line in (TRANSCRIPTS / name).read_text().splitlines():
        msg = json.loads(line).get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == "TodoWrite"
            ):
                calls[block["id"]] = block
    return list(calls.values())


def codex_calls(name: str) -> list[dict[str, Any]]:
    out = []
    for line in (TRANSCRIPTS / name).read_text().splitlines():
        row = json.loads(line)
        p = row.get("payload")
        if row.get("type") == "response_item" and isinstance(p, dict) and p.get("name") == "update_plan":
            out.append(p)
    return out


def opencode_parts(name: str) -> list[dict[str, Any]]:
    session = json.loads((TRANSCRIPTS / name).read_text())
    return [p for m in session["messages"] for p in m["parts"] if p.get("tool") == "todowrite"]


def test_claude_code_1_0_17_transcript() -> None:
    calls = claude_calls("claude-jsonl__chiphuyen_sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl")
    parsed = [parse(c) for c in calls]
    assert {p.dialect for p in parsed} == {"claude-code"}
    assert [len(p.items) for p in parsed] == [3, 3, 3, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6]
    assert all(i.ext_id and i.priority in ("high", "medium", "low") for p in parsed for i in p.items)
    # Bare inputs carry no tool name: old Claude items read the same as opencode's.
    assert {detect(c["input"]) for c in calls} == {"opencode"}


def test_claude_code_2_0_26_transcript() -> None:
    calls = claude_calls("claude-jsonl__jnarowski_agentcmd__full-session-two.jsonl")
    parsed = [parse(c["input"]) for c in calls]
    assert [(p.dialect, len(p.items)) for p in parsed] == [("claude-code", 2), ("claude-code", 2)]
    assert (
        parsed[0].items[0].active_form == "Modifying CommandMenu.tsx to move Plus button outside search input"
    )
    assert parsed[1].findings == []


def test_codex_0_40_transcript() -> None:
    calls = codex_calls(
        "codex-rollout__jnarowski_agentcmd__rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl"
    )
    for form in (calls, [c["arguments"] for c in calls]):
        parsed = [parse(c) for c in form]
        assert [(p.dialect, len(p.items)) for p in parsed] == [("codex", 3)] * 3
    assert (
        parse(calls[0]).items[0].content
        == "Review repository structure and identify packages/services using Supabase client"
    )


def test_opencode_1_2_5_export() -> None:
    parts = opencode_parts(
        "opencode-export__victoryforphil_dark-factory__session__quiet-meadow__ses_39c0a3da8ffeFQWvKTGUJWivpv.json"
    )
    for form in (parts, [p["state"]["input"] for p in parts]):
        parsed = [parse(p) for p in form]
        assert [(p.dialect, len(p.items)) for p in parsed] == [
            ("opencode", 4),
            ("opencode", 5),
            ("opencode", 2),
        ]
    assert all(i.priority is not None for p in parts for i in parse(p).items)


# --- nothing but LedgerError, whatever comes in -----------------------------------

KEYS = ["todos", "plan", "content", "status", "priority", "id", "step", "description", "subject", "taskId"]
KEYS += ["activeForm", "tool_name", "tool_input", "name", "input", "arguments", "args", "type", "addBlocks"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["pending", "in_progress", "completed", "cancelled", "deleted", "blocked", "high", "TodoWrite"]
    )
    | st.sampled_from(
        ["TaskUpdate", "TaskCreate", "update_plan", "write_todos", "todowrite", "tool_use", "{}"]
    )
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400)
@given(json_values, st.sampled_from(["auto", *DIALECTS]))
def test_parse_raises_only_ledger_errors_on_any_json(value: Any, dialect: str) -> None:
    for payload in (value, json.dumps(value)):
        try:
            pw = parse(payload, dialect)
        except LedgerError:
            continue
        assert pw.dialect in DIALECTS
        assert all(f.level == "warning" for f in pw.findings)


@given(st.binary(max_size=300))
def test_parse_raises_only_ledger_errors_on_any_bytes(data: bytes) -> None:
    try:
        parse(data)
    except LintError as e:
        assert e.findings
    except LedgerError:
        pass


@given(st.text(max_size=300))
def test_read_raises_only_ledger_errors_on_any_text(text: str) -> None:
    try:
        pw = read(text)
    except LedgerError:
        return
    assert pw.dialect in DIALECTS
