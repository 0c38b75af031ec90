"""A Markdown task file as a whole (Kiro's tasks.md and other checklists), for
`import --format markdown` and `export --format markdown`: the tasks, and every
other byte, so that export writes the file back as it was.

- A task is a checklist line (`- [ ] text`, `* [x] 1.1 text`); its parent is
  the nearest task above it that is less indented.
- A line under a task that is indented deeper than the task and is not a task
  (a plain sub-bullet, `_Requirements: 1.1_`, a code block) is a *detail*: the
  details are the task's notes, in order. A blank line between two details of
  one task is part of its notes.
- Everything else (headings, the blank lines between tasks, text outside the
  list) is *layout*, kept line for line. Headings stay headings: they are not
  tasks.

`parse` gives the tasks and the layout; `render` writes the layout back with
each task's current text, box and notes from the ledger. The layout keeps each
task's line shape (indent, bullet, box character, what follows the text) and
the item it became, so a re-import after an edit of the file finds the same
items by their place (`ingest/markdown.py`).

Boxes: `[ ]` pending, `[x]`/`[X]` completed, `[~]` and `[/]` in progress, `[-]`
cancelled; in a Kiro file (`_Requirements:` details, or a `.kiro/` path) `[-]`
is Kiro's "in progress", and a cancelled item is written `[~]`. An unchanged
status keeps the character the file had. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_CHECK = re.compile(
    r"^(?P<prefix>(?P<indent>[ \t]*)(?:[-*+]|\d+[.)])[ \t]+\[)(?P<box>[ xX~/-])(?P<gap>\]\*?[ \t]+)(?P<text>.*)$"
)
_ID = re.compile(r"[ \t]*<!--[ \t]*id:(?P<id>[A-Za-z0-9_.:-]+)[ \t]*-->[ \t]*$")
_TRAILING = re.compile(r"[ \t]+$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_KIRO_DETAIL = re.compile(r"^[ \t]*[-*+]?[ \t]*_Requirements?:")

PLAIN = {
    " ": "pending",
    "x": "completed",
    "X": "completed",
    "~": "in_progress",
    "/": "in_progress",
    "-": "cancelled",
}
KIRO = {**PLAIN, "-": "in_progress", "~": "cancelled"}
WRITE = {
    "plain": {"pending": " ", "completed": "x", "in_progress": "~", "cancelled": "-"},
    "kiro": {"pending": " ", "completed": "x", "in_progress": "-", "cancelled": "~"},
}


@dataclass
class Task:
    content: str
    status: str
    parent: int | None  # index of the parent task
    id: str | None = None  # from an `<!-- id:... -->` comment
    notes: list[str] = field(default_factory=list)
    prefix: str = "- ["  # indent, bullet and `[`
    box: str = " "
    gap: str = "] "
    suffix: str = ""  # after the text: an id comment, trailing blanks
    width: int = 0  # the indent, tabs as 4
    detail_indent: str = ""


@dataclass
class Doc:
    tasks: list[Task]
    # One record per line: ["t", text] layout, ["k", task] a task's line, ["n", task, j] its j-th note.
    lines: list[list[Any]]
    newline: str = "\n"
    final_newline: bool = True
    dialect: str = "plain"  # "plain" | "kiro"
    ids: bool = False  # the file had id comments

    def layout(self, ids: list[str]) -> str:
        """What the ledger keeps of the file: its shape, the item each task became."""
        tasks = [
            {
                "id": ids[k],
                "prefix": t.prefix,
                "box": t.box,
                "gap": t.gap,
                "suffix": t.suffix,
                "di": t.detail_indent,
                "status": t.status,
                "content": t.content,
                "width": t.width,
            }
            for k, t in enumerate(self.tasks)
        ]
        data = {
            "v": 1,
            "nl": self.newline,
            "final": self.final_newline,
            "dialect": self.dialect,
            "ids": self.ids,
            "tasks": tasks,
            "lines": self.lines,
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def parse(text: str, *, kiro: bool = False) -> Doc:
    """The tasks of a Markdown file, their details, and its layout. `kiro`: the
    file is known to be Kiro's (a `.kiro/` path); Kiro details say so too."""
    newline = "\r\n" if "\r\n" in text else "\n"
    final = text.endswith(("\n", "\r"))
    rows = text.split(newline)
    if final:
        rows.pop()
    kiro = kiro or any(_KIRO_DETAIL.match(r) for r in rows)
    boxes = KIRO if kiro else PLAIN
    doc = Doc([], [], newline, final, "kiro" if kiro else "plain")
    stack: list[int] = []  # open tasks, outermost first
    blanks: list[str] = []  # blank lines not yet placed
    last_note: int | None = None  # the task whose detail the previous non-blank line was
    fenced: int | None = None  # the task a fenced block belongs to (-1: layout)
    for raw in rows:
        if fenced is not None:
            _place_blanks(doc, blanks, fenced if fenced >= 0 else None, last_note)
            _line(doc, raw, fenced if fenced >= 0 else None)
            if _FENCE.match(raw):
                fenced = None
            continue
        if not raw.strip():
            blanks.append(raw)
            continue
        found = _CHECK.match(raw)
        if found is not None:
            _place_blanks(doc, blanks, None, None)
            width = len(found.group("indent").expandtabs(4))
            while stack and doc.tasks[stack[-1]].width >= width:
                stack.pop()
            body, ident, suffix = _split(found.group("text"))
            task = Task(
                content=body,
                status=boxes[found.group("box")],
                parent=stack[-1] if stack else None,
                id=ident,
                prefix=found.group("prefix"),
                box=found.group("box"),
                gap=found.group("gap"),
                suffix=suffix,
                width=width,
            )
            doc.ids |= ident is not None
            doc.tasks.append(task)
            stack.append(len(doc.tasks) - 1)
            doc.lines.append(["k", len(doc.tasks) - 1])
            last_note = None
            continue
        width = len(raw[: len(raw) - len(raw.lstrip(" \t"))].expandtabs(4))
        while stack and doc.tasks[stack[-1]].width >= width:
            stack.pop()  # less indented than the open task: the list under it ended
        owner = stack[-1] if stack else None
        _place_blanks(doc, blanks, owner, last_note)
        _line(doc, raw, owner)
        last_note = owner
        if _FENCE.match(raw):
            fenced = owner if owner is not None else -1
    _place_blanks(doc, blanks, None, None)
    for task in doc.tasks:
        _details(task)
    return doc


