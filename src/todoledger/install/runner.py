"""`run()`: compute every file change for one agent, then write them;
`uninstall()`: take back exactly what `run()` added.

What each install added is recorded per project in the home folder's state
(`~/.local/state/todoledger/installs/`), never in the project: the record
names user config files, and a checkout must not carry one machine's paths.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from todoledger import agents as registry
from todoledger.core.model import LedgerError
from todoledger.install import agents, teach, undo
from todoledger.install.files import FileChange, InstallResult, read_text, write_atomic

AGENTS: tuple[str, ...] = registry.NAMES
ROUTES = teach.ROUTES

Builder = Callable[[Path, Path, str, str, bool, bool], agents.Built]


def _spec(agent: str) -> registry.Agent:
    spec = registry.find(agent)
    if spec is None or spec.name != agent:
        raise LedgerError(f"unknown agent {agent!r}; choose one of: {', '.join(AGENTS)}")
    return spec


def run(
    agent: str,
    *,
    project: Path,
    home: Path,
    dry_run: bool = False,
    command: str = "todoledger",
    route: str = "mcp",
    approve: bool = False,
    gate_stop: bool = False,
) -> InstallResult:
    """Merge todoledger's hooks/MCP entries into `agent`'s config files.

    Every file is parsed and merged before the first one is written, so a
    broken config aborts the whole install with nothing half-done.
    """
    spec = _spec(agent)
    if not command.strip():
        raise LedgerError("the todoledger command must not be empty")
    if route not in ROUTES:
        raise LedgerError(f"unknown route {route!r}; choose one of: {', '.join(ROUTES)}")
    project, home = Path(project), Path(home)
    builder: Builder = getattr(agents, spec.installer)
    changes, notes = builder(project, home, command, route, approve, gate_stop)
    record = _load(home, project)
    mine: dict[str, Any] = record["agents"].get(agent, {"files": {}})
    files: dict[str, Any] = dict(mine["files"])
    # Files an install of another route added and this one does not (say, the
    # MCP server when the route is now `cli`): take them back. Approvals stay.
    produced = {str(c.path) for c in changes}
    for path, entry in mine["files"].items():
        if path not in produced and not entry.get("approval"):
            taken = _take_back(Path(path), entry)
            if taken is not None:
                changes.append(taken)
            del files[path]
        elif path not in produced:
            produced.add(path)  # an approval from an earlier --approve: kept, and its record too
    for change in changes:
        key = str(change.path)
        if change.delete or not change.changed or key not in produced:
            continue
        files[key] = {
            **_remember(change, files.get(key), home, project),
            "agent": agent,
            "approval": change.approval,
        }
    if not dry_run:
        for change in changes:
            _apply(change, files.get(str(change.path)) or mine["files"].get(str(change.path)))
        if agent == "codex" and approve:
            # Codex hashes the hooks as written: approve them once they are on disk.
            trust, note = agents.codex_hooks_trust(project, home)
            if note:
                notes.append(note)
            if trust is not None and trust.changed:
                key = str(trust.path)
                files[key] = {
                    **_remember(trust, files.get(key), home, project),
                    "agent": agent,
                    "approval": True,
                }
                _apply(trust, files[key])
                changes.append(trust)
        record["agents"][agent] = {"route": route, "files": files}
        if not files:
            del record["agents"][agent]
        _save(home, project, record)
    return InstallResult(agent, changes, notes, dry_run)


def uninstall(agent: str, *, project: Path, home: Path, dry_run: bool = False) -> InstallResult:
    """Reverse what `run()` added for `agent` in `project`, and nothing else."""
    _spec(agent)
    project, home = Path(project), Path(home)
    record = _load(home, project)
    mine = record["agents"].get(agent)
    if mine is None:
        return InstallResult(
            agent, [], [f"todoledger install {agent} left no record for {project}: nothing to undo"]
        )
    changes: list[FileChange] = []
    notes: list[str] = []
    kept: dict[str, Any] = {}
    for path, entry in mine["files"].items():
        taken = _take_back(Path(path), entry)
        if taken is None:
            continue
        if taken.summary and taken.summary[0].startswith("!"):
            kept[path] = entry
            notes.append(taken.summary[0][2:])
            continue
        changes.append(taken)
    if not dry_run:
        for change in changes:
            _apply(change, mine["files"].get(str(change.path)))
        if kept:
            record["agents"][agent] = {**mine, "files": kept}
        else:
            del record["agents"][agent]
        _save(home, project, record)
    return InstallResult(agent, changes, notes, dry_run)


def _remember(change: FileChange, old: dict[str, Any] | None, home: Path, project: Path) -> dict[str, Any]:
    """The record of what install added to one file, merged with an earlier record."""
    created = change.created if old is None else bool(old["created"])
    dirs = old["dirs"] if old is not None else _new_dirs(change.path, (home, project))
    if change.kind == "block":
        lead = old["lead"] if old is not None and old.get("kind") == "block" else change.lead
        return {"kind": "block", "created": created, "lead": lead, "dirs": dirs}
    original = "" if created else (change.before or "")
    if old is not None and not created and old.get("kind") == "edit":
        back = undo.reverse(change.before or "", old["hunks"], old["after"])
        if back is None:
            raise LedgerError(
                f"{change.path}: changed since the last install in ways that overlap ours; "
                "run `todoledger uninstall` first (nothing was changed)"
            )
        original = back
    return {
        "kind": "edit",
        "created": created,
        "after": undo.digest(change.after),
        "hunks": undo.hunks(original, change.after),
        "dirs": dirs,
    }


def _take_back(path: Path, entry: dict[str, Any]) -> FileChange | None:
    """The change that removes what install added to `path`; None if the file
    is gone; a summary starting with "!" if it cannot be done safely."""
    current = read_text(path)
    if current is None:
        return None
    spec_name = entry.get("agent")
    if entry["kind"] == "block":
        found = None
        for spec in registry.AGENTS:
            if spec_name in (None, spec.name) and teach.find(current, spec) is not None:
                found = teach.remove(current, spec, entry["lead"])
                break
        if found is None:
            return None
        after = found
    else:
        back = undo.reverse(current, entry["hunks"], entry["after"])
        if back is None:
            return FileChange(
                path,
                current,
                current,
                [f"! {path}: edited since install where todoledger's entries are; remove them by hand"],
            )
        after = back
    delete = bool(entry["created"]) and not after.strip()
    line = f"- {path}: " + ("removed (install created it)" if delete else "todoledger's entries removed")
    return FileChange(path, current, after, [line], delete=delete)


def _apply(change: FileChange, entry: dict[str, Any] | None) -> None:
    if not change.changed:
        return
    if not change.delete:
        write_atomic(change.path, change.after)
        return
    try:
        change.path.unlink()
    except OSError as e:
        raise LedgerError(f"{change.path}: cannot remove: {e.strerror}") from e
    for folder in reversed((entry or {}).get("dirs", [])):
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only if empty: someone else's file keeps it


def _new_dirs(path: Path, roots: tuple[Path, ...]) -> list[str]:
    """Folders above `path` that do not exist yet (install will create them), outermost first."""
    missing: list[str] = []
    folder = path.parent
    while not folder.exists() and folder not in roots and folder.parent != folder:
        missing.append(str(folder))
        folder = folder.parent
    return list(reversed(missing))


def _record_path(home: Path, project: Path) -> Path:
    key = hashlib.sha256(str(project).encode("utf-8")).hexdigest()[:16]
    return home / ".local" / "state" / "todoledger" / "installs" / f"{key}.json"


def _load(home: Path, project: Path) -> dict[str, Any]:
    text = read_text(_record_path(home, project))
    if not text:
        return {"project": str(project), "agents": {}}
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise LedgerError(f"{_record_path(home, project)}: install record is damaged; remove it") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), dict):
        raise LedgerError(f"{_record_path(home, project)}: install record is damaged; remove it")
    return data


def _save(home: Path, project: Path, record: dict[str, Any]) -> None:
    path = _record_path(home, project)
    if not record["agents"]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        folder = path.parent
        while folder != home and folder.parent != folder:  # the record's folders, if now empty
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent
        return
    write_atomic(path, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
