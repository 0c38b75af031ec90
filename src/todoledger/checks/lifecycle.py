"""A sweep combination's processes: its setup kept running in its own process
group, a teardown command, the end of the group, and who still listens on a port.

A setup is started in a new session (its own process group) with no
parent-death signal: a server outlives the `sweep run` that started it, as a
real one would, and the ledger records its leader's pid and start time so that
the next `sweep run` tears it down first. That record is only acted on while
it still names the same group: the leader alive with the recorded start time
(Linux's /proc), or, the leader gone, members left in its group (a pid is not
reused while any process has it as its group). Zombies (exited, not yet
reaped) hold nothing and do not count, except a leader whose main thread
exited while another of its threads runs on: Linux shows that leader as a
zombie, yet its live thread still holds what the process opened (a listening
socket), so it counts until its last thread is gone.

"Ended" means more than the group gone: a teardown then waits until the port
of the ready check can be bound again (`wait_port_free`), so that the next
setup never starts beside what the last one still held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from todoledger.core.record import dataclass
from todoledger.core.verification import tail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.checkspec import Check


TEARDOWN_TIMEOUT = 300.0  # seconds a teardown command may take
GRACE = 5.0  # seconds between SIGTERM and SIGKILL when a group is ended
PORT_TIMEOUT = 60.0  # seconds a teardown waits for the ready check's port to be free (--teardown-timeout)
_POLL = 0.01


@dataclass(frozen=True)
class Setup:
    """A started setup: its group's leader and where its output goes."""

    pid: int
    ticks: str | None  # the leader's start time in clock ticks since boot (Linux), to know it again
    log: str
    proc: Any = None  # the Popen, in the process that started it


def host() -> str:
    import socket

    return socket.gethostname()


# The setup waits for a line on its standard input before it runs its command, so that
# it never runs unrecorded: the runner writes the line only once the ledger knows its
# pid, and a runner killed before that closes the pipe, and the waiting shell exits.
_HELD = 'read go || exit 125; exec /bin/sh -c "$1"'


def start(command: str, cwd: str, log: str) -> Setup:
    """Start `command` under /bin/sh in a new session, its output appended to `log`,
    held until `release` (the ledger records it in between)."""
    with open(log, "ab") as sink:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", _HELD, "todoledger-setup", command],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Setup(proc.pid, start_ticks(proc.pid), log, proc)


def release(setup: Setup) -> None:
    """Let a started setup run its command (it is recorded now); its input then reads as empty."""
    if setup.proc is not None and setup.proc.stdin is not None:
        with contextlib.suppress(OSError):
            setup.proc.stdin.write(b"go\n")
        with contextlib.suppress(OSError):
            setup.proc.stdin.close()


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _live(pid: int, fields: list[str]) -> bool:
    """Is process `pid` (its stat `fields`) alive: not a zombie, or a zombie leader
    one of whose threads still runs (its main thread exited, the rest did not)?"""
    if fields[0] not in ("Z", "X"):
        return True
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        if tid == str(pid):
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        if text[text.rfind(")") + 2 :].split()[:1] not in (["Z"], ["X"], []):
            return True
    return False


