"""The Stop gate's reading of todoledger's MCP replies from the agents' own
transcripts (hooks/mcp_replies.py), on what the real agents wrote.

tests/data/transcripts/ holds whole transcripts that the real agents wrote in
tests/e2e/test_agents.py's Stop-gate runs: Codex 0.171.0's rollout (a
plan_update refused by its gate, then a todowrite that reports the item
completed), Gemini CLI 0.61.0's chat file (a forced plan_update refused for
want of a reason, then accepted with one) and Claude Code 2.1.332's JSONL (a
todowrite that reports the item completed; its lines over 10 KB, attachments
and request shapes holding no tool call, left out). Variants below are made
from those real lines: an error flag set, lines left out, garbage and a cut
line added, the file made huge.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env
from tests.test_stop_gate import hook, stop
from todoledger import Ledger
from todoledger.hooks import mcp_replies
from todoledger.hooks.mcp_replies import MAX_TRANSCRIPT_BYTES, completions, tool_of

DATA = Path(__file__).parent / "data" / "transcripts"
CODEX = DATA / "codex-0.171.0-rollout-mcp-stop-gate.jsonl"
CODEX_ITEM = "71t80w"  # what its todowrite reported completed
GEMINI = DATA / "gemini-0.61.0-chat-mcp-after-agent.jsonl"
GEMINI_ITEM = "6kpv1k"  # what its second plan_update completed
CLAUDE = DATA / "claude-code-2.1.332-mcp-stop-gate.jsonl"
CLAUDE_ITEM = "0w3nvz"  # what its todowrite reported completed


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def write(path: Path, records: list[Any]) -> str:
    # Compact, as the agents write it (a marker never relies on it: see the spaced variant below).
    path.write_bytes(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records))
    return str(path)


def codex_kind(record: dict[str, Any]) -> str:
    payload: dict[str, Any] = record.get("payload") or {}
    item: dict[str, Any] = payload["item"] if isinstance(payload.get("item"), dict) else {}
    return f"{payload.get('type')}:{item.get('type', '')}"


# --- the real transcripts ------------------------------------------------------
def test_codex_rollout_gives_the_todowrite_completion_not_the_refused_plan_update() -> None:
    assert completions("codex", str(CODEX)) == {CODEX_ITEM}


def test_gemini_chat_gives_the_accepted_plan_update_not_the_refused_one() -> None:
    assert completions("gemini", str(GEMINI)) == {GEMINI_ITEM}


def test_each_reader_reads_only_its_own_agents_transcript() -> None:
    assert completions("claude-code", str(CODEX)) == set()
    assert completions("gemini", str(CODEX)) == set()
    assert completions("codex", str(GEMINI)) == set()
    assert completions("opencode", str(CODEX)) == set()  # no Stop hook, no reader


@pytest.mark.parametrize(
    "kept",
    [
        # Codex versions that do not write the item_completed event: the call and its output.
        {"response_item"},
        # The event alone (its McpToolCall item carries server, tool and reply).
        {"event_msg"},
    ],
)
def test_codex_either_record_of_the_call_is_enough(tmp_path: Path, kept: set[str]) -> None:
    records = [r for r in lines(CODEX) if r["type"] in kept or r["type"] == "session_meta"]
    assert completions("codex", write(tmp_path / "r.jsonl", records)) == {CODEX_ITEM}
    spaced = tmp_path / "spaced.jsonl"  # the same records as another JSON writer would space them
    spaced.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert completions("codex", str(spaced)) == {CODEX_ITEM}


def test_codex_older_names_and_envelopes(tmp_path: Path) -> None:
    """Before namespaces Codex named the call mcp__todoledger__todowrite; before
    the {timestamp, type, payload} envelope the items stood at top level."""
    records = []
    for r in lines(CODEX):
        if r["type"] != "response_item" or r["payload"]["type"] not in (
            "function_call",
            "function_call_output",
        ):
            continue
        payload = dict(r["payload"])
        if payload["type"] == "function_call":
            payload["name"] = f"{payload.pop('namespace')}__{payload['name']}"
        records.append(payload)
    assert [p["name"] for p in records if p["type"] == "function_call"] == [
        "mcp__todoledger__plan_update",
        "mcp__todoledger__todowrite",
    ]
    assert completions("codex", write(tmp_path / "r.jsonl", records)) == {CODEX_ITEM}


def test_codex_a_failed_reply_counts_nothing(tmp_path: Path) -> None:
    """The same todowrite reply, flagged as an error: as the event (isError), and
    as an output object with success false; it completes nothing."""
    records = []
    for r in lines(CODEX):
        if codex_kind(r) == "item_completed:McpToolCall":
            r["payload"]["item"]["result"]["isError"] = True
        elif r["type"] == "response_item" and r["payload"]["type"] == "function_call_output":
            r["payload"]["output"] = {"content": r["payload"]["output"], "success": False}
        records.append(r)
    assert completions("codex", write(tmp_path / "r.jsonl", records)) == set()
    status_failed = [r for r in lines(CODEX) if r["type"] == "event_msg"]
    for r in status_failed:
        if codex_kind(r) == "item_completed:McpToolCall":
            r["payload"]["item"]["status"] = "failed"
    assert completions("codex", write(tmp_path / "s.jsonl", status_failed)) == set()


def test_codex_another_servers_tool_of_the_same_name_counts_nothing(tmp_path: Path) -> None:
    records = []
    for r in lines(CODEX):
        if codex_kind(r) == "item_completed:McpToolCall":
            r["payload"]["item"]["server"] = "other"
        elif r["type"] == "response_item" and r["payload"].get("namespace") == "mcp__todoledger":
            r["payload"]["namespace"] = "mcp__other"
        records.append(r)
    assert completions("codex", write(tmp_path / "r.jsonl", records)) == set()


def test_gemini_a_failed_call_counts_nothing(tmp_path: Path) -> None:
    records = lines(GEMINI)
    for r in records:
        for tc in r.get("toolCalls") or []:
            tc["status"] = "error"
    assert completions("gemini", write(tmp_path / "c.jsonl", records)) == set()


def test_gemini_reads_the_reply_the_model_got_and_checkpoints(tmp_path: Path) -> None:
    """Without resultDisplay the reply is the functionResponse's output (inside
    <untrusted_context>); a `$set` checkpoint of all messages counts too."""
    messages = []
    for r in lines(GEMINI):
        for tc in r.get("toolCalls") or []:
            tc.pop("resultDisplay", None)
        if "toolCalls" in r:
            messages.append(r)
    path = write(tmp_path / "c.jsonl", [{"$set": {"messages": messages}}])
    assert completions("gemini", path) == {GEMINI_ITEM}


def test_gemini_older_single_document_chat_file(tmp_path: Path) -> None:
    records = lines(GEMINI)
    document = {"sessionId": records[0]["sessionId"], "messages": [r for r in records if "type" in r]}
    path = tmp_path / "session-2026-12-01T17-10-a4e49b1c.json"
    path.write_text(json.dumps(document, indent=2))
    assert completions("gemini", str(path)) == {GEMINI_ITEM}
    path.write_text(json.dumps(document, indent=2)[:-200])  # cut short: not a document
    assert completions("gemini", str(path)) == set()


def test_claude_code_jsonl_and_a_failed_reply(tmp_path: Path) -> None:
    assert completions("claude-code", str(CLAUDE)) == {CLAUDE_ITEM}
    records = lines(CLAUDE)
    for r in records:
        content = (r.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                block["is_error"] = True
    assert completions("claude-code", write(tmp_path / "c.jsonl", records)) == set()


# --- broken and huge files -------------------------------------------------------
GARBAGE = [
    b'{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"McpToolCall","server":"todoledger"\n',
    b"\xff\xfe mcp__todoledger mcp_todoledger_ todoledger__ \x00\n",
    b'["mcp__todoledger", "mcp_todoledger_x", "todoledger__"]\n',
    b'{"payload": "mcp__todoledger", "toolCalls": "mcp_todoledger_", "message": "todoledger__"}\n',
    b"[" * 100_000 + b'"mcp__todoledger mcp_todoledger_ todoledger__"\n',  # nested past the parser's depth
]


@pytest.mark.parametrize(
    ("agent", "path", "item"),
    [("codex", CODEX, CODEX_ITEM), ("gemini", GEMINI, GEMINI_ITEM), ("claude-code", CLAUDE, CLAUDE_ITEM)],
)
def test_garbage_and_a_cut_last_line_are_passed_over(
    tmp_path: Path, agent: str, path: Path, item: str
) -> None:
    real = path.read_bytes()
    body = b"".join(GARBAGE) + real + b"".join(GARBAGE) + real[: len(real) // 2]  # ends mid-line
    target = tmp_path / "t.jsonl"
    target.write_bytes(body)
    assert completions(agent, str(target)) == {item}
    target.write_bytes(b"".join(GARBAGE))
    assert completions(agent, str(target)) == set()


def test_an_unreadable_transcript_gives_nothing(tmp_path: Path) -> None:
    assert completions("codex", str(tmp_path / "missing.jsonl")) == set()
    assert completions("gemini", str(tmp_path)) == set()  # a folder


def test_a_huge_transcript_is_read_from_its_last_64_mb(tmp_path: Path) -> None:
    """Over the bound only the tail is read: a completion at the end is found, one
    at the start (more than 64 MB back) is not; the cut line at the boundary is
    passed over."""
    filler = (
        json.dumps({"type": "response_item", "payload": {"type": "reasoning", "text": "x" * 1000}}) + "\n"
    ).encode()
    count = MAX_TRANSCRIPT_BYTES // len(filler) + 10
    real = CODEX.read_bytes()
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.write(filler * count)
        fh.write(real)
    assert os.path.getsize(path) > MAX_TRANSCRIPT_BYTES
    assert completions("codex", str(path)) == {CODEX_ITEM}
    with path.open("wb") as fh:
        fh.write(real)
        fh.write(filler * count)
    assert completions("codex", str(path)) == set()


def test_one_huge_line_is_bounded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A single line bigger than the bound (no newline in the last 64 MB) is never
    read whole; the reader finds nothing rather than holding it all."""
    monkeypatch.setattr(mcp_replies, "MAX_TRANSCRIPT_BYTES", 1 << 20)
    path = tmp_path / "one-line.jsonl"
    path.write_bytes(CODEX.read_bytes() + b'{"x":"' + b"mcp__todoledger " * (1 << 17) + b'"}\n')
    assert completions("codex", str(path)) == set()


