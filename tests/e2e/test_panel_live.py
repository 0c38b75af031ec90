"""Claude Code's task panel, live: the real interactive Claude Code under a
pseudo-terminal, its screen rendered by a terminal emulator (pyte), the panel
opened with ctrl+t. The asserts read the rendered screen, not the files.

Each test leaves the screen it saw in `panel-screen.txt` in its pytest folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import results
from tests.e2e.agents import BIN, CLAUDE, CLAUDE_MODEL, Scratch
from tests.e2e.fakemodel import FakeModel
from tests.e2e.test_agents import installed_project, todoledger
from tests.mcp_wire import INITIALIZED, call_line, initialize
from todoledger import Ledger
from todoledger.panel import Target, target
from todoledger.panel.sync import sync

pyte = pytest.importorskip("pyte")
pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]

COLUMNS, LINES = 120, 40
KEY = "sk-ant-e2e-dummy-key-0123456789"
CTRL_T = b"\x14"


class Terminal:
    """Claude Code on a pseudo-terminal, its output fed to a terminal emulator."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        pid, fd = pty.fork()
        if pid == 0:  # the child: Claude Code
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.02)
            if ready:
                try:
                    self.stream.feed(os.read(self.fd, 65536))
                except OSError:
                    return

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display).strip("\n")

    def wait_for(self, found: Callable[[str], bool], seconds: float) -> float | None:
        """Seconds until the screen satisfies `found`; None if it never did."""
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            self.pump(0.02)
            if found(self.text()):
                return time.monotonic() - started
        return None

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


@contextlib.contextmanager
def live_claude(root: Path, texts: list[str]) -> Iterator[tuple[Scratch, Target, Terminal]]:
    """An interactive Claude Code in a project installed with --panel, the panel open."""
    scratch = installed_project(CLAUDE, root, "--panel", "--approve")
    for text in texts:
        added = todoledger(scratch, "add", text)
        assert added.returncode == 0, added.describe()
    where = target(str(scratch.project), scratch.home)
    assert where is not None
    # What a person's first start settles once: onboarding done, the API key accepted.
    state_path = scratch.home / ".claude.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state.update(
        {"hasCompletedOnboarding": True, "theme": "dark", "customApiKeyResponses": {"approved": [KEY[-20:]]}}
    )
    state_path.write_text(json.dumps(state), encoding="utf-8")
    fake = FakeModel([])
    scratch.url = fake.start()
    env = {
        **scratch.env(),
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": scratch.url,
        "ANTHROPIC_API_KEY": KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    env.pop("CI", None)
    env.pop("NO_COLOR", None)
    terminal = Terminal([str(CLAUDE.path), "--model", CLAUDE_MODEL], scratch.project, env)
    try:
        ready = terminal.wait_for(lambda s: "ctrl+t" in s, 30)
        assert ready is not None, terminal.text()
        terminal.send(CTRL_T)
        shown = terminal.wait_for(lambda s: "tasks done" in s, 10)
        assert shown is not None, terminal.text()
        yield scratch, where, terminal
    finally:
        (root / "panel-screen.txt").write_text(terminal.text() + "\n", encoding="utf-8")
        terminal.close()
        fake.stop()


def mcp_todowrite(scratch: Scratch, todos: list[dict[str, Any]], agent: str) -> None:
    """A second agent's `todowrite`, through its own `todoledger mcp` in the project."""
    env = {**scratch.env(), "TODOLEDGER_AGENT": agent}
    proc = subprocess.Popen(
        [str(BIN / "todoledger"), "mcp"],
        cwd=scratch.project,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        lines = [initialize(agent), INITIALIZED, call_line(1, "todowrite", json.dumps({"todos": todos}))]
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        for raw in proc.stdout:
            message = json.loads(raw)
            if message.get("id") == 1:
                assert "error" not in message and not message["result"].get("isError"), message
                break
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_a_write_by_another_agent_shows_on_the_panel_within_a_second(tmp_path: Path) -> None:
    with live_claude(tmp_path, ["Write the parser", "Test the parser"]) as (scratch, _, terminal):
        screen = terminal.text()
        assert "0/2 tasks done" in screen and "Write the parser" in screen and "Test the parser" in screen
        todos = [
            {"content": "Write the parser", "status": "in_progress"},
            {"content": "Benchmark the parser", "status": "pending"},
        ]
        mcp_todowrite(scratch, todos, "codex")  # returns once the write (and its sync) is committed
        seconds = terminal.wait_for(lambda s: "Benchmark the parser" in s, 5)
        assert seconds is not None and seconds < 1.0, (seconds, terminal.text())
        print(f"\nshown {seconds:.2f} s after the MCP call returned:\n{terminal.text()}")
        assert "0/3 tasks done" in terminal.text()
        results.record_panel(
            "", {}, live={"version": CLAUDE.version().rsplit("@", 1)[-1], "shown_s": seconds}
        )


def test_claudes_reset_happens_once_and_the_writer_does_not_fight_it(tmp_path: Path) -> None:
    with live_claude(tmp_path, ["Write the parser", "Test the parser"]) as (scratch, where, terminal):
        folder = Path(where.folder)
        db = scratch.project / ".todoledger" / "ledger.db"
        with Ledger(str(db)) as lg:
            for item in lg.items():
                lg.done(item["id"], writer="cli:tester")
            sync(lg, where)
        assert terminal.wait_for(lambda s: "2/2 tasks done" in s, 5) is not None, terminal.text()
        # Claude Code deletes an all-completed list about 5 s later.
        gone = terminal.wait_for(lambda _: not list(folder.glob("*.json")), 15)
        assert gone is not None, terminal.text()
        with Ledger(str(db)) as lg:  # more completed work: a new revision, still nothing open
            lg.add("Noted as done", writer="cli:tester", status="completed")
            assert sync(lg, where).skipped == "reset"
        terminal.pump(6)  # another reset period: nothing was written back for Claude to reset again
        assert not list(folder.glob("*.json"))
        assert "Noted as done" not in terminal.text()
        added = todoledger(scratch, "add", "Ship the parser")  # open work: the rows come back
        assert added.returncode == 0, added.describe()
        back_rows = {json.loads(p.read_text())["subject"]: p for p in folder.glob("*.json")}
        assert "Ship the parser" in back_rows, back_rows  # with the recently completed ones
        back = terminal.wait_for(lambda s: "Ship the parser" in s, 3)
        reopened = 0
        if back is None:  # Claude Code hid the panel with its reset: a person opens it again
            reopened = 1
            print(f"\nnot shown by itself after the reset:\n{terminal.text()}")
            terminal.send(CTRL_T)
            back = terminal.wait_for(lambda s: "Ship the parser" in s, 3)
        assert back is not None, terminal.text()
        assert f"{len(back_rows) - 1}/{len(back_rows)} tasks done" in terminal.text()
        print(f"\nafter the reset, a new open item:\n{terminal.text()}")
        how = "shown by itself" if reopened == 0 else "shown after ctrl+t (Claude hides its panel at a reset)"
        reset = (
            "when every item was completed Claude Code deleted the rows once and todoledger did not write "
            f"them back until an item was open again, then {how}"
        )
        results.record_panel("", {}, live={"reset": reset})
