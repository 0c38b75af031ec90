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
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from todoledger import agents as registry
from todoledger.core.model import LedgerError
from todoledger.install import agents, elements, jsonc, needs, owned, teach, undo
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
    panel: bool = False,
    plan: str | None = None,
) -> InstallResult:
    """Merge todoledger's hooks/MCP entries into `agent`'s config files.

    Every file is parsed and merged before the first one is written, so a
    broken config aborts the whole install with nothing half-done. The notes
    end with every need of the route (install/needs.py) that is still unmet.
    """
    spec = _spec(agent)
    if not command.strip():
        raise LedgerError("the todoledger command must not be empty")
    if route not in ROUTES:
        raise LedgerError(f"unknown route {route!r}; choose one of: {', '.join(ROUTES)}")
    project, home = Path(project), Path(home)
    builder: Builder = getattr(agents, spec.installer)
    changes, notes = builder(project, home, command, route, approve, gate_stop)
    target = None
    if panel:
        if agent != "claude-code":
            raise LedgerError("--panel is Claude Code's task panel: it is for claude-code only")
        from todoledger.defaults import default_plan

        more, said, target = agents.panel(project, home, plan or default_plan(), dict(os.environ))
        changes = _merged(changes, more)
        notes += said
    record = _load(home, project)
    mine: dict[str, Any] = record["agents"].get(agent, {"files": {}})
    files: dict[str, Any] = dict(mine["files"])
    built = list(changes)
    probes: dict[str, Any] = {}  # what the agent itself said (Codex: its hooks, once approved)
    # Files an install of another route added and this one does not (say, the
    # MCP server when the route is now `cli`): take them back. Approvals stay.
    produced = {str(c.path) for c in changes}
    for path, entry in mine["files"].items():
        if path not in produced and not entry.get("approval"):
            taken = _take_back(Path(path), entry)
            if taken is not None:
                changes.append(taken)
                notes += _said(taken)
            if taken is not None and taken.kept:
                files[path] = {**entry, "elements": taken.kept}
            else:
                del files[path]
        elif path not in produced:
            produced.add(path)  # an approval from an earlier --approve: kept, and its record too
    for change in built:
        key = str(change.path)
        old = files.get(key)
        _drop_stale(change, old)
        if change.changed or (old is None and any(added for _, added in change.ensured)):
            files[key] = {
                **_remember(change, old, home, project),
                "agent": agent,
                "approval": change.approval or bool(old and old.get("approval")),
            }
    if not dry_run:
        for change in changes:
            _apply(change, files.get(str(change.path)) or mine["files"].get(str(change.path)))
        if agent == "codex" and approve:
            # Codex hashes the hooks as written: approve them once they are on disk.
            trust, note, listed = agents.codex_hooks_trust(project, home)
            if listed is not None:
                probes["codex_hooks"] = listed
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
        # What is installed: opencode gets no Stop gate (it has no hook that can block a stop).
        gated = gate_stop and agent != "opencode"
        kept: dict[str, Any] = {"route": route, "gate_stop": gated, "files": files}
        if target is not None:
            kept["panel"] = _make_folder(target, mine.get("panel"))
        elif mine.get("panel"):
            notes += _take_folder(mine["panel"])
        record["agents"][agent] = kept
        if not files:
            del record["agents"][agent]
        _save(home, project, record)
    overlay = {} if not dry_run else {c.path: (None if c.delete else c.after) for c in changes}
    seen = needs.Seen(project, home, dict(os.environ), route, gate_stop, overlay, probes)
    notes += [u.note() for u in needs.unmet(agent, seen)]
    return InstallResult(agent, changes, notes, dry_run)


def installed(home: Path, project: Path) -> dict[str, dict[str, Any]]:
    """The agents install recorded for `project`: each one's route and --gate-stop."""
    try:
        record = _load(home, project)
    except LedgerError:
        return {}
    return {
        name: {
            "route": entry.get("route", "mcp"),
            "gate_stop": bool(entry.get("gate_stop")),
            "panel": entry.get("panel"),
        }
        for name, entry in record["agents"].items()
        if isinstance(entry, dict)
    }


def uninstall(agent: str, *, project: Path, home: Path, dry_run: bool = False) -> InstallResult:
    """Reverse what `run()` added for `agent` in `project`, and nothing else. An
    entry of ours that someone changed since is named and left; its record stays,
    so a second uninstall says the same."""
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
        notes += _said(taken)
        if taken.kept:
            kept[path] = {**entry, "elements": taken.kept, "hunks": None}
        if taken.changed:
            changes.append(taken)
    if mine.get("panel"):
        notes += _take_folder(mine["panel"], dry_run)
    if not dry_run:
        for change in changes:
            _apply(change, mine["files"].get(str(change.path)))
        if kept:
            record["agents"][agent] = {**mine, "files": kept}
        else:
            del record["agents"][agent]
        _save(home, project, record)
    return InstallResult(agent, changes, notes, dry_run)


