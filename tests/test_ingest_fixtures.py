"""The real transcripts in tests/data/transcripts/public: exact call counts and final
states, computed here with a plain json scan, independently of the importer."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import PUBLIC_TRANSCRIPTS
from todoledger.cli.main import cli

FIXTURES = PUBLIC_TRANSCRIPTS

CLAUDE = "claude-jsonl__chiphuyen_sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
CLAUDE2 = "claude-jsonl__jnarowski_agentcmd__full-session-two.jsonl"
CODEX = "codex-rollout__jnarowski_agentcmd__rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl"
OPENCODE = (
    "opencode-export__victoryforphil_dark-factory__session__quiet-meadow__ses_39c0a3da8ffeFQWvKTGUJWivpv.json"
)


def scan_lists(name: str) -> list[list[tuple[str, str]]]:
    """Every todo call's whole list as (text, status), by a plain scan of the file."""
    path = FIXTURES / name
    lists: list[list[tuple[str, str]]] = []
    if name.startswith("opencode"):
        doc = json.loads(path.read_text())
        for message in doc["messages"]:
            for part in message["parts"]:
                if part.get("tool") == "todowrite":
                    lists.append([(t["content"], t["status"]) for t in part["state"]["input"]["todos"]])
        return lists
    seen: set[str] = set()
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d.get("type") == "response_item" and d["payload"].get("name") == "update_plan":
            plan = json.loads(d["payload"]["arguments"])["plan"]
            lists.append([(s["step"], s["status"]) for s in plan])
        content = (d.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if (
                block.get("type") == "tool_use"
                and block.get("name") == "TodoWrite"
                and block["id"] not in seen
            ):
                seen.add(block["id"])
                lists.append([(t["content"], t["status"]) for t in block["input"]["todos"]])
    return lists


def expected_final(lists: list[list[tuple[str, str]]]) -> dict[str, int]:
    """The ledger's documented semantics: each list replaces the last; an item
    left out while open is cancelled, finished ones stay finished."""
    state: dict[str, str] = {}
    for todos in lists:
        listed = {text for text, _ in todos}
        for text, status in state.items():
            if text not in listed and status in ("pending", "in_progress"):
                state[text] = "cancelled"
        state.update(todos)
    return dict(sorted(Counter(state.values()).items()))


def ingest_json(*paths: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["ingest", "--json", *paths])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


# CLAUDE2 also holds two ExitPlanMode calls (todoledger.ingest.bridges): the user
# rejected the first plan and approved the second, whose 7 lines (2 headings, 5
# steps) become pending items under one plan item (8 in all).
PLAN_MODE = {CLAUDE2: (2, 1, {"pending": 8})}

CASES = [
    (CLAUDE, 13, "ai-music/d3ad4cdc", "claude"),
    (CLAUDE2, 2, "agent-workflows-monorepo-v2/8a2518dd", "claude"),
    (CODEX, 3, "spectora-labs-monorepo-v2/01998190", "codex"),
    (OPENCODE, 3, "dark-factory/39c0a3da", "opencode-export"),
]


@pytest.mark.parametrize(("name", "calls", "plan", "fmt"), CASES)
def test_real_transcript_call_count(name: str, calls: int, plan: str, fmt: str) -> None:
    assert len(scan_lists(name)) == calls  # the manifest's count, by the plain scan
    (row,) = ingest_json(str(FIXTURES / name))
    plans, approved, _ = PLAN_MODE.get(name, (0, 0, {}))
    assert (row["plan"], row["format"], row["calls"], row["written"], row["refused"]) == (
        plan,
        fmt,
        calls + plans,
        calls + approved,
        0,
    )


FINAL = [CLAUDE, CLAUDE2, CODEX, OPENCODE]
MANIFEST_ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{40}) \|$", re.MULTILINE)


