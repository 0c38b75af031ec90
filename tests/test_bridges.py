"""Markdown task lists both ways, Claude Code plan mode (ExitPlanMode) and
Codex goals (create_goal/update_goal) into the ledger."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import PUBLIC_TRANSCRIPTS, beside, subprocess_env, todoledger_bin
from todoledger.core import mdfile
from todoledger.core.mdtasks import parse
from todoledger.hooks import run_hook
from todoledger.ingest.importer import import_source
from todoledger.ingest.sources import Source
from todoledger.ledger import Ledger

FIXTURE = PUBLIC_TRANSCRIPTS / "claude-jsonl__jnarowski_agentcmd__full-session-two.jsonl"

KIRO = """# Implementation Plan

- [ ] 1. Set up project structure
  - [x] 1.1 Create folders
    - a detail line, not a task
  - [~] 1.2 Write config
- [ ] 2. Build the parser
  _Requirements: 1.1_

```
- [ ] not a task: inside a code fence
```

## Later
* [-] 3. Old idea
"""


def tl(db: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args], input=stdin, capture_output=True, text=True, env=subprocess_env(db)
    )


# -- Markdown ------------------------------------------------------------------


def test_parse_a_kiro_task_list() -> None:
    items = parse(KIRO)
    shape = [(i.content, i.status, items[i.parent].content if i.parent is not None else None) for i in items]
    assert shape == [
        ("Implementation Plan", "pending", None),
        ("1. Set up project structure", "pending", "Implementation Plan"),
        ("1.1 Create folders", "completed", "1. Set up project structure"),
        ("1.2 Write config", "in_progress", "1. Set up project structure"),
        ("2. Build the parser", "pending", "Implementation Plan"),
        ("Later", "pending", "Implementation Plan"),
        ("3. Old idea", "cancelled", "Later"),
    ]


STATUS = st.sampled_from(["pending", "in_progress", "completed", "cancelled"])
TEXT = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc"), blacklist_characters="<\r\n\x85\u2028\u2029"
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)


@st.composite
def plans(draw: Any) -> list[dict[str, Any]]:
    count = draw(st.integers(0, 12))
    items: list[dict[str, Any]] = []
    for n in range(count):
        parent = draw(st.sampled_from([None, *[it["id"] for it in items]]))
        content = draw(TEXT | TEXT.map(lambda t: t + "\nsecond line"))
        items.append({"id": f"i{n:02d}", "content": content, "status": draw(STATUS), "parent": parent})
    # Plan order: children after their parent, as render walks them.
    return items


@given(plans())
@settings(max_examples=150, deadline=None)
def test_render_then_parse_gives_the_same_items(items: list[dict[str, Any]]) -> None:
    """A plan from no file, exported with --ids, reads back as the same items."""
    text = mdfile.render_plain(items, ids=True)
    back = mdfile.parse(text).tasks
    by_id = {it["id"]: it for it in items}
    assert sorted(i.id for i in back if i.id) == sorted(by_id)
    for item in back:
        want = by_id[str(item.id)]
        assert item.content == want["content"]
        assert item.status == want["status"]
        assert (back[item.parent].id if item.parent is not None else None) == want["parent"]


def test_import_export_round_trip_changes_nothing(ledger_env: Path, tmp_path: Path) -> None:
    source = tmp_path / "tasks.md"
    source.write_text(KIRO)
    first = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert first.returncode == 0, first.stderr
    # The tasks (headings are not items; the detail lines are their notes).
    assert first.stdout == "imported 5 items into 'main': 5 added, 0 changed\n"
    exported = tl(ledger_env, "export", "--format", "markdown").stdout
    assert exported == KIRO  # the file as it was
    with Ledger(ledger_env) as lg:
        lg.update(lg.items()[1]["id"], priority="high")  # what Markdown does not carry
        revision = lg.show()["revision"]
    (tmp_path / "out.md").write_text(exported)
    again = tl(ledger_env, "import", "--format", "markdown", str(tmp_path / "out.md"), "--json")
    assert json.loads(again.stdout)["added"] == 0 and json.loads(again.stdout)["changed"] == 0
    with Ledger(ledger_env) as lg:
        assert lg.show()["revision"] == revision
        assert lg.items()[1]["priority"] == "high"
    assert tl(ledger_env, "export", "--format", "markdown").stdout == exported


def test_a_ticked_box_in_the_file_completes_the_item(ledger_env: Path, tmp_path: Path) -> None:
    source = tmp_path / "tasks.md"
    source.write_text("- [ ] Write it\n- [ ] Ship it\n")
    tl(ledger_env, "import", "--format", "markdown", str(source))
    exported = tl(ledger_env, "export", "--format", "markdown").stdout
    source.write_text(exported.replace("- [ ] Write it", "- [x] Write it"))
    out = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert out.stdout == "imported 2 items into 'main': 0 added, 1 changed\n"
    with Ledger(ledger_env) as lg:
        assert [(i["content"], i["status"]) for i in lg.items()] == [
            ("Write it", "completed"),
            ("Ship it", "pending"),
        ]


def test_bad_markdown_changes_nothing(ledger_env: Path, tmp_path: Path) -> None:
    source = tmp_path / "notes.md"
    source.write_text("# Notes\n\nNo tasks here.\n")
    out = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "Error: no task list found: expected lines like `- [ ] text` or `- [x] text`"
    ]
    # A file that moves a sub-item to the top level is refused as a whole.
    source.write_text("- [ ] Phase\n  - [ ] Step\n")
    tl(ledger_env, "import", "--format", "markdown", str(source))
    exported = tl(ledger_env, "export", "--format", "markdown").stdout
    with Ledger(ledger_env) as lg:
        revision = lg.show()["revision"]
    source.write_text(exported.replace("  - [ ] Step", "- [x] Step").replace("- [ ] Phase", "- [x] Phase"))
    out = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert out.returncode == 1 and "put it back under its parent" in out.stderr
    with Ledger(ledger_env) as lg:
        assert lg.show()["revision"] == revision
        assert {i["status"] for i in lg.items()} == {"pending"}  # the Phase tick was not kept either


# -- Claude Code plan mode -------------------------------------------------------

PLAN = """# Move the plus button

