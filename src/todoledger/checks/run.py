"""Run one check against its real target, within its timeout.

`holds` and `fails` are answers from the target; `error` means the check
could not be evaluated (a missing disk path, no metric recorded, a command
that cannot start). Output is kept as a bounded tail.

A `cmd:` check runs in its own process group, and dies with whoever runs it:
`interruptible()` (what `verify` runs under) ends every live group on SIGTERM
or SIGINT and their receipts say so; where no handler can run (SIGKILL), the
group's leader gets SIGTERM from the kernel when its parent dies
(PR_SET_PDEATHSIG on Linux) and its trap kills the whole group.
"""

from __future__ import annotations

# Network, process and thread modules are imported by the kinds that use them:
# `done` with a file: gate runs on the command line's start-up budget.
import os
import re
import time
from collections.abc import Callable, Sequence

from todoledger.core.checkspec import Check, compare, format_size
from todoledger.core.record import dataclass
from todoledger.core.verification import tail

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, TypeVar

    K = TypeVar("K")

MAX_SCAN_BYTES = 1 << 20  # an expect regex looks at the last MiB of output / first MiB of a body
MAX_WORKERS = 64
# The group's leader: on SIGTERM (its parent died, or verify ended it) it kills its whole group.
_LEADER = 'trap "trap - TERM; kill -KILL 0" TERM; /bin/sh -c "$1" & wait $!'
_live: dict[int, Any] = {}  # pid (= process group) -> Popen, of the cmd: checks running now
_stopped: list[str] = []  # the signal that stopped this process's checks, once one did


def _parent_death_signal() -> Callable[[], None] | None:
    """A preexec function asking the kernel to SIGTERM the child when this thread
    ends (Linux); None elsewhere."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, 15, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGTERM
        if os.getppid() != parent:  # the parent died before the request took hold
            os._exit(143)

    return preexec


class interruptible:
    """While it is entered (in the main thread), SIGTERM and SIGINT end every
    running check's process group; the checks' receipts say they were
    interrupted, and `stopped` names the signal afterwards."""

    def __init__(self) -> None:
        self.saved: dict[int, Any] = {}
        self.stopped: str | None = None

    def __enter__(self) -> interruptible:
        import signal
        import threading

        _stopped.clear()
        if threading.current_thread() is not threading.main_thread():
            return self
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.saved[sig] = signal.signal(sig, _stop)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.stopped = _stopped[0] if _stopped else None


def stopping() -> str | None:
    """The signal that stopped this process's checks (inside `interruptible`), or None."""
    return _stopped[0] if _stopped else None


def carry_on() -> None:
    """Let checks run again after a stop: what a sweep's clean check needs once
    the setup that a SIGINT interrupted has been torn down."""
    _stopped.clear()


def _stop(signum: int, frame: object) -> None:
    import signal

    if not _stopped:
        _stopped.append(signal.Signals(signum).name)
    for pid in list(_live):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:  # already gone
            continue


@dataclass(frozen=True)
class Outcome:
    result: str  # holds | fails | error
    code: int | None
    duration_ms: int
    output: str


@dataclass(frozen=True)
class Inputs:
    """What a check needs from the ledger: where to run, the item's start, metric values."""

    cwd: str
    since: float | None = None  # epoch seconds the item started (file: newer)
    value: float | None = None  # metric: the item's value
    baseline: float | None = None  # metric: the baseline item's value
    typed: float | None = None  # metric: a value only typed (not measured, not accepted): shown, never passed
    path: str | None = None  # cmd: the PATH its writer had (None: the caller's)


# What makes a command run other code than its text says: the dynamic loader's
# preloads, a shell's start-up files and exported functions, interpreters'
# search paths, git's repository and config overrides. A `cmd:` check runs
# without them, with its writer's PATH, so that whoever runs it (an agent
# claiming the item) cannot steer what a person's check executes. The rest of
# the caller's environment is kept (a check may read a variable it needs).
STEERING = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "DYLD_FRAMEWORK_PATH",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "CDPATH",
        "IFS",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PYTHONINSPECT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_EXEC_PATH",
    }
)
STEERING_PREFIXES = ("BASH_FUNC_", "GIT_CONFIG")


