"""Markdown task files through the ledger and back (`import`/`export --format
markdown`): a real Kiro tasks.md byte for byte, details as notes, headings as
headings, no id comments unless asked or already there, and a re-import of an
edited file that updates its items instead of adding new ones."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.core.mdfile import parse
from todoledger.ledger import Ledger

DATA = Path(__file__).resolve().parent / "data" / "kiro"
REAL = DATA / "spirit-of-kiro__player-trail-effect__tasks.md"  # Kiro's own output (MANIFEST.md)
WRITTEN = DATA / "written__tasks.md"  # written for these tests, labelled so in MANIFEST.md


def tl(db: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([todoledger_bin(), *args], input=stdin, capture_output=True, env=subprocess_env(db))


def export(db: Path, *flags: str) -> bytes:
    out = tl(db, "export", "--format", "markdown", *flags)
    assert out.returncode == 0, out.stderr
    return out.stdout


def items(db: Path) -> list[dict[str, Any]]:
    with Ledger(db) as lg:
        return lg.items()


@pytest.mark.parametrize("source", [REAL, WRITTEN], ids=["kiro", "written"])
def test_a_kiro_tasks_file_round_trips_byte_for_byte(ledger_env: Path, source: Path, tmp_path: Path) -> None:
    out = tl(ledger_env, "import", "--format", "markdown", str(source), "--json")
    assert out.returncode == 0, out.stderr
    assert export(ledger_env) == source.read_bytes()
    # And again: importing the export changes nothing.
    copy = tmp_path / "tasks.md"
    copy.write_bytes(export(ledger_env))
    again = json.loads(tl(ledger_env, "import", "--format", "markdown", str(copy), "--json").stdout)
    assert (again["added"], again["changed"]) == (0, 0)
    assert export(ledger_env) == source.read_bytes()


def test_details_become_notes_and_headings_stay_headings(ledger_env: Path) -> None:
    tl(ledger_env, "import", "--format", "markdown", str(WRITTEN))
    rows = {i["content"]: i for i in items(ledger_env)}
    assert "Implementation Plan" not in rows and not any(c.startswith("Phase") for c in rows)
    assert sorted(rows) == [
        "1. Set up the ledger folder",
        "2. Write the migration",
        "2.1 Add the table",
        "2.2 Write a property test for the migration",
        "3. Export writes the file back",
        "4. Checkpoint - ensure all tests pass, ask the user if questions arise.",
    ]
    assert rows["1. Set up the ledger folder"]["notes"] == (
        "- Create `.todoledger/` on the first write\n- _Requirements: 1.1, 1.2_"
    )
    # A blank line between two details is part of the notes; the fence after the list is not.
    assert rows["2.1 Add the table"]["notes"] == (
        "- One row per plan\n\n- The layout as JSON text\n- _Requirements: 2.1_"
    )
    assert rows["2.1 Add the table"]["parent"] == rows["2. Write the migration"]["id"]
    assert rows["4. Checkpoint - ensure all tests pass, ask the user if questions arise."]["notes"] is None
    # Kiro's `[-]` is "in progress" (a Kiro file: `_Requirements:` details), not cancelled.
    assert rows["2. Write the migration"]["status"] == "in_progress"
    assert rows["1. Set up the ledger folder"]["status"] == "completed"


def test_no_id_comments_unless_asked_or_already_there(ledger_env: Path, tmp_path: Path) -> None:
    tl(ledger_env, "import", "--format", "markdown", str(REAL))
    assert b"<!--" not in export(ledger_env)
    with_ids = export(ledger_env, "--ids")
    ids = [i["id"] for i in items(ledger_env)]
    assert all(f"<!-- id:{i} -->".encode() in with_ids for i in ids)
    # A file that has them keeps them, also without --ids.
    marked = tmp_path / "marked.md"
    marked.write_bytes(with_ids)
    again = json.loads(tl(ledger_env, "import", "--format", "markdown", str(marked), "--json").stdout)
    assert again["added"] == 0
    assert export(ledger_env) == with_ids


def test_an_edited_file_updates_its_items_instead_of_adding(ledger_env: Path, tmp_path: Path) -> None:
    tl(ledger_env, "import", "--format", "markdown", str(REAL))
    before = {i["content"]: i["id"] for i in items(ledger_env)}
    text = REAL.read_text()
    edited = (
        text.replace("1.1. Define the Particle interface", "1.1. Define the Particle type")  # reworded
        .replace(
            "- [ ] 1.2. Implement the ParticleSystem class", "- [x] 1.2. Implement the ParticleSystem class"
        )
        .replace("    - Implement unique ID generation for each particle\n", "")  # a detail deleted
        .replace(
            "- [ ] 2. Integrate", "- [ ] 1.6. Document the particle system\n\n- [ ] 2. Integrate"
        )  # a new task
    )
    path = tmp_path / "tasks.md"
    path.write_text(edited)
    out = json.loads(tl(ledger_env, "import", "--format", "markdown", str(path), "--json").stdout)
    assert (out["records"], out["added"], out["changed"]) == (31, 1, 2)
    after = {i["content"]: i for i in items(ledger_env)}
    assert after["1.1. Define the Particle type"]["id"] == before["1.1. Define the Particle interface"]
    assert "Implement unique ID" not in (after["1.1. Define the Particle type"]["notes"] or "")
    assert after["1.2. Implement the ParticleSystem class"]["status"] == "completed"
    assert "1.1. Define the Particle interface" not in after and len(after) == 31
    assert export(ledger_env) == edited.encode()


def test_changes_in_the_ledger_reach_the_exported_file(ledger_env: Path) -> None:
    tl(ledger_env, "import", "--format", "markdown", str(WRITTEN))
    rows = {i["content"]: i for i in items(ledger_env)}
    with Ledger(ledger_env) as lg:
        lg.update(rows["3. Export writes the file back"]["id"], status="in_progress")
        lg.update(rows["2.1 Add the table"]["id"], notes="- One row per plan\n- _Requirements: 2.1, 2.3_")
        lg.add("2.3 Backfill old plans", parent=rows["2. Write the migration"]["id"])
        lg.add("5. Ship it")
    text = export(ledger_env).decode()
    assert "- [-] 3. Export writes the file back" in text  # Kiro's in-progress box
    assert "    - One row per plan\n    - _Requirements: 2.1, 2.3_\n  - [ ]* 2.2" in text
    # A new sub-item goes under its parent, after the parent's lines; a new top-level item at the end.
    assert "    - **Validates: Requirements 2.1**\n  - [ ] 2.3 Backfill old plans\n\n```" in text
    assert text.endswith("questions arise.\n- [ ] 5. Ship it\n")
    assert text.startswith("# Implementation Plan\n\n## Phase 1: Storage\n\n- [x] 1. Set up")
    # And back: nothing is added twice.
    again = tl(ledger_env, "import", "--format", "markdown", "-", "--json", stdin=text.encode())
    assert json.loads(again.stdout)["added"] == 0


def test_crlf_and_a_plain_checklist(ledger_env: Path) -> None:
    text = (
        "Todo:\r\n\r\n- [ ] Write it\r\n  - first, the outline\r\n- [X] Ship it\r\n* [~] Tell people   \r\n"
    )
    assert tl(ledger_env, "import", "--format", "markdown", "-", stdin=text.encode()).returncode == 0
    assert export(ledger_env) == text.encode()
    statuses = [(i["content"], i["status"], i["notes"]) for i in items(ledger_env)]
    assert statuses == [
        ("Write it", "pending", "- first, the outline"),
        ("Ship it", "completed", None),
        ("Tell people", "in_progress", None),
    ]
    # Outside a Kiro file `[-]` keeps its todoledger meaning: cancelled.
    assert parse("- [-] Old idea\n").tasks[0].status == "cancelled"
    assert parse("- [-] 1. Underway\n  - _Requirements: 1.1_\n").tasks[0].status == "in_progress"


def test_a_plan_from_no_file_exports_as_a_checklist_with_its_notes(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        phase = lg.add("Phase one")["id"]
        lg.add("Step", parent=phase, notes="why: the seeds say so\nsecond line")
        lg.add("Other", status="completed")
    assert export(ledger_env) == (
        b"- [ ] Phase one\n  - [ ] Step\n    why: the seeds say so\n    second line\n- [x] Other\n"
    )
