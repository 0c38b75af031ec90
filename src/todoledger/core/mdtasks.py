"""Markdown task lists as a plan outline: `- [ ]` / `- [x]` lines, nesting and
headings as parents (Claude Code's plan-mode plans, `ExitPlanMode`). A whole
task file that must round-trip (Kiro's tasks.md, `import --format markdown`)
is core/mdfile.py's.

Boxes: `[ ]` pending, `[x]` completed, `[~]` in progress, `[-]` cancelled, as
the MCP plan resource writes them (plain GitHub knows only the first two). A
trailing `<!-- id:... -->` comment names the item. `<br>` inside an item is a
newline. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BOXES = {" ": "pending", "x": "completed", "X": "completed", "~": "in_progress", "-": "cancelled"}
BOX_OF = {"pending": " ", "completed": "x", "in_progress": "~", "cancelled": "-", "dropped": "-"}

_CHECK = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+]|\d+[.)])[ \t]+\[(?P<box>[ xX~-])\][ \t]+(?P<text>.*)$")
_LIST = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+]|\d+[.)])[ \t]+(?P<text>.*)$")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)[ \t#]*$")
_BOLD = re.compile(r"^\*\*(?P<text>[^*].*?)\*\*:?[ \t]*$")  # `**Changes to X:**` heads a group in plans
_ID = re.compile(r"[ \t]*<!--[ \t]*id:(?P<id>[A-Za-z0-9_.:-]+)[ \t]*-->[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass
class MdItem:
    content: str
    status: str = "pending"
    id: str | None = None
    parent: int | None = None  # index of the parent in the list
    heading: bool = False  # from a heading line rather than a list line
    children: list[int] = field(default_factory=list)


def parse(text: str, *, plain_lists: bool = False) -> list[MdItem]:
    """The items of a Markdown task list, parents before their children.

    Checklist lines are items; headings are parents of what follows them.
    With `plain_lists`, list lines without a box count as pending items too
    (plan-mode plans are numbered lists). Fenced code is skipped.
    """
    items: list[MdItem] = []
    headings: list[tuple[int, int]] = []  # (level, item index)
    lists: list[tuple[int, int]] = []  # (indent width, item index)
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced or not raw.strip():
            continue
        heading = _HEADING.match(raw) or _BOLD.match(raw.strip())
        if heading is not None:
            level = len(heading.group("hashes")) if "hashes" in heading.groupdict() else 7
            while headings and headings[-1][0] >= level:
                headings.pop()
            content, ident = _split_id(heading.group("text"))
            content = content.rstrip(":").rstrip() if level == 7 else content
            if not content:
                continue
            parent = headings[-1][1] if headings else None
            items.append(MdItem(content, id=ident, parent=parent, heading=True))
            headings.append((level, len(items) - 1))
            lists.clear()
            continue
        line = _CHECK.match(raw)
        status = BOXES[line.group("box")] if line is not None else "pending"
        if line is None and plain_lists:
            line = _LIST.match(raw)
        if line is None:
            continue
        width = len(line.group("indent").expandtabs(4))
        while lists and lists[-1][0] >= width:
            lists.pop()
        content, ident = _split_id(line.group("text"))
        if not content:
            continue
        parent = lists[-1][1] if lists else (headings[-1][1] if headings else None)
        items.append(MdItem(content, status=status, id=ident, parent=parent))
        lists.append((width, len(items) - 1))
    for index, item in enumerate(items):
        if item.parent is not None:
            items[item.parent].children.append(index)
    return items


def has_checklist(text: str) -> bool:
    return any(_CHECK.match(line) for line in text.splitlines())


def content_of(text: str) -> str:
    """An item's text as written in a list line, back to the ledger's text."""
    return text.replace("<br>", "\n").strip()


def _split_id(text: str) -> tuple[str, str | None]:
    found = _ID.search(text)
    if found is None:
        return content_of(text), None
    return content_of(text[: found.start()]), found.group("id")