def check_env(path: str | None) -> dict[str, str]:
    """The environment a `cmd:` check runs in (see STEERING)."""
    env = {k: v for k, v in os.environ.items() if k not in STEERING and not k.startswith(STEERING_PREFIXES)}
    if path is not None:
        env["PATH"] = path
    return env


# The kinds that look at the folder they run in.
IN_A_FOLDER = ("cmd", "file", "disk")


def run(check: Check, inputs: Inputs) -> Outcome:
    started = time.monotonic()
    if check.kind in IN_A_FOLDER and not os.path.isdir(inputs.cwd):
        why = f"{inputs.cwd}: the folder this check was written in is not here (it runs only there)"
        return Outcome("error", None, 0, why)
    try:
        result, code, output = _KINDS[check.kind](check, inputs)
    except Exception as exc:  # a check never takes the caller down: it reports that it could not run
        result, code, output = "error", None, f"{type(exc).__name__}: {exc}"
    return Outcome(result, code, int((time.monotonic() - started) * 1000), tail(output))


def run_many(
    jobs: Sequence[tuple[K, Check, Inputs]],
    on_done: Callable[[K, Outcome], None] | None = None,
    workers: int = MAX_WORKERS,
) -> dict[K, Outcome]:
    """Run checks in parallel threads (they wait on processes and sockets, not the GIL)."""
    out: dict[K, Outcome] = {}
    if len(jobs) == 1:  # no thread for a single check (a gate)
        key, check, inputs = jobs[0]
        out[key] = run(check, inputs)
        if on_done is not None:
            on_done(key, out[key])
        return out
    if not jobs:
        return out
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        futures = {pool.submit(run, check, inputs): key for key, check, inputs in jobs}
        for future in as_completed(futures):
            key = futures[future]
            out[key] = future.result()
            if on_done is not None:
                on_done(key, out[key])
    return out