def members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (a zombie counts only while a
    thread of it runs on)."""
    try:
        os.killpg(pgid, 0)  # no such group: nothing to look for (the common case, and cheap)
    except ProcessLookupError:
        return []
    except OSError:
        pass  # there, but another user's: look
    if not os.path.isdir("/proc/self"):
        return [pgid]
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if fields and len(fields) > 2 and fields[2] == str(pgid) and _live(int(name), fields):
            out.append(int(name))
    return sorted(out)


def running(pid: int, ticks: str | None) -> bool:
    """Is process `pid` (started at `ticks`, where known) still running? A zombie (it
    ended; its parent has not reaped it yet) is not, unless a thread of it runs on."""
    fields = _stat(pid)
    if not fields or len(fields) <= 19 or (ticks is not None and fields[19] != ticks):
        return False
    return _live(pid, fields)


def is_ours(pid: int, ticks: str | None) -> bool:
    """Does the recorded group still exist as the one the setup started?"""
    now = start_ticks(pid)
    if now is not None and ticks is not None:
        if now != ticks:
            return False  # the pid is another process's now, so our group is gone
        fields = _stat(pid)
        if fields and _live(pid, fields):
            return True  # the leader itself, alive: no need to look at every process
    return bool(members(pid))


def end_group(setup: Setup, grace: float = GRACE) -> str:
    """End the setup's process group: SIGTERM, then SIGKILL after `grace`
    seconds; what happened, in a few words."""
    if not is_ours(setup.pid, setup.ticks):
        _reap(setup)
        return "its process group had already ended"
    how = "ended (SIGTERM)"
    with contextlib.suppress(OSError):
        os.killpg(setup.pid, signal.SIGTERM)
    if not _gone(setup, grace):
        how = f"killed (SIGKILL after {grace:g} s)"
        with contextlib.suppress(OSError):
            os.killpg(setup.pid, signal.SIGKILL)
        if not _gone(setup, 5.0):
            left = members(setup.pid)
            return f"still running after SIGKILL: {', '.join(describe(p) for p in left)}"
    return how


def _gone(setup: Setup, seconds: float) -> bool:
    """Wait until no process of the group is left: the leader by `wait` where it is
    this process's child, the rest by looking at each process (a zombie, not yet
    reaped, holds nothing; `members` asks for the group first, which is cheap)."""
    deadline = time.monotonic() + seconds
    if setup.proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            setup.proc.wait(timeout=seconds)
    pause = 0.001
    while True:
        _reap(setup)
        if not members(setup.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, _POLL * 5)


def _reap(setup: Setup) -> None:
    if setup.proc is not None:
        setup.proc.poll()


def exited(setup: Setup) -> int | None:
    """The setup's exit status once its leader has exited (only where it was started)."""
    return None if setup.proc is None else setup.proc.poll()


def run_command(command: str, cwd: str, timeout: float = TEARDOWN_TIMEOUT) -> tuple[int | None, str]:
    """Run a teardown command in its own process group; (exit status or None
    on a timeout, the output's tail). Not a check: it runs also after a stop."""
    import tempfile

    with tempfile.TemporaryFile() as sink:
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return None, f"cannot start: {exc.strerror}"
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            proc.wait()
            code = None
        sink.seek(0)
        output = sink.read().decode("utf-8", "replace")
    if code is None:
        output += f"\ntimed out after {timeout:g} s"
    return code, tail(output)


def log_tail(path: str, limit: int = 2_000) -> str:
    """The end of a setup's output."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 4 * limit))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return tail(text, limit)


def describe(pid: int) -> str:
    """`pid N: its command line` (as far as this machine shows it), the program by its name."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0") if w]
    except OSError:
        return f"pid {pid}"
    if not words:
        return f"pid {pid}"
    line = tail(" ".join([os.path.basename(words[0]), *words[1:]]), 10_000)
    return f"pid {pid}: {line if len(line) <= 300 else line[:297] + '...'}"


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on TCP `port` (/proc/net/tcp and tcp6).
    One regular expression over each table: on a busy machine the tables hold
    thousands of connections, and splitting each line cost 13 ms a look."""
    import re

    line = re.compile(rb"^\s*\d+: [0-9A-F]+:%04X [0-9A-F]+:0000 0A (?:\S+\s+){5}(\d+)" % port, re.MULTILINE)
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, "rb") as fh:
                text = fh.read()
        except OSError:
            continue
        inodes.update(m.decode("ascii") for m in line.findall(text))
    return inodes


def _holds(pid: int, wanted: set[str]) -> bool:
    """Does process `pid` hold one of the sockets `wanted` (as `socket:[INODE]`)?"""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
        except OSError:
            continue
    return False


def _listening(port: int) -> tuple[set[str], list[int]]:
    """The inodes of the sockets listening on TCP `port`, and the processes whose
    open files this machine shows holding one of them (every process looked at)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return inodes, []
    wanted = {f"socket:[{i}]" for i in inodes}
    return inodes, [int(n) for n in os.listdir("/proc") if n.isdigit() and _holds(int(n), wanted)]


