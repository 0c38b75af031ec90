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
from pathlib import Path
from typing import Any

from todoledger.core.model import MAX_PAYLOAD_BYTES

AGENTS = {
    "claude-code": "todoledger.hooks.claude_code",
    "claude": "todoledger.hooks.claude_code",
    "gemini": "todoledger.hooks.gemini",
    "opencode": "todoledger.hooks.opencode",
    "codex": "todoledger.hooks.codex",
}


def log_path(cwd: Path | None = None) -> Path:
    from todoledger.store.locate import ledger_path

    folder = ledger_path(cwd).parent
    if folder.is_dir():
        return folder / "hook.log"
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "todoledger" / "hook.log"


def log(message: str, cwd: Path | None = None) -> None:
    try:
        path = log_path(cwd)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
    except Exception:  # a hook that cannot even log still must not fail the agent
        pass


def event_cwd(event: dict[str, Any]) -> Path | None:
    cwd = event.get("cwd")
    return Path(cwd) if isinstance(cwd, str) and cwd and Path(cwd).is_dir() else None


def run_hook(args: list[str], stdin: Any = None, stdout: Any = None) -> int:
    """Read the agent's hook JSON, hand it to the agent's handler, print its
    answer. Always returns 0."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    agent = args[0] if args else ""
    cwd: Path | None = None
    try:
        if agent not in AGENTS:
            log(f"hook: unknown agent {agent!r}; expected one of {', '.join(sorted(AGENTS))}")
            return 0
        raw = stdin.read(MAX_PAYLOAD_BYTES + 1)
        if len(raw) > MAX_PAYLOAD_BYTES:
            log(f"hook {agent}: payload over {MAX_PAYLOAD_BYTES} bytes ignored")
            return 0
        event = json.loads(raw or b"{}")
        if not isinstance(event, dict):
            log(f"hook {agent}: expected a JSON object on stdin")
            return 0
        cwd = event_cwd(event)
        handler: Callable[[dict[str, Any], Path | None], str | None] = importlib.import_module(AGENTS[agent]).handle
        answer = handler(event, cwd)
        if answer:
            stdout.write(answer)
            stdout.flush()
    except Exception as exc:
        log(f"hook {agent}: {type(exc).__name__}: {exc}", cwd)
    return 0