## Changes to CommandMenu.tsx
- [ ] Remove the Plus button from the search input
- [ ] Put it next to the input

## Changes to App.tsx
- [ ] Update the header layout
"""


def claude(event: dict[str, Any]) -> str:
    out = io.StringIO()
    assert run_hook(["claude-code"], stdin=io.BytesIO(json.dumps(event).encode()), stdout=out) == 0
    return out.getvalue()


def exit_plan(plan: str, session: str = "s1") -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan},
        "tool_response": {"plan": plan},
    }


def test_an_approved_plan_becomes_a_plan_revision(ledger_env: Path) -> None:
    claude(exit_plan(PLAN))
    with Ledger(ledger_env) as lg:
        items = lg.items()
        revision = lg.show()["revision"]
    by_id = {i["id"]: i for i in items}
    tree = [(i["content"], by_id[i["parent"]]["content"] if i["parent"] else None) for i in items]
    assert sorted(tree, key=str) == sorted(
        [
            ("Move the plus button", None),
            ("Changes to CommandMenu.tsx", "Move the plus button"),
            ("Changes to App.tsx", "Move the plus button"),
            ("Remove the Plus button from the search input", "Changes to CommandMenu.tsx"),
            ("Put it next to the input", "Changes to CommandMenu.tsx"),
            ("Update the header layout", "Changes to App.tsx"),
        ],
        key=str,
    )
    root = next(i for i in items if not i["parent"])
    assert root["notes"].startswith("Approved by the user in Claude Code plan mode")
    assert root["notes"].endswith(PLAN)  # the approval with the plan text it approved
    claude(exit_plan(PLAN))  # the same approval again changes nothing
    # The session's own TodoWrite list is another writer: it does not drop the approved plan.
    todo = {"todos": [{"content": "Do it", "status": "in_progress", "activeForm": "Doing it"}]}
    claude(
        {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "TodoWrite", "tool_input": todo}
    )
    with Ledger(ledger_env) as lg:
        assert {i["status"] for i in lg.items() if i["content"] != "Do it"} == {"pending"}
        assert lg.show()["revision"] == revision + 1


def test_a_plan_without_checkboxes_takes_its_list_lines(ledger_env: Path) -> None:
    plan = "Move the button.\n\n**Changes to CommandMenu.tsx:**\n1. Remove it\n2. Re-add it\n"
    claude(exit_plan(plan))
    with Ledger(ledger_env) as lg:
        contents = [i["content"] for i in lg.items()]
    assert sorted(contents) == sorted(
        ["Plan approved in Claude Code plan mode", "Changes to CommandMenu.tsx", "Remove it", "Re-add it"]
    )


def test_a_bad_plan_event_never_breaks_the_agent(ledger_env: Path) -> None:
    assert claude({"hook_event_name": "PostToolUse", "tool_name": "ExitPlanMode", "tool_input": 3}) == ""
    if isinstance(ledger_env, Path):
        assert not ledger_env.exists()
    else:
        with Ledger(ledger_env) as lg:
            assert lg.plans() == []
    assert "no plan text" in (beside(ledger_env) / "hook.log").read_text()


def test_plan_mode_in_a_real_transcript(ledger_env: Path) -> None:
    """The fixture's first ExitPlanMode was rejected by the user, the second approved."""
    from todoledger.ingest.importer import IngestResult

    with Ledger(ledger_env) as lg:
        import_source(lg, Source(FIXTURE.name, "claude", FIXTURE, FIXTURE.stat().st_size), IngestResult())
        (plan,) = [p["plan"] for p in lg.plans()]
        items = lg.items(plan)
    root = next(i for i in items if i["content"] == "Plan approved in Claude Code plan mode")
    assert "Remove the `pr-24` padding" in root["notes"]
    assert "positioned to the right of the ⌘J keyboard shortcut" not in root["notes"]  # the rejected one
    children = [i["content"] for i in items if i["parent"] == root["id"]]
    assert children == ["Changes to CommandMenu.tsx", "Changes to AppInnerSidebar.tsx"]
    assert {i["status"] for i in items if i["parent"] == root["id"]} == {"pending"}


