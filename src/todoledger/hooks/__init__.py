"""Hooks called by agents. They must never break the agent: whatever goes
wrong is logged and the hook exits 0. Only stdlib and the core are imported
here; agents run hooks on every tool call."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable

from todoledger.core.model import MAX_PAYLOAD_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_LOG_BYTES = 1024 * 1024
AGENTS = {
    "claude-code": "todoledger.hooks.claude_code",
    "claude": "todoledger.hooks.claude_code",
    "gemini": "todoledger.hooks.gemini",
    "opencode": "todoledger.hooks.opencode",
    "codex": "todoledger.hooks.codex",
}


def log_path(cwd: str | None = None) -> str:
    from todoledger.store.locate import ledger_file

    folder = os.path.dirname(ledger_file(cwd))
    if os.path.isdir(folder):
        return os.path.join(folder, "hook.log")
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "todoledger", "hook.log")


def log(message: str, cwd: str | None = None) -> None:
    try:
        path = log_path(cwd)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path) and os.path.getsize(path) > MAX_LOG_BYTES:
            os.replace(path, path + ".1")  # hooks run forever: keep one old log, not all of them
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
    except Exception:  # a hook that cannot even log still must not fail the agent
        pass


def event_cwd(event: dict[str, Any]) -> str | None:
    cwd = event.get("cwd")
    return cwd if isinstance(cwd, str) and cwd and os.path.isdir(cwd) else None


def run_hook(args: list[str], stdin: Any = None, stdout: Any = None) -> int:
    """Read the agent's hook JSON, hand it to the agent's handler, print its
    answer. Always returns 0."""
    agent = args[0] if args else ""
    cwd: str | None = None
    try:
        if agent not in AGENTS:
            log(f"hook: unknown agent {agent!r}; expected one of {', '.join(sorted(AGENTS))}")
            return 0
        if stdin is None:
            stdin = sys.stdin.buffer if sys.stdin is not None else None
        raw = stdin.read(MAX_PAYLOAD_BYTES + 1) if stdin is not None else b""
        if len(raw) > MAX_PAYLOAD_BYTES:
            log(f"hook {agent}: payload over {MAX_PAYLOAD_BYTES} bytes ignored")
            return 0
        event = json.loads(raw or b"{}")
        if not isinstance(event, dict):
            log(f"hook {agent}: expected a JSON object on stdin")
            return 0
        cwd = event_cwd(event)
        handler: Callable[[dict[str, Any], str | None], str | None] = importlib.import_module(
            AGENTS[agent]
        ).handle
        answer = handler(event, cwd)
        out = stdout or sys.stdout
        if answer and out is not None:
            out.write(answer)
            out.flush()
    except Exception as exc:
        log(f"hook {agent}: {type(exc).__name__}: {exc}", cwd)
    return 0