def _merged(changes: list[FileChange], more: list[FileChange]) -> list[FileChange]:
    """`more` joined to `changes`; two edits of one file (--approve and --panel both
    write settings.local.json) become one: the second applied to the first's text."""
    out = list(changes)
    for extra in more:
        twin = next((c for c in out if c.path == extra.path), None)
        if twin is None:
            out.append(extra)
            continue
        from todoledger.install.jsonedit import JsonDoc

        doc = JsonDoc(twin.after, str(twin.path))  # the extra's members, put on the twin's text
        for element, _added in extra.ensured:
            if element["type"] == "member" and doc.find(element["path"]) is None:
                doc.require(element["path"][:-1], "object")
                doc.set_path(element["path"], element["value"])
        twin.after = doc.text
        twin.summary += extra.summary
        twin.ensured += extra.ensured
    return out


def _make_folder(target: Any, earlier: dict[str, Any] | None) -> dict[str, Any]:
    """The list's folder, made now: Claude Code shows external rows only if it
    exists when a session starts. The folders made here are recorded, so that
    uninstall removes them (if nothing but Claude's own lock files is in them)."""
    folder = Path(target.folder)
    made = list((earlier or {}).get("made") or []) if (earlier or {}).get("folder") == target.folder else []
    missing = _new_dirs(folder / "x", (folder.parent.parent.parent,))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LedgerError(f"{folder}: cannot create the task list's folder: {e.strerror}") from e
    made += [d for d in missing if d not in made]
    return {"list": target.list_id, "folder": target.folder, "plan": target.plan, "made": made}


def _take_folder(panel: dict[str, Any], dry_run: bool = False) -> list[str]:
    """Remove the folders install made for the task list, if they hold no task;
    a list with tasks in it stays (Claude Code's, and the model's), and is named."""
    folder = Path(panel.get("folder") or "")
    made = [Path(d) for d in panel.get("made") or []]
    if not made:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    rows = [n for n in names if n.endswith(".json") and not n.startswith(".")]
    if rows:
        return [
            f"{folder}: kept: Claude Code's task list holds {len(rows)} task files (delete the folder if unwanted)"
        ]
    if dry_run:
        return []
    for name in names:  # only Claude Code's own `.lock`, `.highwatermark` and temporary files
        with contextlib.suppress(OSError):
            os.remove(folder / name)
    for made_dir in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(made_dir)
    return []


def _said(taken: FileChange) -> list[str]:
    """The "!" lines of a take-back, moved from its summary to the notes."""
    said = [line[2:] for line in taken.summary if line.startswith("!")]
    taken.summary = [line for line in taken.summary if not line.startswith("!")]
    return said


def _drop_stale(change: FileChange, old: dict[str, Any] | None) -> None:
    """Take out of `change` our elements of an earlier install that this one no
    longer writes (the Bash rules of a route left, a command that moved)."""
    if old is None or not old.get("elements") or change.fmt not in ("json", "toml"):
        return
    wanted = {elements.identity(e) for e, _ in change.ensured}
    stale = [e for e in old["elements"] if elements.identity(e) not in wanted]
    if not stale:
        return
    take = owned.take_json if change.fmt == "json" else owned.take_toml
    taken = take(change.after, str(change.path), stale, [])
    change.after = taken.text
    change.summary += [f"- {label}: removed (this install no longer writes it)" for label in taken.removed]