def _line(doc: Doc, raw: str, owner: int | None) -> None:
    if owner is None:
        doc.lines.append(["t", raw])
        return
    notes = doc.tasks[owner].notes
    notes.append(raw)
    doc.lines.append(["n", owner, len(notes) - 1])


def _place_blanks(doc: Doc, blanks: list[str], owner: int | None, last_note: int | None) -> None:
    """Blank lines between two details of one task are its notes; others are layout."""
    for raw in blanks:
        if owner is not None and owner == last_note:
            _line(doc, raw, owner)
        else:
            doc.lines.append(["t", raw])
    blanks.clear()


def _details(task: Task) -> None:
    """The task's detail lines as notes: their common indent taken off."""
    filled = [n for n in task.notes if n.strip()]
    common = filled[0][: len(filled[0]) - len(filled[0].lstrip(" \t"))] if filled else ""
    for line in filled[1:]:
        while common and not line.startswith(common):
            common = common[:-1]
    task.detail_indent = common
    # A blank detail line is written back empty: spaces on it, if any, are not kept.
    task.notes = [n[len(common) :] if n.strip() else "" for n in task.notes]


def _split(text: str) -> tuple[str, str | None, str]:
    """(the task's text, its id, what follows the text on the line)."""
    found = _ID.search(text)
    if found is not None:
        return content_of(text[: found.start()]), found.group("id"), text[found.start() :]
    trailing = _TRAILING.search(text)
    cut = trailing.start() if trailing else len(text)
    return content_of(text[:cut]), None, text[cut:]


def content_of(text: str) -> str:
    return text.replace("<br>", "\n").strip()


def line_text(content: str) -> str:
    return str(content).replace("\r\n", "\n").replace("\n", "<br>")


