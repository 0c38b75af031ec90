"""Plan shapes that used to deadlock or lose their structure, through the real
`todoledger` command on both backends: an item that waits for its own phase
(or a phase that waits for its own sub-item) is refused as a cycle on every
route, and a Markdown export keeps a plan's shape at any depth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_cli import run, run_json


def _ids(db: Path) -> list[dict[str, Any]]:
    return list(run_json(db, "show")["items"])


def _refused(proc: Any, *names: str) -> None:
    assert proc.returncode == 1, proc.stdout
    line = proc.stderr.strip()
    assert line.startswith("Error: dependency cycle: ") and "\n" not in line, proc.stderr
    assert all(name in line for name in names), line


def test_add_under_a_phase_it_waits_for_is_a_cycle(ledger_env: Path) -> None:
    # Before: accepted, and `next` said "nothing is ready" for good.
    phase = run_json(ledger_env, "add", "Phase")
    before = _ids(ledger_env)
    proc = run(ledger_env, "add", "Step", "--parent", phase["id"], "--depends-on", phase["id"], check=False)
    _refused(proc, "the new item waits for " + phase["id"], f"{phase['id']} is done only when")
    assert _ids(ledger_env) == before  # nothing written


def test_a_phase_that_waits_for_its_own_sub_item_is_a_cycle(ledger_env: Path) -> None:
    phase = run_json(ledger_env, "add", "Phase")
    step = run_json(ledger_env, "add", "Step", "--parent", phase["id"])
    before = _ids(ledger_env)
    _refused(run(ledger_env, "dep", "add", phase["id"], step["id"], check=False), phase["id"], step["id"])
    # One level further away, and through a dependency of a sibling: the same deadlock.
    deeper = run_json(ledger_env, "add", "Deeper", "--parent", step["id"])
    other = run_json(ledger_env, "add", "Other")
    run(ledger_env, "dep", "add", other["id"], deeper["id"])
    before = _ids(ledger_env)
    _refused(run(ledger_env, "dep", "add", phase["id"], other["id"], check=False), phase["id"], other["id"])
    assert _ids(ledger_env) == before
    assert run_json(ledger_env, "next")[0]["id"] == deeper["id"]  # the plan still moves


def _import(db: Path, tmp_path: Path, records: list[dict[str, Any]], fmt: str = "jsonl") -> Any:
    path = tmp_path / ("plan.jsonl" if fmt == "jsonl" else "plan.md")
    path.write_text("".join(json.dumps(r) + "\n" for r in records) if fmt == "jsonl" else records[0]["text"])
    return run(db, "import", "--format", fmt, str(path), check=False)


def test_an_import_under_a_phase_it_waits_for_is_a_cycle(ledger_env: Path, tmp_path: Path) -> None:
    phase = {"id": "p00001", "content": "Phase", "status": "pending"}
    step = {"id": "s00001", "content": "Step", "status": "pending", "parent": "p00001"}
    _refused(_import(ledger_env, tmp_path, [phase, {**step, "depends_on": ["p00001"]}]), "s00001", "p00001")
    assert _ids(ledger_env) == []
    # The reverse: the phase waits for the sub-item under it.
    _refused(_import(ledger_env, tmp_path, [{**phase, "depends_on": ["s00001"]}, step]), "s00001", "p00001")
    assert _ids(ledger_env) == []


def test_a_markdown_import_that_moves_an_item_under_what_it_waits_for_is_a_cycle(
    ledger_env: Path, tmp_path: Path
) -> None:
    doc = "- [ ] Phase\n- [ ] Step\n"
    assert _import(ledger_env, tmp_path, [{"text": doc}], "markdown").returncode == 0
    phase, step = (i["id"] for i in _ids(ledger_env))
    run(ledger_env, "dep", "add", step, phase)
    before = _ids(ledger_env)
    moved = "- [ ] Phase\n  - [ ] Step\n"  # the file now puts Step under the phase it waits for
    _refused(_import(ledger_env, tmp_path, [{"text": moved}], "markdown"), step, phase)
    assert _ids(ledger_env) == before


def test_markdown_export_keeps_the_shape_past_64_levels(ledger_env: Path, tmp_path: Path) -> None:
    # Before: ancestors were followed 64 levels up, so an item under the root
    # listed after a 100-deep chain was written inside the chain, and the
    # file read back put the chain's lower half under it.
    depth = 100
    chain = [
        {"id": f"d{n:05d}", "content": f"Level {n}", "status": "pending", "position": float(n + 1)}
        | ({"parent": f"d{n - 1:05d}"} if n else {})
        for n in range(depth)
    ]
    last = {"id": "x00001", "content": "Last under the root", "parent": "d00000", "position": depth + 1.0}
    assert _import(ledger_env, tmp_path, [*chain, last]).returncode == 0
    text = run(ledger_env, "export", "--format", "markdown").stdout
    lines = text.splitlines()
    assert len(lines) == depth + 1
    assert lines[-1] == "  - [ ] Last under the root"
    assert all(lines[n] == " " * (2 * n) + f"- [ ] Level {n}" for n in range(depth))
    again = tmp_path / "again.db"
    (tmp_path / "plan.md").write_text(text)
    assert (
        run(again, "import", "--format", "markdown", str(tmp_path / "plan.md"), check=False).returncode == 0
    )
    shape = {i["content"]: i.get("parent") for i in _ids(again)}
    names = {i["id"]: i["content"] for i in _ids(again)}
    assert names[shape["Last under the root"]] == "Level 0" and names[shape["Level 99"]] == "Level 98"
