"""Shared reading helpers for the dialect modules.

A dialect reads a loaded payload into Incoming items and collects findings
instead of raising, so `todoledger lint` can show every problem at once;
`dialects.parse` turns error findings into a LintError.
"""

from __future__ import annotations

import sys

from todoledger.core.lint import check_item_count, field_where, lint_items
from todoledger.core.model import Finding, Incoming, ParsedWrite
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Ids above this are surely not ids; str() of huge ints can even raise.
_MAX_ID_BITS = 63
# `\w+\[(\d+)\]`, compiled where findings are sorted: `re` is not imported by a clean write (the hook path)
_INDEX = r"\w+\[(\d+)\]"


def kind(v: Any) -> str:
    """The JSON name of a value's type, for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


class Reader:
    """Collects findings while one payload is read."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def error(self, where: str, code: str, message: str) -> None:
        self.findings.append(Finding("error", where or "$", code, message))

    def warn(self, where: str, code: str, message: str) -> None:
        self.findings.append(Finding("warning", where or "$", code, message))

    def text(self, obj: dict[str, Any], key: str, item: str, *, required: bool = False) -> str | None:
        """A string field; missing-but-required and wrong types are errors."""
        v = obj.get(key)
        if isinstance(v, str):  # the usual case first: an import reads thousands of these
            return v
        if v is None:
            if required:
                self.error(field_where(item, key), "missing-field", f'"{key}" is missing')
            return None
        self.error(field_where(item, key), "wrong-type", f'"{key}" must be a string, not {kind(v)}')
        return None

    def word(self, obj: dict[str, Any], key: str, item: str, *, required: bool = False) -> str | None:
        """A vocabulary field (status, priority): compared after strip+lower."""
        v = self.text(obj, key, item, required=required)
        return None if v is None else v.strip().lower()

    def optional_text(self, obj: dict[str, Any], key: str, item: str) -> str | None:
        """A field we can live without: a wrong type is a warning and is ignored."""
        v = obj.get(key)
        if v is None or isinstance(v, str):
            return v
        self.warn(field_where(item, key), "wrong-type", f'"{key}" is {kind(v)}, not a string; ignored')
        return None

    def ext_id(self, obj: dict[str, Any], key: str, item: str) -> str | None:
        if key not in obj:
            return None
        v = id_text(obj[key])
        if v is None:
            self.warn(
                field_where(item, key), "wrong-type", f'"{key}" is {kind(obj[key])}, not an id; ignored'
            )
        return v

    def id_list(self, obj: dict[str, Any], key: str, item: str) -> list[str]:
        raw = obj.get(key)
        if raw is None:
            return []
        values = raw if isinstance(raw, list) else [raw]
        out = [i for i in (id_text(v) for v in values) if i is not None]
        if len(out) != len(values):
            self.warn(field_where(item, key), "wrong-type", f'"{key}" holds values that are not ids; ignored')
        return out


def id_text(v: Any) -> str | None:
    """An agent id as text: strings as they are, small integers in decimal."""
    if isinstance(v, str):
        return v if v.strip() else None
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() <= _MAX_ID_BITS:
        return str(v)
    return None


@dataclass(frozen=True)
class ListShape:
    """A whole-list dialect: `{list_key: [{content_key, "status", ...}]}`.

    `foreign` keys on an item mean "this is not my dialect" (opencode items
    never carry Claude's `activeForm`); they keep auto-detection unambiguous.
    """

    dialect: str
    list_key: str
    content_key: str
    foreign: frozenset[str] = frozenset()


def fit_list(payload: Any, shape: ListShape) -> str | None:
    """None if the payload has this dialect's shape, else why not (for messages)."""
    if not isinstance(payload, dict):
        return "not an object"
    key = shape.list_key
    if key not in payload:
        return f'no "{key}"'
    items = payload[key]
    if not isinstance(items, list):
        return f'"{key}" is {kind(items)}, not an array'
    check_item_count(len(items))
    if not items:
        return None
    has_content = False
    for i, it in enumerate(items):
        if isinstance(it, dict):
            for k in shape.foreign:
                if k in it:
                    return f'{key}[{i}] has "{k}"'
            has_content = has_content or shape.content_key in it
    if has_content:
        return None
    first = items[0]
    if isinstance(first, dict):
        return f'{key}[0] has no "{shape.content_key}"'
    return f"{key}[0] is {kind(first)}, not an object"


def _payload_order(f: Finding) -> int:
    """Item index of a finding, so findings read in payload order; list-wide ones last."""
    import re

    m = re.match(_INDEX, f.where)  # re's own cache keeps it compiled
    return int(m.group(1)) if m else sys.maxsize


if TYPE_CHECKING:
    ItemExtra = Callable[[dict[str, Any], Incoming, Reader], None]


def read_list(payload: Any, shape: ListShape, extra: ItemExtra | None = None) -> ParsedWrite:
    """Read a whole-list payload; `extra` reads the dialect's own fields into each item."""
    r = Reader()
    items: list[Incoming] = []
    key = shape.list_key
    raw_items = payload.get(key) if isinstance(payload, dict) else None
    if not isinstance(payload, dict):
        r.error("$", "wrong-shape", f'expected an object with "{key}", got {kind(payload)}')
    elif not isinstance(raw_items, list):
        got = "nothing" if raw_items is None else kind(raw_items)
        r.error(key, "wrong-shape", f'"{key}" must be an array of items, got {got}')
    else:
        check_item_count(len(raw_items))
        for i, raw in enumerate(raw_items):
            where = f"{key}[{i}]"
            if not isinstance(raw, dict):
                r.error(where, "wrong-type", f"{where} is {kind(raw)}, not an object")
                continue
            content = r.text(raw, shape.content_key, where, required=True)
            status = r.word(raw, "status", where, required=True)
            if content is None:
                continue
            inc = Incoming(content=content, status=status, where=where)
            if extra is not None:
                extra(raw, inc, r)
            items.append(inc)
    findings = sorted(r.findings + lint_items(items, shape.dialect), key=_payload_order)
    return ParsedWrite(dialect=shape.dialect, items=items, whole=True, findings=findings)
