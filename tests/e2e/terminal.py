"""A real agent CLI run interactively under a pseudo-terminal, read as a person sees it.

`Terminal` starts a program on a new pty (its own session and process group),
feeds everything it draws into a `pyte` screen, and lets a test wait for text on
that screen and type keys, as a person at the terminal would. The raw output is
kept too (`raw`), for a failure's message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyte

ENTER = "\r"
DOWN = "\x1b[B"
UP = "\x1b[A"
ESC = "\x1b"
CTRL_C = "\x03"


class _Screen(pyte.Screen):
    """A screen that answers the program's queries (device attributes, cursor
    position) on the pty, as a terminal does: Claude Code asks before it reads keys."""

    answer: Callable[[str], None] = staticmethod(lambda data: None)

    def write_process_input(self, data: str) -> None:
        self.answer(data)


class Terminal:
    def __init__(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], cols: int = 140, rows: int = 50
    ) -> None:
        self.argv = argv
        self.screen = _Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self._lock = threading.Lock()
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,  # its own session: the pty is its controlling terminal
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.screen.answer = lambda data: os.write(master, data.encode())
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                if self.proc.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the program closed its side
                return
            if not chunk:
                return
            with self._lock:
                self.raw += chunk
                self.stream.feed(chunk)

    def text(self) -> str:
        """The screen as a person reads it, one line per row, trailing blanks cut."""
        with self._lock:
            return "\n".join(line.rstrip() for line in self.screen.display).strip("\n")

    def type(self, keys: str, *, pause: float = 0.05) -> None:
        os.write(self.master, keys.encode())
        time.sleep(pause)

    def type_slowly(self, text: str, *, pause: float = 0.01) -> None:
        """Text key by key, as typed: a paste of many bytes can be read as one paste event."""
        for ch in text:
            self.type(ch, pause=pause)

    def wait_for(self, what: str | re.Pattern[str] | Callable[[str], bool], timeout: float = 30) -> str:
        """The screen once it shows `what` (a substring, a pattern or a predicate)."""
        test: Callable[[str], bool]
        if isinstance(what, str):
            test = lambda s: what in s  # noqa: E731
        elif isinstance(what, re.Pattern):
            test = lambda s: what.search(s) is not None  # noqa: E731
        else:
            test = what
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if test(screen):
                return screen
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.argv[0]} exited {self.proc.returncode}:\n{screen}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what!r}; the screen:\n{screen}"
                )
            time.sleep(0.1)

    def choose(self, option: str, *, timeout: float = 30) -> None:
        """Pick `option` in a menu on screen (the line marked `❯`), as a person does
        with the arrow keys and Enter. Each key waits for the screen to show its
        effect: keys sent before the menu reads input would be lost."""
        deadline = time.monotonic() + timeout
        self.wait_for(option, timeout)
        time.sleep(0.3)  # the menu is drawn before it reads keys
        while time.monotonic() < deadline:
            lines = self.text().splitlines()
            options = [i for i, line in enumerate(lines) if line.lstrip().startswith("❯")]
            wanted = [i for i, line in enumerate(lines) if option in line]
            if options and wanted:
                marked, target = options[-1], wanted[-1]
                if marked == target:
                    self.type(ENTER)
                    return
                before = self.text()
                self.type(DOWN if target > marked else UP)
                end = time.monotonic() + 2
                while self.text() == before and time.monotonic() < end:
                    time.sleep(0.05)
            else:
                time.sleep(0.1)
        raise AssertionError(f"could not choose {option!r}; the screen:\n{self.text()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End the program and everything it started in its process group."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self._reader.join(timeout=2)
        with contextlib.suppress(OSError):
            os.close(self.master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
