"""Merge our entries (an MCP server, a hook handler) into a JSON config.

Ours is recognised by name (server `todoledger`) or by a hook command of the
form `<todoledger> hook ...`, so a re-install finds and updates its own
entry instead of adding a second one, and never touches anyone else's.
Each function returns one summary line: `+` added, `~` updated, `=` already
installed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from todoledger.install.jsonedit import JsonDoc

_OUR_NAMES = ("todoledger", "todoledger.exe")


@dataclass(frozen=True)
class HookSpec:
    event: str
    matcher: str | None  # None: the event takes no matcher (fires always)
    handler: dict[str, Any]
    # Keys whose existing value wins: a user who raised a timeout keeps it.
    keep: frozenset[str] = field(default_factory=lambda: frozenset({"timeout"}))


def same(a: Any, b: Any) -> bool:
    """JSON equality; plain `==` would equate `true` with `1`."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def is_our_command(command: object, exe: str) -> bool:
    """True for `todoledger hook <agent>`, whatever path or agent name it has."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    if len(argv) < 2 or argv[1] != "hook":
        return False
    return argv[0] == exe or PurePath(argv[0]).name in _OUR_NAMES


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
        return f"+ {label}: {describe}"
    return kept_summary(label, current.value, entry, keep)


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
        return f"+ {label}: {command}", []
    found = _find_handler(groups.value, exe)
    if found is None:
        doc.append(["hooks", spec.event], group)
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


def _find_handler(groups: list[Any], exe: str) -> tuple[int, int] | None:
    for gi, group in enumerate(groups):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            continue
        for hi, handler in enumerate(handlers):
            if _is_ours(handler, exe):
                return gi, hi
    return None
