"""Text-level edits of a JSON(C) document.

Re-dumping a parsed config would drop comments and reflow the user's
formatting, so every edit here splices new text into the old one: a member
is inserted after the last member of its object, a value is replaced in its
span, and nothing else moves. New text follows the file's own style
(indent unit, newline, one-line vs multi-line objects). The document is
re-parsed after each edit; configs are small and that keeps offsets honest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from todoledger.core.model import LedgerError
from todoledger.install import jsonc
from todoledger.install.jsonc import Node


class JsonDoc:
    def __init__(self, text: str, label: str) -> None:
        self.label = label
        self.text = text
        self.root = self._parse(text)
        if self.root.kind != "object":
            raise LedgerError(f"{label}: expected a JSON object at the top level; nothing was changed")
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = _indent_unit(text, self.root)
        # What the edits ensured (install/owned.py elements), each with whether
        # this edit added it: a re-install's record keeps what it found as ours.
        self.ensured: list[tuple[dict[str, Any], bool]] = []

    def _parse(self, text: str) -> Node:
        try:
            return jsonc.parse(text)
        except jsonc.JsoncError as e:
            raise LedgerError(
                f"{self.label}: cannot parse line {e.line}, column {e.column}: {e.message}; "
                "fix the file and run again (nothing was changed)"
            ) from e

    # -- lookups -----------------------------------------------------------

    def find(self, path: Sequence[str | int]) -> Node | None:
        node = self.root
        for step in path:
            if isinstance(step, int):
                if node.kind != "array" or step >= len(node.items):
                    return None
                node = node.items[step]
            else:
                member = node.member(step) if node.kind == "object" else None
                if member is None:
                    return None
                node = member.value
        return node

    def require(self, path: Sequence[str | int], kind: str) -> Node | None:
        """The node at `path` if present; a clear error if it has the wrong type."""
        node = self.find(path)
        if node is not None and node.kind != kind:
            where = ".".join(str(p) for p in path)
            want = "an object" if kind == "object" else "a list"
            raise LedgerError(f"{self.label}: `{where}` is not {want}; fix it by hand (nothing was changed)")
        return node

    # -- edits -------------------------------------------------------------

    def set_path(self, path: Sequence[str | int], value: Any) -> None:
        """Set `path` to `value`, creating missing objects on the way.

        Integer steps index existing list elements; only object keys are
        created.
        """
        node = self.root
        for depth, step in enumerate(path):
            last = depth == len(path) - 1
            if isinstance(step, int):
                assert node.kind == "array" and step < len(node.items)
                child = node.items[step]
            else:
                if node.kind != "object":
                    self.require(path[:depth], "object")  # raises the user-facing error
                member = node.member(step)
                if member is None:
                    nested: Any = value
                    for key in reversed(path[depth + 1 :]):
                        assert isinstance(key, str)
                        nested = {key: nested}
                    self._insert(node, json.dumps(step, ensure_ascii=False) + ": ", nested)
                    return
                child = member.value
            if last:
                self._replace(child, value)
                return
            node = child

    def append(self, path: Sequence[str | int], value: Any) -> None:
        node = self.find(path)
        assert node is not None and node.kind == "array"
        self._insert(node, "", value)

    def remove(self, path: Sequence[str | int]) -> None:
        """Remove the member or list element at `path`, with its comma and, when it
        has lines of its own, those lines; every other byte stays."""
        parent = self.find(path[:-1])
        assert parent is not None and parent.kind in ("object", "array") and path
        step = path[-1]
        if isinstance(step, int):
            index = step
        else:
            index = max(i for i, m in enumerate(parent.members) if m.key == step)
        spans = parent.child_spans()
        text = self.text
        start, end = spans[index]
        own_line = _starts_line(text, start)
        if len(spans) == 1:
            inner = (parent.start + 1, parent.end - 1)
            rest = text[inner[0] : start] + text[end : inner[1]]
            if rest.replace(",", "").strip() == "":  # nothing else inside: `{}` / `[]`
                self._splice([(inner[0], inner[1], "")])
                return
            after = skip_space_only(text, end)
            cut_end = after + 1 if text.startswith(",", after) else end
            self._splice([(_newline_before(text, start) if own_line else start, cut_end, "")])
            return
        if index < len(spans) - 1:
            comma = skip_space_only(text, end)
            assert text.startswith(",", comma)
            if not own_line:
                self._splice([(start, skip_space_only(text, comma + 1), "")])
                return
            eol = _blank_to_eol(text, comma + 1)
            if eol is None:  # a comment after our comma: it stays, indented as it was
                self._splice([(start, comma + 1, "")])
            else:
                self._splice([(_line_start(text, start), eol, "")])
            return
        prev_end = spans[index - 1][1]
        comma = skip_space_only(text, prev_end)
        assert text.startswith(",", comma)
        if not own_line:
            self._splice([(comma, end, "")])
            return
        if parent.trailing_comma is not None:  # ours had the trailing comma: the one before takes over
            after = parent.trailing_comma + 1
            self._splice([(_line_start(text, start), _blank_to_eol(text, after) or after, "")])
            return
        newline = _newline_before(text, start)
        self._splice([(comma, comma + 1, ""), (max(newline, comma + 1), end, "")])

    def _replace(self, node: Node, value: Any) -> None:
        if node.kind == "scalar" or "\n" not in self.text[node.start : node.end]:
            rendered = _render(value, None, self.unit, self.newline)
        else:
            rendered = _render(value, _line_indent(self.text, node.start), self.unit, self.newline)
        self._splice([(node.start, node.end, rendered)])

    def _insert(self, node: Node, prefix: str, value: Any) -> None:
        text = self.text
        spans = node.child_spans()
        opening, closing = node.start, node.end - 1
        one_line = "\n" not in text[opening : node.end]
        inline = one_line and (bool(spans) or "\n" not in text)
        outer = _line_indent(text, opening)
        if spans and not inline and _starts_line(text, spans[0][0]):
            indent = _line_indent(text, spans[0][0])
        else:
            indent = outer + self.unit
        child = prefix + _render(value, None if inline else indent, self.unit, self.newline)
        nl = self.newline

        if not spans:
            inner = text[opening + 1 : closing]
            if inline:
                self._splice([(opening + 1, opening + 1, child)])
            elif "\n" in inner:  # the closing bracket already has its own line
                self._splice([(opening + 1, opening + 1, nl + indent + child)])
            elif inner.strip() == "":  # `{ }`: only blanks to give up
                self._splice([(opening + 1, closing, nl + indent + child + nl + outer)])
            else:  # `{ /* c */ }`: keep the comment
                self._splice([(opening + 1, opening + 1, nl + indent + child + nl + outer)])
            return

        last_end = spans[-1][1]
        trailing = node.trailing_comma is not None
        anchor = node.trailing_comma + 1 if node.trailing_comma is not None else last_end
        comma = [] if trailing else [(last_end, last_end, ",")]
        tail = "," if trailing else ""  # keep the file's trailing-comma habit
        if inline:
            self._splice([(anchor, anchor, ("" if trailing else ",") + " " + child + tail)])
            return
        eol = _end_of_line(text, anchor)
        if eol is None:  # closing bracket right after the last child
            self._splice([(anchor, anchor, ("" if trailing else ",") + nl + indent + child + tail)])
        else:  # after any comment that ends the last child's line
            self._splice([*comma, (eol, eol, nl + indent + child + tail)])

    def _splice(self, edits: list[tuple[int, int, str]]) -> None:
        text = self.text
        # Back to front so offsets stay valid; at one offset the later edit goes
        # first, which leaves the edits in list order in the text.
        order = sorted(range(len(edits)), key=lambda i: (edits[i][0], i), reverse=True)
        for i in order:
            start, end, new = edits[i]
            text = text[:start] + new + text[end:]
        self.root = self._parse(text)
        self.text = text


def _render(value: Any, indent: str | None, unit: str, newline: str) -> str:
    """JSON text for `value`: one line if `indent` is None, else multi-line.

    Multi-line output keeps short lists of scalars on one line
    (`"args": ["mcp"]`), the way these configs are written by hand.
    """
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    inner = indent + unit
    if isinstance(value, dict) and value:
        members = [
            f"{json.dumps(k, ensure_ascii=False)}: {_render(v, inner, unit, newline)}"
            for k, v in value.items()
        ]
        return "{" + newline + inner + ("," + newline + inner).join(members) + newline + indent + "}"
    if isinstance(value, list) and value:
        flat = _render(value, None, unit, newline)
        if len(flat) <= 60 and not any(isinstance(v, (dict, list)) for v in value):
            return flat
        items = [_render(v, inner, unit, newline) for v in value]
        return "[" + newline + inner + ("," + newline + inner).join(items) + newline + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = start
    while end < pos and text[end] in " \t":
        end += 1
    return text[start:end]


def _starts_line(text: str, pos: int) -> bool:
    start = text.rfind("\n", 0, pos) + 1
    return text[start:pos].strip(" \t") == ""


def _end_of_line(text: str, pos: int) -> int | None:
    """Offset of the newline ending `pos`'s line, skipping trailing comments.

    None when something other than blanks/comments follows on that line
    (e.g. the closing bracket).
    """
    n = len(text)
    while pos < n:
        c = text[pos]
        if c in " \t":
            pos += 1
        elif c in "\r\n":
            return pos
        elif text.startswith("//", pos):
            nl = text.find("\n", pos)
            return n if nl < 0 else (nl - 1 if text[nl - 1] == "\r" else nl)
        elif text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            if close < 0 or "\n" in text[pos:close]:
                return None
            pos = close + 2
        else:
            return None
    return None


def _indent_unit(text: str, root: Node) -> str:
    """The file's indent step: taken from the first top-level member."""
    spans = root.child_spans()
    if spans and _starts_line(text, spans[0][0]):
        found = _line_indent(text, spans[0][0])[len(_line_indent(text, root.start)) :]
        if found:
            return found
    return "  "


def skip_space_only(text: str, pos: int) -> int:
    """The next offset that is not a blank or a newline (comments count as text)."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _newline_before(text: str, pos: int) -> int:
    """The offset of the newline (\\n or \\r\\n) that ends the line before `pos`'s."""
    line = _line_start(text, pos)
    return line - 2 if text[max(0, line - 2) : line] == "\r\n" else max(0, line - 1)


def _blank_to_eol(text: str, pos: int) -> int | None:
    """The offset just past the newline ending `pos`'s line if only blanks come
    before it (the end of the text counts); None if something else does."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text):
        return pos
    if text.startswith("\r\n", pos):
        return pos + 2
    if text[pos] == "\n":
        return pos + 1
    return None
