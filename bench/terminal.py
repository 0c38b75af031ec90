"""Commands timed on a terminal: a pseudo-terminal of a fixed size, read to the
end, the same for todoledger and its peers (bench_show.py, bench_core.py)."""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import termios
import time

ROWS, COLS = 50, 120


def on_terminal(
    cmd: list[str], env: dict[str, str], rows: int = ROWS, cols: int = COLS
) -> tuple[float, bytes]:
    """Seconds from the start of `cmd` on a terminal until it exited and all it
    wrote was read; and what it wrote. A failure ends the benchmark."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr
        try:
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    os.close(fd)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed on a terminal: {bytes(out[-400:]).decode(errors='replace')}"
        )
    return elapsed, bytes(out)


def taskwarrior() -> tuple[str, str] | None:
    """`task` and the version Debian installed, or None where it is not installed."""
    task = shutil.which("task")
    if task is None:
        return None
    version = subprocess.run([task, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return task, version or "unknown version"


def taskwarrior_data(folder: os.PathLike[str] | str, env: dict[str, str]) -> dict[str, str]:
    """A Taskwarrior of its own in `folder`: no hooks, no confirmation prompts,
    gc off (ids stay put, so `task N done` names one task per run)."""
    data = os.path.join(folder, "data")
    os.makedirs(data, exist_ok=True)
    rc = os.path.join(folder, "taskrc")
    with open(rc, "w", encoding="utf-8") as fh:
        fh.write(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\ngc=off\n")
    return env | {"TASKRC": rc, "TASKDATA": data}
