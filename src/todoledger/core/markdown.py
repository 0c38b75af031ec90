"""Agent-written text inside Markdown: it must stay one line of literal text.

Without this, an item's content could open a heading, fake a checked
checklist entry, hide a link or inject HTML into a page that renders it.
"""

from __future__ import annotations

import re

_MD = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        **{c: "\\" + c for c in "\\`*_[]|~"},
        # Line breaks and other controls would start new Markdown blocks.
        **{chr(c): " " for c in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029)},
        # Bidi controls can make text read differently than it is.
        **{
            chr(c): None
            for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)
        },
    }
)
_LINE_START = re.compile(r"^(\d+(?=[.)])|(?=[#+=-]))(.)")


def md_text(value: object) -> str:
    # Leading spaces would make an indented code block where the text starts a list item.
    return _LINE_START.sub(r"\1\\\2", str(value).translate(_MD).lstrip())


def md_code(value: object) -> str:
    """Inline code that no backtick in the value can close early."""
    text = str(value).translate({c: " " for c in (*range(0x20), 0x7F, 0x2028, 0x2029)})
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
