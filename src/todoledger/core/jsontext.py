"""Compact JSON text, and reading it back, without importing the `json` package.

`import json` loads `json.decoder` and `json.scanner`, which compile regular
expressions at import: on the agents' verbs (a fresh process per call) that
costs more than encoding a 1,000-item plan. This module calls the C encoder
that `json.dumps` itself uses (`_json.make_encoder`) with the options
`json.dumps(value, ensure_ascii=False, separators=(",", ":"))` passes it, so
the text is the same byte for byte (tests/test_jsontext.py checks it against
`json.dumps`). `loads` reads JSON text with the C scanner `json.loads` uses,
configured as `json.loads` configures it (the same values; text it cannot
read whole is handed to `json.loads`, so every error is json's own
JSONDecodeError, a ValueError). Where the accelerator is
missing (another interpreter), both fall back to `json` itself.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["compact", "encoder", "indented", "loads", "loads_bytes"]


def _default(value: Any) -> Any:
    # json.JSONEncoder.default's own words
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def encoder(
    default: Callable[[Any], Any] | None = None,
    *,
    separators: tuple[str, str] = (",", ":"),
    sort_keys: bool = False,
) -> Callable[[Any], str]:
    """`json.JSONEncoder(ensure_ascii=False, separators=separators, sort_keys=sort_keys,
    default=default).encode`."""
    items, keys = separators
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:  # no C accelerator: the json package is the reference anyway
        import json

        return json.JSONEncoder(
            ensure_ascii=False, separators=separators, sort_keys=sort_keys, default=default
        ).encode
    # As json.JSONEncoder.iterencode builds it for a one-shot encode without indent:
    # markers (check_circular), default, the string encoder of ensure_ascii=False, indent,
    # key separator, item separator, sort_keys, skipkeys, allow_nan.
    make = make_encoder
    strings = encode_basestring
    fallback = default or _default

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as JSONEncoder.encode: a lone string skips the encoder
            return strings(value)
        return "".join(make({}, fallback, strings, None, keys, items, sort_keys, False, True)(value, 0))

    return encode


compact = encoder()


def indented(value: Any, indent: int = 2) -> str:
    """`json.dumps(value, indent=indent, ensure_ascii=False)` for what a task file holds
    (objects with string keys, arrays, strings, integers, booleans and null): the same
    text, byte for byte (tests/test_jsontext.py), without the pure-Python encoder's
    import of `json` (and `re`). Anything else goes to `json.dumps` itself."""
    try:
        return _indented(value, "\n", " " * indent)
    except _Other:
        import json

        return json.dumps(value, indent=indent, ensure_ascii=False)


class _Other(Exception):
    """A value `indented` leaves to `json.dumps`."""


def _indented(value: Any, newline: str, step: str) -> str:
    if isinstance(value, str):
        return compact(value)
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if type(value) is int:  # not a bool, nor a subclass with its own repr
        return int.__repr__(value)
    inner = newline + step
    if type(value) is list:
        if not value:
            return "[]"
        return "[" + inner + ("," + inner).join(_indented(v, inner, step) for v in value) + newline + "]"
    if type(value) is dict and all(type(k) is str for k in value):
        if not value:
            return "{}"
        parts = (compact(k) + ": " + _indented(v, inner, step) for k, v in value.items())
        return "{" + inner + ("," + inner).join(parts) + newline + "}"
    raise _Other


_WHITESPACE = " \t\n\r"


class _Options:
    """What the C scanner reads of a `json.JSONDecoder()`: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict[str, str] = {}  # noqa: RUF012 (read by the scanner, as JSONDecoder's)


def _reader() -> Callable[[str], Any]:
    try:
        from _json import make_scanner
    except ImportError:
        import json

        return json.loads
    scan = make_scanner(_Options())  # type: ignore[arg-type]  # duck-typed: it reads these attributes

    def loads(text: str) -> Any:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except RecursionError:
            raise
        except Exception:  # StopIteration, JSONDecodeError, or a SystemError (see _refused)
            return _refused(text)
        if end != len(text) and text[end:].strip(_WHITESPACE):  # extra data
            return _refused(text)
        return value

    return loads


def _refused(text: str) -> Any:
    """Text the scanner did not read whole: `json.loads` says why, in its own words
    (JSONDecodeError, a ValueError). Not the scanner's own error: it raises that
    through `json.decoder`, and where `json` was never imported (the point of this
    module) it fails with a SystemError instead."""
    import json

    return json.loads(text)


loads = _reader()


# json.detect_encoding reads bytes as UTF-8 unless they start with a byte-order mark
# (EF, FE, FF) or have a NUL in the first two bytes (UTF-16 or UTF-32 without one).
_NOT_PLAIN_UTF8 = frozenset({0x00, 0xEF, 0xFE, 0xFF})


def loads_bytes(data: bytes) -> Any:
    """`json.loads(data)` for bytes (an agent's hook event on stdin), without importing
    `json` for the usual UTF-8 text: that is decoded as `json.loads` decodes it and read
    by `loads`. Anything `json.loads` would read otherwise (a byte-order mark, UTF-16 or
    UTF-32), and anything that fails here, goes to `json.loads` itself, so the value
    and every error (JSONDecodeError, its message) are json's own."""
    if data and data[0] not in _NOT_PLAIN_UTF8 and data[1:2] != b"\x00":
        try:
            text = data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # json says it, in its own words
            pass
        else:
            return loads(text)  # its errors are json's own already
    import json

    return json.loads(data)
