"""Long output on a terminal goes through a pager, the way `git log` does it.

The pager is `$TODOLEDGER_PAGER`, else `$PAGER`, else `less`; `cat` or an
empty value turns paging off, as does `--no-pager`. `less` gets `LESS=FRX`
unless `LESS` is set (quit when the text fits one screen, keep the colours,
leave the text on the screen), as git gives it. Output that fits the
terminal, or that goes to a pipe, is written directly: no pager process is
started for it.
"""

from __future__ import annotations

import os
import sys

OFF = ("", "cat")


def chosen() -> str:
    """The pager command, or "" for none."""
    for name in ("TODOLEDGER_PAGER", "PAGER"):
        if name in os.environ:
            value = os.environ[name].strip()
            return "" if value in OFF else value
    return "less"


def page(lines: list[str], *, enabled: bool = True) -> None:
    """Print `lines` to stdout, through the pager when they are more than a
    terminal's screen."""
    text = "\n".join(lines) + "\n"
    command = chosen() if enabled and sys.stdout.isatty() else ""
    if not command or len(lines) < _rows() or not _found(command):
        sys.stdout.write(text)
        return
    import signal
    import subprocess

    sys.stdout.flush()
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    # Ctrl-C belongs to the pager while it runs (less quits on it or ignores it), as with git.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(text.encode(sys.stdout.encoding or "utf-8", "replace"))
            proc.stdin.close()
        except BrokenPipeError:  # the person quit the pager before the end: nothing is wrong
            pass
        proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _rows() -> int:
    try:
        return int(os.environ["LINES"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.stdout.fileno()).lines
    except (OSError, ValueError):
        return 24


def _found(command: str) -> bool:
    """Whether the pager's program exists: a missing pager must not swallow the output."""
    import shutil

    program = command.split()[0]
    return ("/" in program and os.access(program, os.X_OK)) or shutil.which(program) is not None