def _remember(change: FileChange, old: dict[str, Any] | None, home: Path, project: Path) -> dict[str, Any]:
    """The record of what install added to one file, merged with an earlier record:
    its elements (found again by content), the containers it created, and the
    edit's hunks (an untouched file goes back byte for byte)."""
    created = change.created if old is None else bool(old["created"])
    dirs = old["dirs"] if old is not None else _new_dirs(change.path, (home, project))
    before_elements = {elements.identity(e): e for e in (old or {}).get("elements") or []}
    merged: dict[str, Any] = {}
    for e, added in change.ensured:
        key = elements.identity(e)
        if added:
            earlier = before_elements.get(key)
            if e["type"] == "hook" and earlier is not None:
                e = {**e, "group_created": bool(e["group_created"] or earlier.get("group_created"))}
            merged[key] = e
        elif key in before_elements:
            merged[key] = before_elements[key]
    entry: dict[str, Any] = {
        "fmt": change.fmt,
        "created": created,
        "dirs": dirs,
        "elements": list(merged.values()),
    }
    if change.fmt == "block":
        lead = old["lead"] if old is not None and old.get("fmt") == "block" else change.lead
        return {**entry, "kind": "block", "lead": lead}
    if change.fmt == "file":
        return {**entry, "kind": "file"}
    containers = list((old or {}).get("containers") or [])
    for path in owned.created_containers(
        _value(change.fmt, change.before), _value(change.fmt, change.after), entry["elements"]
    ):
        if path not in containers:
            containers.append(path)
    original: str | None = "" if created else (change.before or "")
    if old is not None and not created and old.get("hunks"):
        original = undo.reverse(change.before or "", old["hunks"], old["after"])
    elif old is not None and not created:
        original = None  # an earlier uninstall found it edited: no byte-exact way back
    return {
        **entry,
        "kind": "edit",
        "containers": containers,
        "after": undo.digest(change.after),
        "hunks": undo.hunks(original, change.after) if original is not None else None,
    }


def _value(fmt: str, text: str | None) -> Any:
    if not text or not text.strip():
        return {}
    if fmt == "toml":
        try:
            return tomllib.loads(text.lstrip("\ufeff"))
        except tomllib.TOMLDecodeError:
            return {}
    try:
        return jsonc.parse(text).value
    except jsonc.JsoncError:
        return {}


def _take_back(path: Path, entry: dict[str, Any]) -> FileChange | None:
    """The change that removes what install added to `path`; None if the file is
    gone. Ours that someone changed since stays: `kept`, and a "!" summary line."""
    current = read_text(path)
    if current is None:
        return None
    fmt = entry.get("fmt") or ("block" if entry.get("kind") == "block" else "legacy")
    ours = list(entry.get("elements") or [])
    kept: list[dict[str, Any]] = []
    removed: list[str] = []
    if fmt == "block":
        found = _block_back(current, entry, ours)
        if found is None:
            return None
        after, kept = found
    elif fmt == "file":
        if ours and elements.digest(current) != ours[0]["digest"]:
            after, kept = current, ours
        else:
            after = ""
    elif entry.get("hunks") and undo.digest(current) == entry.get("after"):
        back = undo.reverse(current, entry["hunks"], entry["after"])  # as install left it: byte for byte
        after = back if back is not None else current
    elif fmt in ("json", "toml"):
        take = owned.take_json if fmt == "json" else owned.take_toml
        try:
            taken = take(current, str(path), ours, entry.get("containers") or [])
        except LedgerError:  # no longer parses: nothing is touched, everything is named
            taken = owned.Taken(current, changed=ours)
        after, kept, removed = taken.text, taken.changed, taken.removed
    else:  # a record from before elements were kept: its hunks, or by hand
        back = undo.reverse(current, entry.get("hunks") or [], entry.get("after") or "")
        if back is None:
            return FileChange(
                path,
                current,
                current,
                [f"! {path}: edited since install where todoledger's entries are; remove them by hand"],
            )
        after = back
    lines = [
        f"! {path}: {e['label']}: todoledger's, changed since install; left as it is "
        "(remove it by hand, or put it back as it was and run uninstall again)"
        for e in kept
    ]
    delete = bool(entry.get("created")) and after.strip() in ("", "{}") and not kept
    lines[:0] = [f"- {label}" for label in removed]
    if delete:
        lines.append("- the file: install created it, and nothing else is in it")
    elif after != current and not removed:
        lines.append(f"- todoledger's {'block' if fmt == 'block' else 'entries'}")
    change = FileChange(path, current, after, lines, delete=delete, fmt=fmt)
    change.kept = kept
    return change


def _block_back(
    current: str, entry: dict[str, Any], ours: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]] | None:
    spec_name = entry.get("agent")
    for spec in registry.AGENTS:
        if spec_name not in (None, spec.name):
            continue
        span = teach.find(current, spec)
        if span is None:
            continue
        recorded = next((e["text"] for e in ours if e["type"] == "block"), None)
        found = current[span[0] : span[1]]
        if recorded is not None and found.replace("\r\n", "\n") != recorded.replace("\r\n", "\n"):
            return current, [e for e in ours if e["type"] == "block"]
        removed = teach.remove(current, spec, entry.get("lead", ""))
        return (removed if removed is not None else current), []
    return None


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