# --- names and replies -------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "namespace", "tool"),
    [
        ("mcp__todoledger__todowrite", None, "todowrite"),  # Claude Code, Codex before namespaces
        ("plan_update", "mcp__todoledger", "plan_update"),  # Codex 0.17x
        ("mcp_todoledger_plan_update", None, "plan_update"),  # Gemini CLI
        ("todoledger__todowrite", None, "todowrite"),  # Gemini CLI before mcp_ names
        ("mcp__todoledger__todoread", None, None),  # reads complete nothing
        ("todowrite", None, None),  # opencode's native tool, or anyone's
        ("mcp__other__todowrite", None, None),
        ("todowrite", "mcp__other", None),
        (None, None, None),
    ],
)
def test_tool_names(name: Any, namespace: Any, tool: str | None) -> None:
    assert tool_of(name, namespace) == tool


# --- through the hook ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("agent", "path", "item", "event", "decision"),
    [
        ("codex", CODEX, CODEX_ITEM, "Stop", "block"),
        ("gemini", GEMINI, GEMINI_ITEM, "AfterAgent", "deny"),
        ("claude-code", CLAUDE, CLAUDE_ITEM, "Stop", "block"),
    ],
)
def test_the_hook_blocks_on_what_the_real_transcript_completed(
    ledger_env: Path, agent: str, path: Path, item: str, event: str, decision: str
) -> None:
    """The real transcript's completion, written by the MCP server (whose writer
    names no session), blocks that agent's stop with the gate's output."""
    env = subprocess_env(ledger_env)
    with Ledger() as lg:
        lg.import_jsonl([json.dumps({"id": item, "content": "Verify disk", "status": "pending"})])
        lg.add_check(item, "cmd:false")
        lg.update(item, status="completed", writer="mcp:x:1", force=True, force_reason="seed")
    answer = json.loads(hook(env, {**stop("s1", name=event), "transcript_path": str(path)}, agent=agent))
    assert answer["decision"] == decision
    assert (
        f"- {item} Verify disk (failed)" in answer["reason"]
        and "gate cmd:false: fails (1)" in answer["reason"]
    )
    # Another session of the same agent, whose transcript completed nothing, may stop.
    assert hook(env, {**stop("s2", name=event), "transcript_path": str(DATA)}, agent=agent) == ""


@pytest.mark.parametrize(
    ("command", "ids"),
    [
        ('/a/todoledger done x1 --evidence "checked, by hand"', ["x1"]),
        ("todoledger done --evidence 'a b' --plan p x2 && todoledger done x3", ["x2", "x3"]),
        ("'/a b/todoledger' done --json x4", ["x4"]),
        ("todoledger show --json; echo done x5", []),
        ("todoledger-e2e done x6", []),
        ('todoledger done "unclosed', []),
    ],
)
def test_shell_done_reads_the_ids_of_todoledger_done(command: str, ids: list[str]) -> None:
    from todoledger.hooks.mcp_replies import shell_done

    assert shell_done(command) == ids
