"""`run()`: compute every file change for one agent, then write them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from todoledger import agents as registry
from todoledger.core.model import LedgerError
from todoledger.install import agents
from todoledger.install.files import InstallResult, write_atomic

AGENTS: tuple[str, ...] = registry.NAMES


def _builder(agent: str) -> Callable[[Path, Path, str, bool], agents.Built] | None:
    spec = registry.find(agent)
    if spec is None or spec.name != agent:
        return None
    built: Callable[[Path, Path, str, bool], agents.Built] = getattr(agents, spec.installer)
    return built


def run(
    agent: str,
    *,
    project: Path,
    home: Path,
    dry_run: bool = False,
    command: str = "todoledger",
    gate_stop: bool = False,
) -> InstallResult:
    """Merge todoledger's hooks/MCP entries into `agent`'s config files.

    Every file is parsed and merged before the first one is written, so a
    broken config aborts the whole install with nothing half-done.
    """
    builder = _builder(agent)
    if builder is None:
        raise LedgerError(f"unknown agent {agent!r}; choose one of: {', '.join(AGENTS)}")
    if not command.strip():
        raise LedgerError("the todoledger command must not be empty")
    changes, notes = builder(Path(project), Path(home), command, gate_stop)
    if not dry_run:
        for change in changes:
            if change.changed:
                write_atomic(change.path, change.after)
    return InstallResult(agent, changes, notes, dry_run)
