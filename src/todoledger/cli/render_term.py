"""A plan on a terminal: the rows `core.view.fold` draws, coloured with plain
ANSI codes and wrapped to the terminal's width, without rich.

Rich lays out a whole table before it prints a line: it measures every cell
of every row twice (minimum and maximum width) and renders each through its
segment and style machinery, which made `show` of 1,000 items take most of a
second on a terminal, and its import alone outweighs the rest of a command.
This renderer costs one formatted line per drawn row; a row is wrapped only
when it is wider than the terminal (bench/bench_show.py measures both
renderers side by side). Rich stays for the other terminal output, where a few
lines are printed.

Agent-written text goes through the one sanitiser before any code is added
around it, so no escape sequence of an agent's reaches the terminal.
"""

from __future__ import annotations

import os
import sys

from todoledger.cli.render_plain import MARKS, STRANDED, folded_counts, folded_kinds, folded_line, summary
from todoledger.core.sanitize import for_terminal as clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from todoledger.core.view import ItemView, PlanView

RESET = "\x1b[0m"
# SGR parameters, as rich's styles for these were.
STATUS_STYLE = {"pending": "", "in_progress": "1;33", "completed": "32", "cancelled": "2", "dropped": "2"}
PRIORITY_STYLE = {"high": "1;31", "medium": "33", "low": "2"}
ID, READY, BLOCKED, TAG, DIM, CLAIM, EVIDENCE, TITLE = "36", "1;36", "35", "35", "2", "1;31", "2;32", "1"
Segment = tuple[str, str]  # (text, SGR parameters; "" for none)
# Each verification word its own colour (core/verification.py's vocabulary); the board's
# CSS (web/static) gives the same words their colours.
VERIFICATION_STYLE = {
    "failed": "1;31",
    "stale": "33",
    "unverified": "35",
    "reported": "2",
    "stand-in": "2;35",
    "typed": "2;33",
    "self-checked": "36",
    "cross-checked": "34",
    "accepted by": "1;34",
    "verified": "1;32",
}
# Tags drawn in the tag colour: what it waits for, and a writer's list that disagrees (contested).
_MARKED = ("waits", "listed as")


def _word_style(tag: str) -> str:
    """The colour of a verification word at the start of a tag, else none."""
    for name, style in VERIFICATION_STYLE.items():
        if tag == name or tag.startswith(name + " "):
            return style
    return ""


