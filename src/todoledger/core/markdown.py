"""Agent-written text inside Markdown and HTML: it must stay one line of literal text.

Without this, an item's content could open a heading, fake a checked
checklist entry, hide a link or inject HTML into a page that renders it.
Both build on the one sanitiser (`core/sanitize.py`): control characters
are marked, invisible ones removed, line breaks made spaces.
"""

from __future__ import annotations

import re

from todoledger.core.sanitize import for_terminal

_MD = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        **{c: "\\" + c for c in "\\`*_[]|~"},
    }
)
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})
_LINE_START = re.compile(r"^(\d+(?=[.)])|(?=[#+=-]))(.)")


def md_text(value: object) -> str:
    # Leading spaces would make an indented code block where the text starts a list item.
    return _LINE_START.sub(r"\1\\\2", for_terminal(value).translate(_MD).lstrip())


def md_code(value: object) -> str:
    """Inline code that no backtick in the value can close early."""
    text = for_terminal(value)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: object) -> str:
    """Text for an HTML element or attribute: entities for markup, sanitised first."""
    return for_terminal(value).translate(_HTML)
