"""What `install` added to a file, kept so that `uninstall` removes exactly
that: the edit's hunks (our text, what it replaced, a little context).

If the file is as install left it, the hunks are reversed in place and the
result is the old file byte for byte. If someone edited it since, uninstall
takes todoledger's elements back by content instead (install/owned.py); a
re-install over an edited file tries each hunk by its context, and keeps no
hunks when one is not found exactly once.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

CONTEXT = 24  # characters kept either side of a hunk: enough to find it again

Hunk = dict[str, Any]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hunks(before: str, after: str) -> list[Hunk]:
    """The non-equal stretches between `before` and `after`, with their place
    in `after`. Stretches closer than twice the context are merged, so no
    hunk's context overlaps another hunk."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    spans: list[list[int]] = []  # [i1, i2, j1, j2]
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        if spans and j1 - spans[-1][3] <= 2 * CONTEXT:
            spans[-1][1], spans[-1][3] = i2, j2
        else:
            spans.append([i1, i2, j1, j2])
    return [
        {
            "at": j1,
            "old": before[i1:i2],
            "new": after[j1:j2],
            "pre": after[max(0, j1 - CONTEXT) : j1],
            "post": after[j2 : j2 + CONTEXT],
        }
        for i1, i2, j1, j2 in spans
    ]


def reverse(current: str, edits: list[Hunk], after_digest: str) -> str | None:
    """`current` with every hunk taken back; None if one cannot be placed."""
    if digest(current) == after_digest:
        text = current
        for h in sorted(edits, key=lambda h: h["at"], reverse=True):
            start = h["at"]
            text = text[:start] + h["old"] + text[start + len(h["new"]) :]
        return text
    text = current
    for h in sorted(edits, key=lambda h: h["at"], reverse=True):
        needle = h["pre"] + h["new"] + h["post"]
        first = text.find(needle)
        if first < 0 or text.find(needle, first + 1) >= 0:
            return None
        start = first + len(h["pre"])
        text = text[:start] + h["old"] + text[start + len(h["new"]) :]
    return text