def _cmd(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    import subprocess
    import tempfile

    if _stopped:
        return "error", None, f"interrupted: verify was stopped ({_stopped[0]}) before this check ran"
    with tempfile.TemporaryFile() as sink:
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", _LEADER, "sh", check.target],
                cwd=inputs.cwd,
                env=check_env(inputs.path),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout kills its children too
                preexec_fn=_parent_death_signal(),
            )
        except OSError as exc:
            return "error", None, f"cannot start: {exc.strerror}"
        _live[proc.pid] = proc
        if _stopped:  # stopped while it started, before the handler could see it
            _kill_group(proc)
        try:
            code = proc.wait(timeout=check.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            code, timed_out = proc.wait(), True
        finally:
            _live.pop(proc.pid, None)
        output = _read_tail(sink)
    if _stopped:
        return (
            "error",
            None,
            output + f"\ninterrupted: verify was stopped ({_stopped[0]}); the check's processes were ended",
        )
    if timed_out:
        return "fails", None, output + f"\ntimed out after {check.timeout:g} s"
    if code != 0:
        return "fails", code, output
    if check.expect is not None and not re.search(check.expect, output, re.MULTILINE):
        return "fails", code, output + f"\noutput does not match {check.expect!r}"
    return "holds", code, output


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _read_tail(sink: Any) -> str:
    size = sink.seek(0, os.SEEK_END)
    sink.seek(max(0, size - MAX_SCAN_BYTES))
    return str(sink.read().decode("utf-8", "replace"))


def _http(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    import http.client
    import ssl

    scheme, _, rest = check.target.partition("://")
    hostport, slash, path = rest.partition("/")
    path = slash + path if slash else "/"
    host, port = hostport, None
    if hostport.rsplit(":", 1)[-1].isdigit() and not hostport.endswith("]"):
        host, port_text = hostport.rsplit(":", 1)
        port = int(port_text)
    host = host.strip("[]")
    conn: http.client.HTTPConnection
    if scheme == "https":
        conn = http.client.HTTPSConnection(
            host, port, timeout=check.timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=check.timeout)
    try:
        conn.request("GET", path, headers={"User-Agent": "todoledger-check", "Connection": "close"})
        response = conn.getresponse()
        body = response.read(MAX_SCAN_BYTES).decode("utf-8", "replace")
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        # Refused, timed out, reset: the server is not there to answer; that is the check failing.
        return "fails", None, f"no answer from {check.target}: {_reason(exc)}"
    finally:
        conn.close()
    ok = status == check.status if check.status is not None else 200 <= status < 300
    if not ok:
        wanted = check.status if check.status is not None else "2xx"
        return "fails", status, f"{body}\nHTTP {status} (wanted {wanted})"
    if check.expect is not None and not re.search(check.expect, body, re.MULTILINE):
        return "fails", status, f"{body}\nHTTP {status}; the body does not match {check.expect!r}"
    # The verdict goes last: the one-line answers show the last line.
    return "holds", status, f"{body}\nHTTP {status}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _port(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    import socket

    try:
        with socket.create_connection((check.host, check.port), timeout=check.timeout):
            if check.closed:
                from todoledger.checks.lifecycle import listeners

                who = "; ".join(listeners(check.port)) or "its process is not visible from here"
                return "fails", None, f"a process still listens on {check.target} ({who})"
            return "holds", None, f"{check.target} accepts connections"
    except socket.gaierror as exc:
        return "error", None, f"cannot resolve {check.host}: {exc.strerror}"
    except OSError as exc:
        if check.closed:
            return "holds", None, f"nothing listens on {check.target} ({_reason(exc)})"
        return "fails", None, f"{check.target}: {_reason(exc)}"


def _disk(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    path = os.path.join(inputs.cwd, os.path.expanduser(check.target))
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return "error", None, f"{check.target}: {exc.strerror}"
    free = st.f_bavail * st.f_frsize  # what an unprivileged writer can use, as df's "Avail"
    assert check.min_bytes is not None
    line = f"{format_size(free)} free at {check.target} ({free} bytes); needs {check.size} ({check.min_bytes} bytes)"
    return ("holds" if free >= check.min_bytes else "fails"), None, line


def _file(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    path = os.path.join(inputs.cwd, os.path.expanduser(check.target))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "fails", None, f"{check.target}: no such file"
    except OSError as exc:
        return "error", None, f"{check.target}: {exc.strerror}"
    if check.nonempty and st.st_size == 0:
        return "fails", None, f"{check.target} is empty"
    if check.newer:
        if inputs.since is None:
            return "error", None, f"{check.target}: the item has no start time to compare with"
        if st.st_mtime <= inputs.since:
            return "fails", None, f"{check.target} was not written since the item started"
    return "holds", None, f"{check.target} exists ({st.st_size} bytes)"


def _metric(check: Check, inputs: Inputs) -> tuple[str, int | None, str]:
    typed = inputs.value is None and inputs.typed is not None
    if inputs.value is None and not typed:
        return (
            "error",
            None,
            f"no {check.target} measured on this item (a sweep run measures it; a typed value counts once a person accepts it)",
        )
    if check.ratio is not None:
        if inputs.baseline is None:
            return "error", None, f"the baseline {check.baseline} has no {check.target} recorded"
        threshold = check.ratio * inputs.baseline
    else:
        assert check.value is not None
        threshold = check.value
    assert check.op is not None
    value = inputs.typed if typed else inputs.value
    assert value is not None
    ok = compare(value, check.op, threshold)
    if typed:
        # The number is compared, but it was typed: the gate's state says `typed`, never
        # verified (core/verification.py), until it is measured or a person accepts it.
        return (
            ("holds" if ok else "fails"),
            None,
            f"{check.target} = {value:g} was typed, not measured (needs {check.op} {threshold:g}): it counts"
            f" as typed until a sweep run measures it or a person accepts it (todoledger accept-metric ITEM"
            f" {check.target})",
        )
    return (
        ("holds" if ok else "fails"),
        None,
        f"{check.target} = {value:g} (needs {check.op} {threshold:g})",
    )


_KINDS: dict[str, Callable[[Check, Inputs], tuple[str, int | None, str]]] = {
    "cmd": _cmd,
    "http": _http,
    "port": _port,
    "disk": _disk,
    "file": _file,
    "metric": _metric,
}
