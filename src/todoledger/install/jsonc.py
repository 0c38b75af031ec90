"""A small JSON-with-comments parser that remembers where every value sits.

The installer edits agents' config files as text, so that everything it does
not touch (comments, key order, odd indentation, trailing commas) survives
byte for byte. That needs offsets, which `json` does not give. Accepted:
strict JSON plus `//` and `/* */` comments and trailing commas (JSONC, as
opencode and Gemini read it). Duplicate keys: the last one wins, as in
`JSON.parse`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
# Configs nest a handful of levels; a cap turns a pathological file into a
# parse error instead of a RecursionError.
_MAX_DEPTH = 200


class JsoncError(ValueError):
    def __init__(self, message: str, text: str, pos: int) -> None:
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        self.message = message
        super().__init__(f"line {self.line}, column {self.column}: {message}")


@dataclass
class Node:
    """A value and its span `[start, end)` in the text."""

    kind: str  # "object" | "array" | "scalar"
    start: int
    end: int
    value: Any = None
    members: list[Member] = field(default_factory=list)  # objects, in text order
    items: list[Node] = field(default_factory=list)  # arrays
    trailing_comma: int | None = None  # offset of a comma after the last child

    def member(self, key: str) -> Member | None:
        found = None
        for m in self.members:  # last duplicate wins, like JSON.parse
            if m.key == key:
                found = m
        return found

    def child_spans(self) -> list[tuple[int, int]]:
        if self.kind == "object":
            return [(m.key_start, m.value.end) for m in self.members]
        return [(n.start, n.end) for n in self.items]


@dataclass
class Member:
    key: str
    key_start: int
    value: Node


def skip_space(text: str, pos: int) -> int:
    """Skip whitespace and comments; return the next significant offset."""
    n = len(text)
    while pos < n:
        c = text[pos]
        if c in " \t\r\n" or (c == "\ufeff" and pos == 0):
            pos += 1
        elif text.startswith("//", pos):
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl
        elif text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            if close < 0:
                raise JsoncError("unterminated /* comment", text, pos)
            pos = close + 2
        else:
            break
    return pos


def parse(text: str) -> Node:
    """Parse a whole document; raise `JsoncError` with line and column."""
    parser = _Parser(text)
    pos = skip_space(text, 0)
    if pos >= len(text):
        raise JsoncError("empty document", text, pos)
    node = parser.value(pos, 0)
    end = skip_space(text, node.end)
    if end < len(text):
        raise JsoncError("unexpected text after the document", text, end)
    return node


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, message: str, pos: int) -> JsoncError:
        return JsoncError(message, self.text, pos)

    def value(self, pos: int, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nested too deeply", pos)
        c = self.text[pos] if pos < len(self.text) else ""
        if c == "{":
            return self.obj(pos, depth)
        if c == "[":
            return self.arr(pos, depth)
        if c == '"':
            end = self.string_end(pos)
            return Node("scalar", pos, end, self.decode(pos, end))
        m = _NUMBER.match(self.text, pos)
        if m and m.end() > pos:
            return Node("scalar", pos, m.end(), json.loads(m.group()))
        for word, val in _LITERALS.items():
            if self.text.startswith(word, pos):
                return Node("scalar", pos, pos + len(word), val)
        raise self.fail("expected a value" if c else "unexpected end of file", pos)

    def string_end(self, pos: int) -> int:
        i = pos + 1
        n = len(self.text)
        while i < n:
            c = self.text[i]
            if c == '"':
                return i + 1
            if c == "\\":
                i += 2
                continue
            if c < " ":
                raise self.fail("control character in string", i)
            i += 1
        raise self.fail("unterminated string", pos)

    def decode(self, start: int, end: int) -> str:
        try:
            out: str = json.loads(self.text[start:end])
        except ValueError as e:
            raise self.fail("invalid escape in string", start) from e
        return out

    def obj(self, pos: int, depth: int) -> Node:
        node = Node("object", pos, pos, {})
        i = skip_space(self.text, pos + 1)
        while True:
            if self.text.startswith("}", i):
                node.end = i + 1
                return node
            if not self.text.startswith('"', i):
                raise self.fail("expected a quoted key or '}'", i)
            key_end = self.string_end(i)
            key = self.decode(i, key_end)
            j = skip_space(self.text, key_end)
            if not self.text.startswith(":", j):
                raise self.fail("expected ':' after the key", j)
            val = self.value(skip_space(self.text, j + 1), depth + 1)
            node.members.append(Member(key, i, val))
            node.value[key] = val.value
            i, done = self.after_child(node, val.end, "}")
            if done:
                return node

    def arr(self, pos: int, depth: int) -> Node:
        node = Node("array", pos, pos, [])
        i = skip_space(self.text, pos + 1)
        while True:
            if self.text.startswith("]", i):
                node.end = i + 1
                return node
            val = self.value(i, depth + 1)
            node.items.append(val)
            node.value.append(val.value)
            i, done = self.after_child(node, val.end, "]")
            if done:
                return node

    def after_child(self, node: Node, pos: int, close: str) -> tuple[int, bool]:
        """Consume `,` or the closing bracket after a child."""
        i = skip_space(self.text, pos)
        if self.text.startswith(close, i):
            node.end = i + 1
            return i, True
        if not self.text.startswith(",", i):
            raise self.fail(f"expected ',' or '{close}'", i)
        j = skip_space(self.text, i + 1)
        if self.text.startswith(close, j):  # JSONC trailing comma
            node.trailing_comma = i
            node.end = j + 1
            return j, True
        return j, False
