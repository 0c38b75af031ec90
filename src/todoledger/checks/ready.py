"""A sweep's ready check: polled until the combination's server answers, not a gate.
Its polls leave no receipt; only what was found at the end is recorded."""

from __future__ import annotations

import time

from todoledger.checks.lifecycle import Setup, exited

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
        if outcome.result == "holds":
            line = f"ready: {ready.describe()} held after {polls} poll{'s' if polls > 1 else ''}"
            return True, found("holds", line, waited_s=round(waited, 3)), waited_ms()
        if waited >= timeout:
            line = f"not ready after {timeout:g} s ({polls} polls of {ready.text()}): {last}"
            return False, found("timed out", line, waited_s=round(waited, 3)), waited_ms()
        pause = min(start + polls * interval - time.monotonic(), timeout - waited)
        if pause > 0:
            time.sleep(pause)
