"""The elements todoledger writes into agents' config files, as install records
them and uninstall finds them again by content (install/owned.py)."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

_OUR_NAMES = ("todoledger", "todoledger.exe")

Element = dict[str, Any]
Path_ = list[str | int]


def member(path: Sequence[str], value: Any, label: str | None = None) -> Element:
    return {"type": "member", "path": list(path), "value": value, "label": label or ".".join(path)}


def item(path: Sequence[str], value: Any, label: str | None = None) -> Element:
    return {
        "type": "item",
        "path": list(path),
        "value": value,
        "label": label or f"{'.'.join(path)}: {value}",
    }


def hook(event: str, matcher: str | None, handler: dict[str, Any], group_created: bool) -> Element:
    label = f"hooks.{event}" + (f"[{matcher}]" if matcher is not None else "")
    return {
        "type": "hook",
        "event": event,
        "matcher": matcher,
        "value": handler,
        "group_created": group_created,
        "label": f"{label}: {handler.get('command')}",
    }


def block(agent: str, text: str) -> Element:
    return {"type": "block", "agent": agent, "text": text, "label": f"todoledger block ({agent})"}


def whole_file(text: str, label: str) -> Element:
    return {"type": "file", "digest": digest(text), "label": label}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity(e: Element) -> str:
    """What makes two records the same element (a re-install updates it in place)."""
    kind = e["type"]
    if kind == "member":
        return json.dumps(["member", e["path"]])
    if kind == "item":
        return json.dumps(["item", e["path"], e["value"]], sort_keys=True)
    if kind == "hook":
        return json.dumps(["hook", e["event"]])
    if kind == "block":
        return json.dumps(["block", e["agent"]])
    return json.dumps([kind])


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


def role(command: str) -> list[str]:
    """What a todoledger hook command does, whatever path runs it: `hook codex --screen`."""
    try:
        return shlex.split(command)[1:]
    except ValueError:
        return command.split()[1:]
