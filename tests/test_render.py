"""Exact rendered output: the rich table for terminals and plain text for pipes."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from todoledger.cli import render_plain, render_rich

VIEW: dict[str, Any] = {
    "plan": "demo",
    "revision": 3,
    "items": [
        {
            "id": "aaaaaa",
            "content": "Phase 0: Quick probe",
            "status": "in_progress",
            "priority": "high",
            "parent": None,
            "depends_on": [],
            "blocked": False,
            "ready": False,
            "evidence": None,
            "reason": None,
        },
        {
            "id": "bbbbbb",
            "content": "Phase 0.1: Kill servers",
            "status": "completed",
            "priority": "high",
            "parent": "aaaaaa",
            "depends_on": [],
            "blocked": False,
            "ready": False,
            "evidence": "fuser -k",
            "reason": None,
        },
        {
            "id": "cccccc",
            "content": "Phase 0.2: Launch [red]x[/red] \x1b[31m",
            "status": "pending",
            "priority": "medium",
            "parent": "aaaaaa",
            "depends_on": ["bbbbbb"],
            "blocked": False,
            "ready": True,
            "evidence": None,
            "reason": None,
        },
    ],
}

RICH = """\
plan demo · revision 3 · 1 in_progress, 1 completed, 1 pending          
┏━━━━━━━┳━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━┓
┃id     ┃   ┃ item                                 ┃ pri    ┃ waits for┃
┡━━━━━━━╇━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━┩
│aaaaaa │ ◐ │ Phase 0: Quick probe                 │ high   │          │
│bbbbbb │ ● │   Phase 0.1: Kill servers            │ high   │          │
│       │   │   evidence: fuser -k                 │        │          │
│cccccc │ ○ │   Phase 0.2: Launch [red]x[/red]     │ medium │ bbbbbb   │
│       │   │ \ufffd[31m ready                          │        │          │
└───────┴───┴──────────────────────────────────────┴────────┴──────────┘
"""  # noqa: W291 (rich pads the title line)

PLAIN = """\
plan demo · revision 3 · 1 in_progress, 1 completed, 1 pending
aaaaaa  ◐  high    Phase 0: Quick probe
bbbbbb  ●  high      Phase 0.1: Kill servers
cccccc  ○  medium    Phase 0.2: Launch [red]x[/red] \ufffd[31m (ready)  waits for bbbbbb
"""


def test_rich_table_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(
        render_rich, "console", Console(file=buf, width=72, color_system=None, force_terminal=False)
    )
    render_rich.plan(VIEW)
    assert buf.getvalue() == RICH


def test_plain_text_exact(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(VIEW)
    assert capsys.readouterr().out == PLAIN