def render(
    layout: str, items: dict[str, dict[str, Any]], extra: list[dict[str, Any]], *, ids: bool = False
) -> str:
    """The file of `layout` with each task as its item now stands (`items` by id;
    an item gone from the plan takes its lines with it), then the plan's items
    that the file did not have (`extra`, in plan order) under their parent."""
    data = json.loads(layout)
    tasks: list[dict[str, Any]] = data["tasks"]
    writes = WRITE[data["dialect"]]
    boxes = KIRO if data["dialect"] == "kiro" else PLAIN
    with_ids = ids or bool(data["ids"])
    out: list[str] = []
    now_notes: dict[int, list[str]] = {}
    last_note_line = {rec[1]: n for n, rec in enumerate(data["lines"]) if rec[0] == "n"}
    ends: dict[str, int] = {}  # item id -> index in `out` after its last line so far
    for n, rec in enumerate(data["lines"]):
        if rec[0] == "t":
            out.append(rec[1])
            continue
        k = rec[1]
        shape = tasks[k]
        item = items.get(shape["id"])
        if item is None:
            continue
        if rec[0] == "k":
            box = (
                shape["box"] if boxes.get(shape["box"]) == item["status"] else writes.get(item["status"], " ")
            )
            suffix = shape["suffix"]
            if with_ids and "<!--" not in suffix:
                suffix = f" <!-- id:{item['id']} -->" + suffix
            out.append(f"{shape['prefix']}{box}{shape['gap']}{line_text(item['content'])}{suffix}")
            now_notes[k] = (item.get("notes") or "").split("\n") if item.get("notes") else []
            if k not in last_note_line:  # the file had no details: the item's notes now, under it
                indent = " " * (shape["width"] + 2)
                out += [indent + note if note else "" for note in now_notes[k]]
        else:
            j = rec[2]
            notes = now_notes.get(k, [])
            if j < len(notes):
                out.append(shape["di"] + notes[j] if notes[j] else "")
            if n == last_note_line[k] and len(notes) > j + 1:
                out += [shape["di"] + note if note else "" for note in notes[j + 1 :]]
        for anc in _ancestry(items, shape["id"]):
            ends[anc] = len(out)
    parents = {str(i["id"]): i.get("parent") for i in [*items.values(), *extra]}
    _place_extra(out, extra, ends, {t["id"]: t for t in tasks}, writes, with_ids, parents)
    newline = str(data["nl"])
    return newline.join(out) + (newline if data["final"] and out else "")


def _ancestry(items: dict[str, dict[str, Any]], item_id: str) -> list[str]:
    """The item and every item above it, at any depth (a loop, not a cap: a
    plan 1,500 deep keeps its shape)."""
    return _up(item_id, lambda node: items.get(node, {}).get("parent"))


def _up(item_id: str, parent_of: Callable[[str], Any]) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    node: Any = item_id
    while isinstance(node, str) and node not in seen:  # `seen`: a broken parent link cannot loop
        found.append(node)
        seen.add(node)
        node = parent_of(node)
    return found


def _place_extra(
    out: list[str],
    extra: list[dict[str, Any]],
    ends: dict[str, int],
    shapes: dict[str, dict[str, Any]],
    writes: dict[str, str],
    ids: bool,
    parents: dict[str, Any],
) -> None:
    """Items the file did not have: each right after its parent's lines (a new
    top-level item at the end), indented under it."""
    widths = {k: v["width"] for k, v in shapes.items()}
    for item in extra:
        parent = item.get("parent")
        width = widths[parent] + 2 if parent in widths else 0
        widths[item["id"]] = width
        mark = f" <!-- id:{item['id']} -->" if ids else ""
        lines = [
            f"{' ' * width}- [{writes.get(str(item['status']), ' ')}] {line_text(item['content'])}{mark}"
        ]
        lines += [
            " " * (width + 2) + n if n else ""
            for n in (item.get("notes") or "").split("\n")
            if item.get("notes")
        ]
        at = ends.get(parent, len(out)) if parent is not None else len(out)
        out[at:at] = lines
        for key, value in list(ends.items()):
            if value > at:  # lines after the insertion moved down
                ends[key] = value + len(lines)
        for node in _up(str(item["id"]), parents.get):  # the item and its ancestors now end after these lines
            ends[node] = max(ends.get(node, 0), at + len(lines))


def listed(layout: str) -> set[str]:
    """The items a layout's file holds."""
    return {str(t["id"]) for t in json.loads(layout)["tasks"]}


def render_plain(items: list[dict[str, Any]], *, ids: bool = False) -> str:
    """A plan that came from no Markdown file: a nested checklist, notes as details."""
    empty = json.dumps(
        {"v": 1, "nl": "\n", "final": True, "dialect": "plain", "ids": ids, "tasks": [], "lines": []}
    )
    return render(empty, {}, items, ids=ids)
