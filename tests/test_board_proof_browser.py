"""The board shows the proof (issue 31, part 6), in a real headless Chromium against a
real `todoledger serve` on the demo: the item page's Proof section for 66s0na (the failing
gate, the typed 2,156), text as written (no Python repr), no approve button for a viewer
who is not a person, a long title cut in the header to one line. Screenshots go to
SCREENS (outside the repository) for the issue's closing note."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.test_board_browser import ARGS, CHROMIUM, Served, free_port, live, playwright_sync

pytestmark = pytest.mark.sqlite_only

SCREENS = Path(os.environ.get("TODOLEDGER_SCREENS", "/work/screens31"))


def shot(page: Any, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=True)


class ServedByNoPerson(Served):
    """`serve` started from a script (no person's token, no terminal): no one here is a person."""

    def __init__(self, db: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [todoledger_bin(), "serve", "--port", str(self.port)],
            env=subprocess_env(db),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        import socket

        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("serve did not start") from None
                time.sleep(0.05)


def tl(db: Path, *args: str) -> str:
    proc = subprocess.run(
        [todoledger_bin(), *args],
        capture_output=True,
        text=True,
        env=subprocess_env(db),
        timeout=120,
        check=True,
    )
    return proc.stdout


@pytest.fixture
def demo(ledger_env: Path) -> Path:
    tl(ledger_env, "demo")
    return ledger_env


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()


def test_the_item_page_shows_the_proof_of_66s0na(demo: Path, page: Any) -> None:
    served = Served(demo)
    try:
        page.goto(f"{served.base}/item?plan=demo-qwen&id=66s0na")
        live(page)
        proof = page.locator("section.proof")
        text = proof.inner_text()
        assert "metric:tok_s_c32>=4119" in text and "fails: tok_s_c32 = 2156 (needs >= 4119)" in text
        assert "cli:reviewer" in text and "nothing of the tree" in text  # a metric reads no file
        row = proof.locator("table.metrics tbody tr").first
        assert row.locator("td.value").inner_text() == "2,156"
        assert row.locator("td.provenance").inner_text() == "typed"
        whole = page.locator("main").inner_text()
        assert "\\'" not in whole and "the agent's" in whole  # as written, never a Python repr
        shot(page, "item-66s0na-proof")
        # The header cuts the long title with an ellipsis: one line, never 5 to 9 (a narrow window).
        page.set_viewport_size({"width": 700, "height": 900})
        title = page.locator("header .title")
        box = title.bounding_box()
        line = page.evaluate(
            "parseFloat(getComputedStyle(document.querySelector('header .title')).lineHeight)"
        )
        assert box is not None and box["height"] < 3 * line
        assert page.evaluate(
            "(() => { const t = document.querySelector('header .title'); return t.scrollWidth > t.clientWidth })()"
        )  # the title is longer than the line: the ellipsis shows
        shot(page, "item-66s0na-narrow-breadcrumb")
    finally:
        served.stop()


def test_no_approve_button_for_a_viewer_who_is_not_a_person(demo: Path, page: Any) -> None:
    item = tl(demo, "add", "Deploy to the shared cluster", "--needs-approval", "-q").strip()
    served = ServedByNoPerson(demo)
    try:
        page.goto(f"{served.base}/item?plan=main&id={item}")
        live(page)
        assert "not a person" in page.locator("#identity").inner_text()
        gate = page.locator("section.gate")
        assert "Needs a person's approval" in gate.inner_text()
        assert page.locator("button[data-act=approve]").count() == 0
        shot(page, "item-needs-approval-no-person")
    finally:
        served.stop()
    served = Served(demo)  # the person who started it: the button is theirs
    try:
        page.goto(f"{served.base}/item?plan=main&id={item}")
        live(page)
        assert page.locator("button[data-act=approve]").count() == 1
        shot(page, "item-needs-approval-person")
    finally:
        served.stop()


def test_timeline_labels_never_overlap_after_demo_checks(ledger_env: Path, page: Any) -> None:
    tl(ledger_env, "demo", "--checks")
    served = Served(ledger_env)
    try:
        page.goto(f"{served.base}/timeline?plan=demo")
        page.wait_for_selector("g.xtick text")
        boxes = [
            b
            for b in (t.bounding_box() for t in page.locator("g.xtick text").all())
            if b is not None and b["width"] > 0
        ]
        assert len(boxes) >= 3
        for n, a in enumerate(boxes):
            for b in boxes[n + 1 :]:
                apart = (
                    a["x"] + a["width"] <= b["x"]
                    or b["x"] + b["width"] <= a["x"]
                    or a["y"] + a["height"] <= b["y"]
                    or b["y"] + b["height"] <= a["y"]
                )
                assert apart, (a, b)
        shot(page, "timeline-demo-checks")
    finally:
        served.stop()