def _descendants(pid: int) -> list[int]:
    """`pid` and the processes below it (Linux's /proc/PID/task/TID/children)."""
    out: list[int] = []
    todo = [pid]
    while todo and len(out) < 4096:
        current = todo.pop()
        out.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{current}/task/{tid}/children", encoding="ascii") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
    return out


def listeners(port: int) -> list[str]:
    """The processes listening on TCP `port` (Linux: /proc/net/tcp and each process's sockets)."""
    return [describe(pid) for pid in _listening(port)[1]]


def port_owner(port: int, pgid: int) -> tuple[str, str]:
    """Who listens on `port`, seen from the setup whose group is `pgid`: ("ours", ""),
    ("other", who), ("unknown", why) where the listener's process cannot be seen
    (another user's, a container's proxy, no /proc), or ("none", "") when nothing
    listens. Only "other" is proof that the answer came from someone else. Every
    listener on the port counts, whatever its address: a server left on [::1]:PORT
    answers a client that reaches that address while the setup holds 127.0.0.1:PORT."""
    if not os.path.isdir("/proc/self"):
        return "unknown", "no /proc here to see who listens"
    inodes = _listening_inodes(port)
    if not inodes:
        return "none", ""
    wanted = {f"socket:[{i}]" for i in inodes}
    # The common case first, cheaply: processes below the setup's leader, in its group, hold
    # every listener (every process's open files are looked at only when they do not).
    held: set[str] = set()
    for pid in _descendants(pgid):
        if (_stat(pid) or ["", "", ""])[2:3] == [str(pgid)]:
            held |= _held(pid, wanted)
    if held == wanted:
        return "ours", ""
    others = [
        int(n)
        for n in os.listdir("/proc")
        if n.isdigit() and (_stat(int(n)) or ["", "", ""])[2:3] != [str(pgid)] and _held(int(n), wanted)
    ]
    if others:
        return "other", ", ".join(describe(p) for p in others)
    if held:
        return "ours", ""
    return "unknown", f"the process listening on port {port} cannot be seen from here"


def _held(pid: int, wanted: set[str]) -> set[str]:
    """Which of the sockets `wanted` (as `socket:[INODE]`) process `pid` holds."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    out: set[str] = set()
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link in wanted:
            out.add(link)
    return out


def address(check: Check) -> tuple[str, int] | None:
    """The host and port a ready check reaches (an http URL or a port: check), or
    None for a check with no port (cmd:, file:)."""
    if check.kind == "port":
        return check.host, check.port
    if check.kind != "http":
        return None
    from urllib.parse import urlsplit

    try:
        url = urlsplit(check.target)
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return None
    return url.hostname or "127.0.0.1", port


def port_free(host: str, port: int) -> bool | None:
    """Can `host:port` be bound again, as a server binds it (SO_REUSEADDR, so a
    connection in TIME_WAIT does not count)? None where this machine cannot bind
    that address at all (not one of its own), so no answer can be had."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            return None
    return True


def wait_port_free(host: str, port: int, timeout: float) -> tuple[bool | None, float]:
    """Wait until `host:port` can be bound again, at most `timeout` seconds:
    (free, or None where it cannot be probed here; seconds waited)."""
    start = time.monotonic()
    pause = 0.005
    while True:
        free = port_free(host, port)
        waited = time.monotonic() - start
        if free is not False or waited >= timeout:
            return free, waited
        time.sleep(min(pause, max(0.0, timeout - waited)))
        pause = min(pause * 2, 0.1)


def command_inputs(cwd: str, *commands: str | None) -> list[str]:
    """The files the run's and the setup's commands name (`checks.tree.named_inputs`),
    less the program each starts where it lives outside the project: the interpreter or
    tool (`python3`, a venv's python) is the machine's, recorded with the environment."""
    from todoledger.checks import tree

    root = os.path.abspath(cwd)
    names: list[str] = []
    for command in commands:
        if command is None:
            continue
        found = list(tree.named_inputs(cwd, "cmd", command))
        program = command.split(None, 1)[0].strip("'\"") if command.split() else ""
        if (
            found
            and found[0] == program
            and not os.path.abspath(os.path.join(cwd, program)).startswith(root + os.sep)
        ):
            found = found[1:]
        names += [p for p in found if p not in names]
    return names[: tree.MAX_INPUTS]