# -- Codex goals -------------------------------------------------------------------
# Built from codex-rs/core/src/tools/handlers/goal_spec.rs: no real rollout with a
# goal call was available.


def rollout_line(n: int, payload: dict[str, Any]) -> str:
    return json.dumps(
        {"timestamp": f"2026-11-01T10:{n:02d}:00Z", "type": "response_item", "payload": payload}
    )


def goal_call(n: int, name: str, args: dict[str, Any]) -> str:
    return rollout_line(
        n, {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": f"call_{n}"}
    )


def output(n: int, text: str) -> str:
    return rollout_line(n, {"type": "function_call_output", "call_id": f"call_{n}", "output": text})


META = json.dumps(
    {
        "timestamp": "2026-11-01T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": "0199goal", "cwd": "/src/app"},
    }
)


def codex(event: dict[str, Any]) -> str:
    out = io.StringIO()
    assert run_hook(["codex"], stdin=io.BytesIO(json.dumps(event).encode()), stdout=out) == 0
    return out.getvalue()


def test_codex_goals_become_goal_items(ledger_env: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    lines = [
        META,
        goal_call(1, "create_goal", {"objective": "All tests pass on CI", "token_budget": 50000}),
        output(1, '{"goal": {"objective": "All tests pass on CI", "status": "active"}}'),
    ]
    rollout.write_text("\n".join(lines) + "\n")
    stop = {"hook_event_name": "Stop", "session_id": "0199goal", "transcript_path": str(rollout)}
    codex(stop)
    with Ledger(ledger_env) as lg:
        (goal,) = lg.items()
    assert goal["content"] == "All tests pass on CI" and goal["status"] == "in_progress"
    assert "Done when: the objective is achieved and no required work remains" in goal["notes"]
    assert "Token budget: 50000." in goal["notes"]

    lines += [goal_call(2, "update_goal", {"status": "blocked"}), output(2, '{"goal": {}}')]
    lines += [goal_call(3, "update_goal", {"status": "complete"}), output(3, '{"goal": {}}')]
    rollout.write_text("\n".join(lines) + "\n")
    codex(stop)
    codex(stop)  # read again: nothing new
    with Ledger(ledger_env) as lg:
        (goal,) = lg.items()
        history = lg.history()
    assert goal["status"] == "completed"
    assert goal["evidence"] == "Codex update_goal status=complete (the agent's own completion audit)"
    assert "Blocked: Codex update_goal status=blocked" in goal["notes"]
    assert [e["writer"] for e in history if e["field"] == "status" and e["new"] == "completed"] == [
        "codex:0199goal:goal"
    ]


def test_a_refused_update_goal_changes_nothing(ledger_env: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    lines = [
        META,
        goal_call(1, "update_goal", {"status": "complete"}),
        output(1, "unsupported call: update_goal"),
    ]
    rollout.write_text("\n".join(lines) + "\n")
    codex({"hook_event_name": "Stop", "session_id": "0199goal", "transcript_path": str(rollout)})
    with Ledger(ledger_env) as lg:
        assert lg.items() == []


def test_ticking_a_phase_its_steps_and_what_waits_for_it_in_one_file(
    ledger_env: Path, tmp_path: Path
) -> None:
    source = tmp_path / "plan.md"
    source.write_text("- [ ] Phase\n  - [ ] Step\n- [ ] After\n")
    assert tl(ledger_env, "import", "--format", "markdown", str(source)).returncode == 0
    with Ledger(ledger_env) as lg:
        ids = {i["content"]: i["id"] for i in lg.items()}
        lg.dep_add(ids["After"], ids["Phase"])
    exported = tl(ledger_env, "export", "--format", "markdown").stdout
    # The phase ticked while its step stays open: refused as a whole, saying why.
    source.write_text(exported.replace("- [ ] Phase", "- [x] Phase"))
    out = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert out.returncode == 1 and "work below it is still open" in out.stderr
    with Ledger(ledger_env) as lg:
        assert {i["status"] for i in lg.items()} == {"pending"}
    # Everything ticked: the file lists the phase first and what waits for it last,
    # and the ledger takes the step, then the phase, then what waited: nothing forced.
    source.write_text(exported.replace("[ ]", "[x]"))
    out = tl(ledger_env, "import", "--format", "markdown", str(source))
    assert out.returncode == 0, out.stderr
    with Ledger(ledger_env) as lg:
        assert {i["status"] for i in lg.items()} == {"completed"}
        assert not [e for e in lg.history() if e["field"] == "forced"]