def colour_on() -> bool:
    """Colours unless the user turned them off (https://no-color.org, a dumb terminal)."""
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def columns() -> int:
    """The terminal's width: $COLUMNS where set (as shells and `less` set it), else the tty's."""
    try:
        return max(20, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        pass
    try:
        return max(20, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError):
        return 80


def plan_lines(
    view: PlanView, location: str | None = None, *, show_all: bool = False, width: int | None = None
) -> list[str]:
    """The lines `show` prints on a terminal."""
    from todoledger.core.view import fold

    paint = _painter(colour_on())
    width = width or columns()
    lines = [paint(summary(view), TITLE)]
    if not view.items:
        lines.append("no items yet: `todoledger add TEXT`, `todoledger write FILE` or `todoledger demo`")
    drawn = fold(view, show_all=show_all)
    rows = (*drawn.shown, *drawn.rest)
    id_width = max((len(clean(it.id)) for it in rows), default=6)
    for it in drawn.shown:
        _row(lines, it, id_width, width, paint)
    if drawn.rest:
        lines.append(paint(f"{folded_kinds(drawn.folded)} ({folded_counts(drawn.folded)}):", TITLE))
        for it in drawn.rest:
            _row(lines, it, id_width, width, paint)
    elif drawn.folded:
        lines.append(paint(folded_line(drawn.folded), DIM))
    if location:
        lines.append(paint(f"ledger: {clean(location)}", DIM))
    return lines


def plan(view: PlanView, location: str | None = None, *, show_all: bool = False) -> None:
    sys.stdout.write("\n".join(plan_lines(view, location, show_all=show_all)) + "\n")


def _paint(text: str, style: str) -> str:
    return f"\x1b[{style}m{text}{RESET}" if style and text else text


def _plain(text: str, _style: str) -> str:
    return text


_PAINT = _paint
_MIDDLE: dict[tuple[str, str], str] = {}  # (status, priority) -> the painted columns between id and text


def _painter(on: bool) -> Callable[[str, str], str]:
    return _paint if on else _plain


def _row(lines: list[str], it: ItemView, id_width: int, width: int, paint: Callable[[str, str], str]) -> None:
    status, priority = it.status, it.priority
    item_id = clean(it.id)
    key = (status, priority)
    middle = _MIDDLE.get(key) if paint is _PAINT else None
    if middle is None:  # the mark and the priority, the same for every row of their kind
        middle = (
            f"{paint(MARKS.get(status, '?'), STATUS_STYLE.get(status, ''))}  "
            f"{paint(f'{priority:<6}', PRIORITY_STYLE.get(priority, ''))}  "
        )
        if paint is _PAINT:
            _MIDDLE[key] = middle
    depth = it.depth
    indent = id_width + 13 + 2 * depth  # where the item's text starts
    closed = status in ("completed", "cancelled", "dropped")
    parts: list[Segment] = [(clean(it.content), DIM if closed else "")]
    flag = it.flag()
    if flag == "ready":
        parts.append(("ready", READY))
    elif flag == "blocked":
        parts.append(("blocked", BLOCKED))
    if it.depends_on:
        parts.append((f"waits for {clean(', '.join(it.depends_on))}", TAG))
    claimed = it.claimed
    for tag in it.tags():
        parts.append(
            (clean(tag), CLAIM if tag == claimed else TAG if tag.startswith(_MARKED) else _word_style(tag))
        )
    body = _wrap(parts, indent, width, paint)
    lines.append(f"{paint(item_id, ID)}{' ' * (id_width - len(item_id) + 2)}{middle}{'  ' * depth}{body[0]}")
    if len(body) > 1:
        lines += body[1:]
    if it.evidence and status == "completed":
        _note(lines, f"evidence: {clean(it.evidence)}", EVIDENCE, indent + 2, width, paint)
    if it.reason and status in ("cancelled", "dropped"):  # the mark tells the two apart
        _note(lines, f"reason: {clean(it.reason)}", DIM, indent + 2, width, paint)


def _note(
    lines: list[str], text: str, style: str, indent: int, width: int, paint: Callable[[str, str], str]
) -> None:
    """A line under the item's text (its evidence, why it was cancelled or dropped), wrapped as the text is."""
    first, *rest = _wrap([(text, style)], indent, width, paint)
    lines.append(" " * indent + first)
    lines += rest


def _wrap(parts: list[Segment], indent: int, width: int, paint: Callable[[str, str], str]) -> list[str]:
    """The segments on one line, two spaces apart, or wrapped at spaces onto
    lines that start at `indent`."""
    room = max(10, width - indent)
    plain = "  ".join(text for text, _ in parts)
    if plain.isascii() and len(plain) <= room:  # nearly every row: no measuring
        return ["  ".join(paint(text, style) for text, style in parts)]
    out: list[str] = []
    line = ""
    used = 0
    for text, style in parts:
        gap = "  "  # between segments; one space between the words of one
        for word in text.split(" "):
            size = display_width(word)
            while size > room:  # a word wider than the room: cut it
                if used:
                    out.append(line)
                    line, used = "", 0
                head, word = split_at(word, room)
                out.append(paint(head, style))
                size = display_width(word)
            if used and used + len(gap) + size > room:
                out.append(line)
                line, used = "", 0
            if used:
                line += gap
                used += len(gap)
            line += paint(word, style)
            used += size
            gap = " "
    if used or not out:
        out.append(line)
    return [out[0], *(" " * indent + rest for rest in out[1:])]


def display_width(text: str) -> int:
    """Terminal cells: wide East Asian characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(_cells(ch) for ch in text)


def split_at(text: str, cells: int) -> tuple[str, str]:
    """`text` cut after at most `cells` terminal cells (at least one character)."""
    used = 0
    for n, ch in enumerate(text):
        used += _cells(ch)
        if used > cells:
            return text[: max(1, n)], text[max(1, n) :]
    return text, ""


def _cells(ch: str) -> int:
    import unicodedata

    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# -- the one-line outputs of the agent verbs (`add`, `start`, `done`, `next`, `write`) --------
# As rich printed them, with plain ANSI codes: a person typing `todoledger add` waits for
# no import of rich (bench/bench_core.py, `add` beside Taskwarrior's on a terminal).


def _out(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    paint = _painter(colour_on())
    status = row["status"]
    head = paint(f"{verb + ' ' if verb else ''}{clean(row['id'])}", ID)
    mark = paint(f"{MARKS.get(status, '?')} {status}", STATUS_STYLE.get(status, ""))
    _out([f"{head} {mark} {clean(row['content'])}"])


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    if not rows:
        _out([empty])
        return
    paint = _painter(colour_on())
    lines = []
    for it in rows:
        line = f"{paint(clean(it['id']), ID)} [{it['priority']}] {clean(it['content'])}"
        if it.get("claimed"):
            line += "  " + paint(f"({title} by {clean(it['updated_by'])})", "33")
        lines.append(line)
    _out(lines)


def write_result(result: dict[str, Any]) -> None:
    from todoledger.cli.render_plain import write_lines

    paint = _painter(colour_on())
    lines = write_lines(result)
    notes = len(result.get("notices", []))
    warnings = len(result["warnings"])
    _out(
        [paint(line, "33") for line in lines[:warnings]]
        + lines[warnings : len(lines) - notes]
        + [paint("note: ", "1;33") + line[len("note: ") :] for line in lines[len(lines) - notes :]]
    )


def stranded(rows: list[dict[str, Any]]) -> None:
    paint = _painter(colour_on())
    lines = [paint(STRANDED, "1;35")]
    lines += [
        f"{paint(clean(it['id']), ID)} {clean(it['content'])}"
        + paint(f"  waits for {clean(', '.join(it['waits_on_cancelled']))}", "35")
        for it in rows
    ]
    _out(lines)
