"""A sweep's ready check: polled until the combination's server answers, not a gate.
Its polls leave no receipt; only what was found at the end is recorded.

An answer counts only while the setup is alive and, where this machine shows who
listens on the ready check's port (Linux's /proc), only from the setup's own
process group: a server left by an earlier configuration, or another runner's,
answers the same URL, and a run measured against it would measure the wrong thing.
"""

from __future__ import annotations

import time

from todoledger.checks.lifecycle import Setup, address, exited, port_owner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.checkspec import Check


def wait_ready(
    ready: Check, timeout: float, interval: float, cwd: str, setup: Setup | None = None
) -> tuple[bool, dict[str, Any], int]:
    """Poll `ready` every `interval` seconds until it holds, the setup exits, a
    signal stops the run, or `timeout` runs out: (held, what was found, ms waited).
    A precondition polled, not a gate: its polls leave no receipt."""
    from todoledger.checks import run as runner
    from todoledger.core.checkspec import parse

    start = time.monotonic()
    polls, last = 0, ""

    def found(result: str, line: str, **more: Any) -> dict[str, Any]:
        return {"result": result, "polls": polls, **more, "line": line}

    def waited_ms() -> int:
        return int((time.monotonic() - start) * 1000)

    where = address(ready)
    while True:
        if runner.stopping() is not None:
            return False, found("interrupted", "interrupted while waiting"), waited_ms()
        if setup is not None:
            code = exited(setup)
            if code is not None:
                line = f"the setup exited (status {code}) before {ready.text()} held"
                return False, found("setup exited", line), waited_ms()
        left = timeout - (time.monotonic() - start)
        check = parse(ready.text(), {**ready.options(), "timeout": max(0.1, min(ready.timeout, left))})
        outcome = runner.run(check, runner.Inputs(cwd=cwd))
        polls += 1
        last = next((ln.strip() for ln in reversed(outcome.output.splitlines()) if ln.strip()), "")[:600]
        waited = time.monotonic() - start
        held = outcome.result == "holds"
        owner = ""
        if held and setup is not None:
            held, owner, why = _answered_by_setup(setup, where)
            last = why or last
        if held:
            line = f"ready: {ready.describe()} held after {polls} poll{'s' if polls > 1 else ''}"
            more: dict[str, Any] = {"waited_s": round(waited, 3)}
            if owner:
                more["owner"] = owner
            return (
                True,
                found("holds", line + (f" ({owner})" if owner.startswith("owner unknown") else ""), **more),
                waited_ms(),
            )
        if waited >= timeout:
            line = f"not ready after {timeout:g} s ({polls} polls of {ready.text()}): {last}"
            return False, found("timed out", line, waited_s=round(waited, 3)), waited_ms()
        pause = min(start + polls * interval - time.monotonic(), timeout - waited)
        if pause > 0:
            time.sleep(pause)


def _answered_by_setup(setup: Setup, where: tuple[str, int] | None) -> tuple[bool, str, str]:
    """Did the answer come from the setup? (counts, owner as recorded, why not).
    The setup must be alive; the listener on the port, where it can be seen,
    must be one of the setup's process group. An owner this machine cannot see
    is recorded as unknown and the answer counts (issue 28's decision)."""
    code = exited(setup)
    if code is not None:
        return False, "", f"the setup exited (status {code})"
    if where is None:
        return True, "setup (no port: not checked)", ""
    port = where[1]
    kind, who = port_owner(port, setup.pid)
    if kind == "other":
        return False, "", f"port {port} is answered by {who}, not by the setup (pid {setup.pid})"
    if kind == "ours":
        return True, "setup", ""
    return True, f"owner unknown: {who or 'nothing seen listening on port ' + str(port)}", ""


def setup_serves(setup: Setup, ready: Check) -> str | None:
    """Before and after each counted run: None while the setup is alive and still owns
    the ready check's port (or its owner cannot be seen), else why the run cannot count."""
    ok, _, why = _answered_by_setup(setup, address(ready))
    return None if ok else why
