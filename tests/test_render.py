"""Exact rendered output: coloured rows for terminals and plain text for pipes,
open work first and finished work folded (`core.view.fold`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from todoledger.cli import render_plain, render_term
from todoledger.core.view import build, fold

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

# On a terminal (colours off here: NO_COLOR); 60 columns, so the long row wraps under its text.
TERM = """\
plan demo · revision 3 · 1 pending, 1 in_progress, 1 completed
aaaaaa  ◐  high    Phase 0: Quick probe
cccccc  ○  medium    Phase 0.2: Launch [red]x[/red] \ufffd[31m
                     ready  waits for bbbbbb
(1 completed not shown: todoledger show --all)
"""

PLAIN = """\
plan demo · revision 3 · 1 pending, 1 in_progress, 1 completed
aaaaaa  ◐  high    Phase 0: Quick probe
cccccc  ○  medium    Phase 0.2: Launch [red]x[/red] \ufffd[31m (ready)  waits for bbbbbb
(1 completed not shown: todoledger show --all)
"""
PLAIN_ALL = """\
plan demo · revision 3 · 1 pending, 1 in_progress, 1 completed
aaaaaa  ◐  high    Phase 0: Quick probe
cccccc  ○  medium    Phase 0.2: Launch [red]x[/red] \ufffd[31m (ready)  waits for bbbbbb
completed and cancelled (1 completed):
bbbbbb  ●  high      Phase 0.1: Kill servers
"""


def term(view: dict[str, Any], monkeypatch: pytest.MonkeyPatch, *, width: int, show_all: bool = False) -> str:
    monkeypatch.setenv("NO_COLOR", "1")
    return "\n".join(render_term.plan_lines(build(view), show_all=show_all, width=width)) + "\n"


def test_terminal_rows_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    assert term(VIEW, monkeypatch, width=60) == TERM


def test_plain_all_draws_the_folded_items_after_the_open_work(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(build(VIEW), show_all=True)
    assert capsys.readouterr().out == PLAIN_ALL


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

LATER_TERM = """\
plan later · revision 9 · 1 pending, 1 completed, 1 cancelled
eeeeee  ○  medium  Compare with baseline  waits for ffffff
                   waits for a cancelled item (ffffff)
                   needs approval  estimate 2h
completed and cancelled (1 completed, 1 cancelled):
dddddd  ●  high    Benchmark 5 draft tokens  verified
                     evidence: ok
                     \ufffd]8;;http://evil\ufffd\\click\ufffd]8;;\ufffd\\ \ufffd\ufffd\ufffdevil
ffffff  ✕  low     Dropped probe  uses gpu0
                     reason: dropped by \ufffd[2Jcodex:s1
"""

LATER_PLAIN = """\
plan later · revision 9 · 1 pending, 1 completed, 1 cancelled
eeeeee  ○  medium  Compare with baseline  waits for ffffff  waits for a cancelled item (ffffff)  needs approval  estimate 2h
(1 completed, 1 cancelled not shown: todoledger show --all)
"""


def test_terminal_shows_later_fields_and_no_escape_code(monkeypatch: pytest.MonkeyPatch) -> None:
    assert term(LATER, monkeypatch, width=60, show_all=True) == LATER_TERM


def test_terminal_colours_are_ours_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """With colours on, every escape sequence is one of the renderer's colour codes:
    the agent's ESC, OSC 8 link and screen clear arrive as U+FFFD."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    text = "\n".join(render_term.plan_lines(build(LATER), show_all=True, width=60))
    assert "\x1b[36meeeeee\x1b[0m" in text  # coloured: the id column
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == LATER_TERM.rstrip("\n")
    assert "\x1b" not in re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_plain_shows_later_fields_exact(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(build(LATER))
    assert capsys.readouterr().out == LATER_PLAIN


def _item(item_id: str, status: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return (
        {"id": item_id, "content": f"item {item_id}", "status": status, "priority": "medium"}
        | ({"parent": parent} if parent else {})
        | extra
    )


def test_folding_never_hides_a_claimed_or_forced_completion_nor_an_open_items_phase() -> None:
    doc = {
        "plan": "p",
        "revision": 1,
        "items": [
            _item("done1", "completed", verification="verified"),
            _item("gate", "completed", verification="failed"),  # claimed completed, gate failing
            _item("unrun", "completed", verification="unverified"),  # claimed completed, gate not run
            _item("phase", "completed"),  # finished, yet an open item is one of its own
            _item("child", "pending", "phase"),
            _item("gone", "cancelled"),
            _item("plain", "completed"),
            _item("forced", "completed", forced=[{"past": "prerequisites", "open": ["child"]}]),
        ],
    }
    view = build(doc)
    drawn = fold(view)
    # the override stays in sight too: forced past open prerequisites
    assert [it.id for it in drawn.shown] == ["gate", "unrun", "phase", "child", "forced"]
    assert drawn.rest == ()
    assert drawn.folded == {"completed": 2, "cancelled": 1}
    assert [it.claimed for it in drawn.shown[:2]] == [
        "claimed completed, gate failing",
        "claimed completed, gate not run",
    ]
    everything = fold(view, show_all=True)
    assert [it.id for it in everything.rest] == ["done1", "gone", "plain"]
    assert view.summary() == (
        "1 pending, 4 completed, 1 cancelled; 1 claimed completed, gate failing; 1 claimed completed, gate not run"
    )


def test_a_claimed_completion_is_drawn_and_labelled_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"plan": "p", "revision": 1, "items": [_item("gate", "completed", verification="failed")]}
    text = term(doc, monkeypatch, width=100)
    assert "gate  ●  medium  item gate  claimed completed, gate failing" in text
    assert "not shown" not in text


CONTEST = {"writer": "agent:a", "listed": "in_progress", "closed_by": "cli:you"}
FOUGHT = "listed as in progress by agent:a, but cancelled by cli:you"
CLOSED: dict[str, Any] = {
    "plan": "p",
    "revision": 4,
    "items": [
        _item("open01", "pending"),
        _item("gone01", "cancelled", reason="not needed"),
        _item("left01", "dropped", reason="dropped by agent:a at revision 2"),
        _item("left02", "dropped"),
        _item("fought", "cancelled", reason="not now", contested=[CONTEST]),
        _item("done01", "completed"),
    ],
}


def test_dropped_folds_like_cancelled_and_is_counted_apart_from_it() -> None:
    drawn = fold(build(CLOSED))
    assert drawn.folded == {"completed": 1, "cancelled": 1, "dropped": 2}
    assert [it.id for it in fold(build(CLOSED), show_all=True).rest] == [
        "gone01",
        "left01",
        "left02",
        "done01",
    ]


def test_a_contested_item_is_never_folded() -> None:
    """A closed item a writer's latest list still works on is a disagreement someone
    must see: it stays among the drawn rows, with the disagreement as its label."""
    drawn = fold(build(CLOSED))
    assert [it.id for it in drawn.shown] == ["open01", "fought"]
    assert drawn.shown[1].contested == (FOUGHT,)
    # and the counts leave it out: it is drawn, not folded
    assert drawn.folded["cancelled"] == 1


def test_dropped_and_contested_in_the_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    render_plain.plan(build(CLOSED))
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "open01  ○  medium  item open01",
        f"fought  ✕  medium  item fought  cancelled: not now  {FOUGHT}",
        "(1 completed, 1 cancelled, 2 dropped not shown: todoledger show --all)",
    ]
    render_plain.plan(build(CLOSED), show_all=True)
    everything = capsys.readouterr().out.splitlines()
    assert everything[3:] == [
        "completed, cancelled and dropped (1 completed, 1 cancelled, 2 dropped):",
        "gone01  ✕  medium  item gone01  cancelled: not needed",
        "left01  ⊖  medium  item left01  dropped by agent:a at revision 2",
        "left02  ⊖  medium  item left02  dropped",
        "done01  ●  medium  item done01",
    ]


def test_dropped_and_contested_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert term(CLOSED, monkeypatch, width=120).splitlines()[1:] == [
        "open01  ○  medium  item open01",
        f"fought  ✕  medium  item fought  {FOUGHT}",
        "                     reason: not now",
        "(1 completed, 1 cancelled, 2 dropped not shown: todoledger show --all)",
    ]
    everything = term(CLOSED, monkeypatch, width=120, show_all=True).splitlines()
    assert everything[4:] == [
        "completed, cancelled and dropped (1 completed, 1 cancelled, 2 dropped):",
        "gone01  ✕  medium  item gone01",
        "                     reason: not needed",
        "left01  ⊖  medium  item left01",
        "                     reason: dropped by agent:a at revision 2",
        "left02  ⊖  medium  item left02",
        "done01  ●  medium  item done01",
    ]
