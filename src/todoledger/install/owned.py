"""What todoledger owns in an agent's config file, and how to take exactly that
back out of a file that people have edited since.

An *element* is one thing install wrote, found again by its content:

- `member`: an object member or TOML key at `path` (our MCP server entry,
  `env.TODOLEDGER_AGENT`, a trusted folder, a hook's approval hash);
- `item`: one value in a list at `path` (`permissions.allow`, `tools.allowed`,
  `enabledMcpjsonServers`): a list is shared, the value is ours;
- `hook`: one handler in `hooks.<event>`, in a group (matcher) it may share;
- `block`: the marked block in an instructions file (`teach.py`);
- `file`: a whole file install generated (opencode's plugin).

A *container* is an object, list or table install created to hold elements
(`hooks`, `permissions.allow`, `[mcp_servers]`). Uninstall removes elements,
never a container the user had; a container goes only when it is empty and
install created it. An element whose content differs from what install wrote
was changed by someone: it is named and left as it is.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import tomlkit
import tomlkit.exceptions

from todoledger.install.elements import Element, Path_, is_our_command, role, same
from todoledger.install.jsonedit import JsonDoc


@dataclass
class Taken:
    """The text after taking elements back, and what was found."""

    text: str
    removed: list[str] = field(default_factory=list)  # labels of elements removed
    changed: list[Element] = field(default_factory=list)  # ours, changed by someone: left
    gone: list[str] = field(default_factory=list)  # no longer there (someone removed them)


# -- JSON -----------------------------------------------------------------------------


def take_json(text: str, label: str, elements: list[Element], containers: list[Path_]) -> Taken:
    doc = JsonDoc(text if text.strip() else "{}", label)
    out = Taken(text)
    for e in elements:
        if e["type"] == "hook":
            _take_hook(doc, e, out)
        elif e["type"] == "member":
            node = doc.find(e["path"])
            if node is None:
                out.gone.append(e["label"])
            elif same(node.value, e["value"]):
                doc.remove(e["path"])
                out.removed.append(e["label"])
            else:
                out.changed.append(e)
        elif e["type"] == "item":
            node = doc.find(e["path"])
            index = (
                next((i for i, v in enumerate(node.value) if same(v, e["value"])), None)
                if node is not None and node.kind == "array"
                else None
            )
            if index is None:
                out.gone.append(e["label"])
            else:
                doc.remove([*e["path"], index])
                out.removed.append(e["label"])
    for path in sorted(containers, key=len, reverse=True):
        node = doc.find(path)
        if node is not None and node.kind in ("object", "array") and not node.value:
            doc.remove(path)
    out.text = doc.text
    return out


def _take_hook(doc: JsonDoc, e: Element, out: Taken) -> None:
    groups = doc.find(["hooks", e["event"]])
    where: tuple[int, int] | None = None
    ours_changed = False
    for gi, group in enumerate(groups.value if groups is not None and groups.kind == "array" else []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if same(handler, e["value"]):
                where = where or (gi, hi)
            elif isinstance(handler, dict) and _same_role(handler, e["value"]):
                ours_changed = True
    if where is None:
        if ours_changed:
            out.changed.append(e)
        else:
            out.gone.append(e["label"])
        return
    gi, hi = where
    group = groups.value[gi] if groups is not None else {}
    only = len(group["hooks"]) == 1
    if only and e.get("group_created") and set(group) <= {"matcher", "hooks"}:
        doc.remove(["hooks", e["event"], gi])
    else:
        doc.remove(["hooks", e["event"], gi, "hooks", hi])
    out.removed.append(e["label"])


def _same_role(handler: dict[str, Any], ours: dict[str, Any]) -> bool:
    """A todoledger hook for the same agent (`hook claude-code ...`), whatever its path,
    flags or other keys: in one event, todoledger writes one handler."""
    command, wanted = handler.get("command"), ours.get("command")
    if not is_our_command(command, "todoledger") or not isinstance(wanted, str):
        return False
    return role(str(command))[:2] == role(wanted)[:2]


# -- TOML -----------------------------------------------------------------------------


def take_toml(text: str, label: str, elements: list[Element], containers: list[Path_]) -> Taken:
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    out = Taken(text)
    try:
        doc = tomlkit.parse(body)
        plain = tomllib.loads(body)
    except (tomlkit.exceptions.ParseError, tomllib.TOMLDecodeError):
        out.changed = list(elements)  # unreadable now: nothing is touched
        return out
    for e in elements:
        found = _dig(plain, e["path"])
        if found is _MISSING:
            out.gone.append(e["label"])
        elif same(found, e["value"]):
            parent = _dig_doc(doc, e["path"][:-1])
            del parent[e["path"][-1]]
            _drop(plain, e["path"])
            out.removed.append(e["label"])
        else:
            out.changed.append(e)
    for path in sorted(containers, key=len, reverse=True):
        found = _dig(plain, path)
        if isinstance(found, dict) and not found:
            del _dig_doc(doc, path[:-1])[path[-1]]
            _drop(plain, path)
    new = doc.as_string()
    if not body.endswith("\n\n"):
        new = new.rstrip("\r\n") + ("\r\n" if "\r\n" in body else "\n") if new.strip() else ""
    out.text = bom + new if new or not bom else ""
    return out


_MISSING = object()


def _dig(data: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        if not isinstance(data, dict) or step not in data:
            return _MISSING
        data = data[step]
    return data


def _dig_doc(doc: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _drop(data: dict[str, Any], path: Sequence[str | int]) -> None:
    parent = _dig(data, path[:-1])
    if isinstance(parent, dict):
        parent.pop(str(path[-1]), None)


def created_containers(before: Any, after: Any, elements: list[Element]) -> list[Path_]:
    """Objects, lists and tables that hold our elements in `after` and did not exist in `before`."""
    found: list[Path_] = []
    for e in elements:
        if e["type"] == "hook":
            chain: list[Path_] = [["hooks"], ["hooks", e["event"]]]
        elif e["type"] == "item":
            path = e["path"]
            chain = [path[: i + 1] for i in range(len(path))]
        elif e["type"] == "member":
            path = e["path"]
            chain = [path[: i + 1] for i in range(len(path) - 1)]
        else:
            continue
        for path in chain:
            if _dig(after, path) is not _MISSING and _dig(before, path) is _MISSING and path not in found:
                found.append(path)
    return found
