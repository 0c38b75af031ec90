"""Merge our entries (an MCP server, a hook handler) into a JSON config.

Ours is recognised by name (server `todoledger`) or by a hook command of the
form `<todoledger> hook ...`, so a re-install finds and updates its own
entry instead of adding a second one, and never touches anyone else's.
Each function returns one summary line: `+` added, `~` updated, `=` already
installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from todoledger.install import elements as owned
from todoledger.install.elements import is_our_command, role, same
from todoledger.install.jsonedit import JsonDoc


@dataclass(frozen=True)
class HookSpec:
    event: str
    matcher: str | None  # None: the event takes no matcher (fires always)
    handler: dict[str, Any]
    # Keys whose existing value wins: a user who raised a timeout keeps it.
    keep: frozenset[str] = field(default_factory=lambda: frozenset({"timeout"}))


def ensure_entry(
    doc: JsonDoc, path: list[str], entry: dict[str, Any], describe: str, keep: frozenset[str] = frozenset()
) -> str:
    """Add `entry` at `path` unless an entry is there already. An existing one
    is the user's choice (a remote server, a pinned plan, `enabled: false`):
    it is kept as it is and the summary says how it differs."""
    label = ".".join(path)
    current = doc.require(path, "object")
    if current is None:
        doc.set_path(path, entry)
        doc.ensured.append((owned.member(path, entry), True))
        return f"+ {label}: {describe}"
    differs = [
        k
        for k, v in entry.items()
        if k not in keep and not (k in current.value and same(current.value[k], v))
    ]
    old = current.value.get("command")
    if differs == ["command"] and isinstance(old, str) and _is_todoledger(old):
        # Only the command differs, and it names a todoledger: a former install's (or one no
        # longer there, doctor's PATH fix). Updated, so that the fix converges (issue 31);
        # an entry the user changed otherwise (a remote server, args) stays theirs.
        doc.set_path([*path, "command"], entry["command"])
        doc.ensured.append((owned.member(path, {**current.value, "command": entry["command"]}), True))
        return f"~ {label}: updated command ({entry['command']})"
    doc.ensured.append((owned.member(path, current.value), False))
    return kept_summary(label, current.value, entry, keep)


def _is_todoledger(command: str) -> bool:
    name = command.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("todoledger", "todoledger.exe")


def ensure_items(doc: JsonDoc, path: list[str], values: Sequence[str]) -> list[str]:
    """Each of `values` in the list at `path` (created if missing); the rest of the list stays."""
    label = ".".join(path)
    lines: list[str] = []
    for value in values:
        found = doc.require(path, "array")
        if found is not None and any(same(v, value) for v in found.value):
            doc.ensured.append((owned.item(path, value), False))
            lines.append(f"= {label}: already has {value}")
            continue
        if found is None:
            doc.set_path(path, [value])
        else:
            doc.append(path, value)
        doc.ensured.append((owned.item(path, value), True))
        lines.append(f"+ {label}: {value}")
    return lines


def kept_summary(
    label: str, current: dict[str, Any], entry: dict[str, Any], keep: frozenset[str] = frozenset()
) -> str:
    differs = [k for k, v in entry.items() if k not in keep and not (k in current and same(current[k], v))]
    if not differs:
        return f"= {label}: already installed"
    return f"= {label}: kept as configured (differs from the default in {', '.join(differs)})"


def ensure_hook(doc: JsonDoc, spec: HookSpec, exe: str) -> tuple[str, list[str]]:
    """Add or update our handler for one hook event; returns (summary, notes)."""
    label = f"hooks.{spec.event}" + (f"[{spec.matcher}]" if spec.matcher is not None else "")
    command = spec.handler["command"]
    group: dict[str, Any] = {"hooks": [spec.handler]}
    if spec.matcher is not None:
        group = {"matcher": spec.matcher, **group}
    doc.require(["hooks"], "object")
    groups = doc.require(["hooks", spec.event], "array")
    if groups is None:
        doc.set_path(["hooks", spec.event], [group])
        doc.ensured.append((owned.hook(spec.event, spec.matcher, spec.handler, True), True))
        return f"+ {label}: {command}", []
    found = _find_handler(groups.value, exe, command)
    if found is None:
        doc.append(["hooks", spec.event], group)
        doc.ensured.append((owned.hook(spec.event, spec.matcher, spec.handler, True), True))
        return f"+ {label}: {command}", []

    gi, hi = found
    existing_group = groups.value[gi]
    changed: list[str] = []
    notes: list[str] = []
    if spec.matcher is not None and existing_group.get("matcher") != spec.matcher:
        others = [h for h in existing_group["hooks"] if not _is_ours(h, exe)]
        if others:
            # Changing a shared matcher would change when someone else's hook runs.
            notes.append(
                f"{doc.label}: our {spec.event} hook shares a group (matcher "
                f"{existing_group.get('matcher')!r}) with other hooks; left its matcher as is, "
                f"todoledger expects {spec.matcher!r}"
            )
        else:
            doc.set_path(["hooks", spec.event, gi, "matcher"], spec.matcher)
            changed.append("matcher")
    handler_path: list[str | int] = ["hooks", spec.event, gi, "hooks", hi]
    changed += _update_keys(doc, handler_path, existing_group["hooks"][hi], spec.handler, spec.keep)
    now = doc.find(handler_path)
    assert now is not None
    matcher = doc.find(["hooks", spec.event, gi, "matcher"])
    doc.ensured.append(
        (owned.hook(spec.event, matcher.value if matcher else None, now.value, False), bool(changed))
    )
    if not changed:
        return f"= {label}: already installed", notes
    return f"~ {label}: updated {', '.join(changed)} ({command})", notes


def _update_keys(
    doc: JsonDoc,
    path: Sequence[str | int],
    current: dict[str, Any],
    entry: dict[str, Any],
    keep: frozenset[str],
) -> list[str]:
    changed = []
    for key, want in entry.items():
        if key in current and (key in keep or same(current[key], want)):
            continue
        doc.set_path([*path, key], want)
        changed.append(key)
    return changed


def _is_ours(handler: object, exe: str) -> bool:
    return isinstance(handler, dict) and is_our_command(handler.get("command"), exe)


def _find_handler(groups: list[Any], exe: str, command: str) -> tuple[int, int] | None:
    """Our handler of the same role (`hook X --screen` is not `hook X`); else any of ours."""
    mine = [
        (gi, hi, handler)
        for gi, group in enumerate(groups)
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hi, handler in enumerate(group["hooks"])
        if _is_ours(handler, exe)
    ]
    for gi, hi, handler in mine:
        if role(str(handler.get("command"))) == role(command):
            return gi, hi
    return (mine[0][0], mine[0][1]) if mine else None
