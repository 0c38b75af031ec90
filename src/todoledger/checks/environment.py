"""Where a sweep's runs ran: the host, Python, the git state (for display: a
run goes stale by its inputs, not by the commit) and, where `nvidia-smi`
exists, each GPU's model and driver. Taken once per `sweep run`; every run
records it with its own command and parameters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TIMEOUT = 20


def snapshot(cwd: str) -> dict[str, Any]:
    """The machine and tree a sweep runs on now."""
    import platform

    from todoledger.checks.lifecycle import host

    return {
        "host": host(),
        "python": sys.version.split()[0],
        "platform": platform.platform(terse=True),
        "git": git(cwd),
        "gpus": gpus(),
    }


def git(cwd: str) -> dict[str, Any] | None:
    """The commit and whether the tree differs from it, or None outside git."""
    head = _out(["git", "rev-parse", "HEAD"], cwd)
    if head is None:
        return None
    status = _out(["git", "status", "--porcelain", "--untracked-files=no"], cwd)
    return {"commit": head.strip(), "dirty": bool(status and status.strip())}


def gpus() -> list[dict[str, str]] | None:
    """Each GPU's name, driver and memory, per `nvidia-smi`; None where there is none."""
    if shutil.which("nvidia-smi") is None:
        return None
    text = _out(
        ["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader"],
        os.getcwd(),
    )
    if text is None:
        return []
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            out.append({"index": parts[0], "name": parts[1], "driver": parts[2], "memory": parts[3]})
    return out


def _out(cmd: list[str], cwd: str) -> str | None:
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, timeout=_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None
