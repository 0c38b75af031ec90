"""Every benchmark comparison with a peer (Taskwarrior) checks, in its run, that
both sides hold the same items and print the same rows (bench/equal_work.py).
Here each one runs at a tiny size and its check holds; and the plans bench_show.py
built before issue 30 (its two shapes in one folder) are caught as unequal work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

TASK = shutil.which("task")
pytestmark = [
    pytest.mark.skipif(TASK is None, reason="Taskwarrior is not installed (apt-get install taskwarrior)"),
    pytest.mark.sqlite_only,  # the benchmarks build their own SQLite ledgers
]
SIZE = 24


def tw_env(folder: Path) -> dict[str, str]:
    from terminal import taskwarrior_data

    env = dict(os.environ, PAGER="cat", TERM="xterm-256color")
    return taskwarrior_data(folder, env)


def test_show_against_task_list_draws_equal_work(tmp_path: Path) -> None:
    import bench_show
    from equal_work import UnequalWork

    assert TASK is not None
    for label, share in {"all open": False, "a quarter completed": True}.items():
        slug = label.replace(" ", "-")
        db = tmp_path / f"show-{slug}.db"
        bench_show.todoledger_plan(db, SIZE, share)
        theirs = tw_env(tmp_path / f"tw-{slug}")
        bench_show.taskwarrior_plan(TASK, theirs, tmp_path, SIZE, share)
        ours = dict(os.environ, PAGER="cat", TERM="xterm-256color", TODOLEDGER_DB=str(db))
        line = bench_show.equal_show(db, ours, TASK, theirs, label)
        assert f"draw the same {SIZE * 3 // 4 if share else SIZE} rows" in line
    # The old bug: both shapes imported into one folder (`label[0]` named both "a").
    shared_db = tmp_path / "show-a.db"
    theirs = tw_env(tmp_path / "tw-a")
    for share in (False, True):
        bench_show.todoledger_plan(shared_db, SIZE, share)
        bench_show.taskwarrior_plan(TASK, theirs, tmp_path, SIZE, share)
    ours = dict(os.environ, PAGER="cat", TERM="xterm-256color", TODOLEDGER_DB=str(shared_db))
    with pytest.raises(UnequalWork, match="unequal work"):
        bench_show.equal_show(shared_db, ours, TASK, theirs, "a quarter completed")


def test_the_agents_verbs_against_taskwarrior_draw_equal_work(tmp_path: Path) -> None:
    import bench_agents

    assert TASK is not None
    env = tw_env(tmp_path / "tw")
    (tmp_path / "tasks.json").write_text(
        json.dumps([{"description": f"item {k}", "status": "pending"} for k in range(SIZE)])
    )
    subprocess.run([TASK, "import", str(tmp_path / "tasks.json")], env=env, capture_output=True, check=True)
    db = tmp_path / "tw-compare.db"
    env["TODOLEDGER_DB"] = str(db)
    bench_agents.plan_of(db, SIZE)
    lines = bench_agents.equal_agents(TASK, env, db)
    assert lines[0].endswith(f"draw the same {SIZE} rows")
    assert lines[1].endswith("draw the same 5 rows")


def test_add_against_task_add_holds_equal_work(tmp_path: Path) -> None:
    import bench_core
    from equal_work import UnequalWork, check, held_by_ledger, held_by_taskwarrior

    assert TASK is not None
    env = tw_env(tmp_path / "tw")
    (tmp_path / "tasks.json").write_text(
        json.dumps([{"description": f"item {k}", "status": "pending"} for k in range(SIZE)])
    )
    subprocess.run([TASK, "import", str(tmp_path / "tasks.json")], env=env, capture_output=True, check=True)
    db = tmp_path / "tw-compare.db"
    bench_core.fill_plan(db, SIZE)
    assert check("add", (held_by_ledger(db), held_by_taskwarrior(TASK, env)), None).endswith(f"{SIZE} items")
    bench_core.fill_plan(tmp_path / "other.db", SIZE + 1)
    with pytest.raises(UnequalWork):
        check("add", (held_by_ledger(tmp_path / "other.db"), held_by_taskwarrior(TASK, env)), None)
