"""Exact rendered output: the rich table for terminals and plain text for pipes."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from todoledger.cli import render_plain, render_rich
from todoledger.core.view import build

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
plan demo · revision 3 · 1 pending, 1 in_progress, 1 completed          
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
plan demo · revision 3 · 1 pending, 1 in_progress, 1 completed
aaaaaa  ◐  high    Phase 0: Quick probe
bbbbbb  ●  high      Phase 0.1: Kill servers
cccccc  ○  medium    Phase 0.2: Launch [red]x[/red] \ufffd[31m (ready)  waits for bbbbbb
"""


def test_rich_table_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(
        render_rich, "console", Console(file=buf, width=72, color_system=None, force_terminal=False)
    )
    render_rich.plan(build(VIEW))
    assert buf.getvalue() == RICH


def test_plain_text_exact(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(build(VIEW))
    assert capsys.readouterr().out == PLAIN


# Fields other work fills (checks, dependency rules, the board): shown when present.
LATER: dict[str, Any] = {
    "plan": "later",
    "revision": 9,
    "items": [
        {
            "id": "dddddd",
            "content": "Benchmark 5 draft tokens",
            "status": "completed",
            "priority": "high",
            "evidence": "ok \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ \x07\b\r\u202eevil",
            "verification": "verified",
        },
        {
            "id": "eeeeee",
            "content": "Compare with baseline",
            "status": "pending",
            "priority": "medium",
            "depends_on": ["ffffff"],
            "ready": True,
            "waits_on_cancelled": ["ffffff"],
            "estimate": "2h",
            "needs_approval": True,
        },
        {
            "id": "ffffff",
            "content": "Dropped probe",
            "status": "cancelled",
            "priority": "low",
            "reason": "dropped by \x1b[2Jcodex:s1",
            "uses": ["gpu0"],
        },
    ],
}

LATER_RICH = """\
plan later · revision 9 · 1 pending, 1 completed, 1 cancelled                   
┏━━━━━━━┳━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━┓
┃id     ┃   ┃ item                                         ┃ pri    ┃ waits for┃
┡━━━━━━━╇━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━┩
│dddddd │ ● │ Benchmark 5 draft tokens verified            │ high   │          │
│       │   │   evidence: ok                               │        │          │
│       │   │ \ufffd]8;;http://evil\ufffd\\click\ufffd]8;;\ufffd\\ \ufffd\ufffd\ufffdevil       │        │          │
│eeeeee │ ○ │ Compare with baseline waits for a cancelled  │ medium │ ffffff   │
│       │   │ item (ffffff) needs approval estimate 2h     │        │          │
│ffffff │ ✕ │ Dropped probe uses gpu0                      │ low    │          │
│       │   │   reason: dropped by \ufffd[2Jcodex:s1            │        │          │
└───────┴───┴──────────────────────────────────────────────┴────────┴──────────┘
"""  # noqa: W291 (rich pads the title line)

LATER_PLAIN = """\
plan later · revision 9 · 1 pending, 1 completed, 1 cancelled
dddddd  ●  high    Benchmark 5 draft tokens  verified
eeeeee  ○  medium  Compare with baseline  waits for ffffff  waits for a cancelled item (ffffff)  needs approval  estimate 2h
ffffff  ✕  low     Dropped probe  cancelled: dropped by \ufffd[2Jcodex:s1  uses gpu0
"""


def test_rich_shows_later_fields_and_no_escape_code(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(
        render_rich, "console", Console(file=buf, width=80, color_system=None, force_terminal=False)
    )
    render_rich.plan(build(LATER))
    assert buf.getvalue() == LATER_RICH


def test_plain_shows_later_fields_exact(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(build(LATER))
    assert capsys.readouterr().out == LATER_PLAIN