def test_the_vendored_transcripts_are_the_manifests_blobs() -> None:
    """Every file MANIFEST.md lists is there, byte for byte the git blob it names
    in its source repository, and nothing else is: a lost or edited copy fails here."""
    rows = dict(MANIFEST_ROW.findall((FIXTURES / "MANIFEST.md").read_text("utf-8")))
    assert sorted(rows) == sorted(FINAL)
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted([*rows, "MANIFEST.md"])
    for name, blob in rows.items():
        data = (FIXTURES / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest() == blob, name


@pytest.mark.parametrize("name", FINAL)
def test_real_transcript_final_state(name: str) -> None:
    want = Counter(expected_final(scan_lists(name)))
    want.update(PLAN_MODE.get(name, (0, 0, {}))[2])
    (row,) = ingest_json(str(FIXTURES / name))
    assert row["final"] == want
    assert row["items"] == sum(want.values())


def test_concrete_final_states() -> None:
    """The same, spelled out, so a wrong scan cannot hide a wrong import."""
    rows = {r["plan"]: r["final"] for r in ingest_json(str(FIXTURES))}
    assert rows["spectora-labs-monorepo-v2/01998190"] == {"completed": 2, "in_progress": 1}
    assert rows["dark-factory/39c0a3da"] == {"completed": 6}
    assert rows["agent-workflows-monorepo-v2/8a2518dd"] == {"completed": 2, "pending": 8}


def shifted_copies(folder: Path) -> Path:
    """Every fixture again, its calls on other lines: one more line after the first
    (which names the session in a rollout); a JSON document is re-indented."""
    folder.mkdir()
    for path in sorted(FIXTURES.glob("*.json*")):
        raw = path.read_bytes()
        if path.suffix == ".jsonl":
            first, rest = raw.split(b"\n", 1)
            raw = first + b"\n{}\n" + rest
        else:
            raw = json.dumps(json.loads(raw), indent=1).encode()
        (folder / path.name).write_bytes(raw)
    return folder


def test_importing_twice_changes_nothing(ledger_env: Path, tmp_path: Path) -> None:
    from todoledger.ledger import Ledger

    first = ingest_json(str(FIXTURES))
    with Ledger(ledger_env) as lg:
        before = {p["plan"]: (p["revision"], len(lg.history(p["plan"]))) for p in lg.plans()}
    second = ingest_json(str(FIXTURES))
    # An older copy of a transcript holds the same calls on other lines.
    third = ingest_json(str(shifted_copies(tmp_path / "shifted")))
    with Ledger(ledger_env) as lg:
        after = {p["plan"]: (p["revision"], len(lg.history(p["plan"]))) for p in lg.plans()}
    assert before == after
    assert [r["written"] for r in second] == [0, 0, 0, 0]
    assert [(r["plan"], r["written"]) for r in third] == [(r["plan"], 0) for r in first]
    assert [r["final"] for r in second] == [r["final"] for r in third] == [r["final"] for r in first]


def test_provenance_cites_transcript_lines(ledger_env: Path) -> None:
    from todoledger.ledger import Ledger

    ingest_json(str(FIXTURES / CODEX))
    with Ledger(ledger_env) as lg:
        ops = lg.ops("spectora-labs-monorepo-v2/01998190")
    assert [o["source_at"] for o in ops] == ["L9", "L254", "L434"]
    assert all(o["source_key"].startswith("codex:01998190-fba6-7f40-9309-dc4e48c5844a:call_") for o in ops)


def test_report_of_a_real_session_tells_the_story(ledger_env: Path) -> None:
    ingest_json(str(FIXTURES / OPENCODE))
    result = CliRunner().invoke(cli, ["report", "dark-factory/39c0a3da"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "3 todo calls by opencode:ses\\_39c0a3da8ffeFQWvKTGUJWivpv" in text  # Markdown-escaped
    assert "Final state: 6 completed." in text
    # Three items were ticked off in one call without being started, one was added already done.
    assert text.count("went pending → completed") == 3
    assert '"Simplify AGENTS.md to current validated context only" was added already completed' in text
    assert "msg\\_c63f71d1a001NgcX20p1zaxWRF/prt\\_c63f74c1e0014BUHqEOcCVKLG2" in text
