"""Text the ledger can store: no lone surrogates.

Python lets them into a `str` from three doors: a JSON escape such as
`"\\ud800"`, command-line bytes that are not UTF-8 (decoded with
`surrogateescape`) and environment variables. SQLite needs UTF-8, so such a
string failed at the write with UnicodeEncodeError. Every entry point asks
`bad_text` first and refuses with one line. Stdlib only: on the hook path.
"""

from __future__ import annotations

import json

from todoledger.core.model import Finding, LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["bad_text", "check_text", "compact_encoder", "unicode_findings"]


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def compact_encoder(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))` as one C encoder
    made once: `JSONEncoder.encode` builds a new one on every call, which costs more
    than encoding the small values of an event. (No check for circular values: JSON
    read from an agent cannot hold any.)"""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default).encode
    iterencode = make(
        None, default or _not_serializable, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(iterencode(value, 0))

    return encode


def bad_text(text: str) -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = ord(text[exc.start])
        cause = "bytes that are not UTF-8" if 0xDC80 <= char <= 0xDCFF else "a lone surrogate"
        return f"is not valid Unicode text ({cause}, U+{char:04X} at character {exc.start + 1})"
    return None


def check_text(name: str, value: object) -> None:
    """Raise one clear line when a text (or a list of texts) cannot be stored."""
    values = value if isinstance(value, list | tuple) else [value]
    for v in values:
        if isinstance(v, str):
            why = bad_text(v)
            if why is not None:
                raise LedgerError(f"{name} {why}: nothing was written")


def unicode_findings(value: Any, where: list[str | int] | None = None) -> list[Finding]:
    """An error finding for every key or string in a JSON value that cannot be stored."""
    if value is None or _storable(value):
        return []
    # Only here: `jsonload` (and its `math`, `re`) stays unloaded on reads, which check no text.
    from todoledger.core.jsonload import json_path

    findings: list[Finding] = []
    stack: list[tuple[Any, list[str | int]]] = [(value, list(where or []))]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            why = bad_text(node)
            if why is not None:
                findings.append(Finding("error", json_path(path), "invalid-unicode", why.removeprefix("is ")))
        elif isinstance(node, dict):
            for key, child in reversed(node.items()):
                why = bad_text(key) if isinstance(key, str) else None
                if why is not None:
                    findings.append(Finding("error", json_path(path), "invalid-unicode", f"a key {why}"))
                stack.append((child, [*path, key]))
        elif isinstance(node, list):
            stack.extend((child, [*path, i]) for i, child in reversed(list(enumerate(node))))
    return findings


# One encoder for every payload: json.dumps with options would build one per call.
_ENCODE = compact_encoder(default=repr)


def _storable(value: Any) -> bool:
    """Whether every text in `value` encodes as UTF-8, at C speed: the JSON
    encoder copies lone surrogates through, and the encode refuses them."""
    try:
        text = _ENCODE(value)
    except (TypeError, ValueError, RecursionError):
        return False  # the walk tells what is wrong, if anything
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
