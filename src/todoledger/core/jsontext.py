"""Compact JSON text, and reading it back, without importing the `json` package.

`import json` loads `json.decoder` and `json.scanner`, which compile regular
expressions at import: on the agents' verbs (a fresh process per call) that
costs more than encoding a 1,000-item plan. This module calls the C encoder
that `json.dumps` itself uses (`_json.make_encoder`) with the options
`json.dumps(value, ensure_ascii=False, separators=(",", ":"))` passes it, so
the text is the same byte for byte (tests/test_jsontext.py checks it against
`json.dumps`). `loads` reads JSON text with the C scanner `json.loads` uses,
configured as `json.loads` configures it (the same values; errors are
ValueError, as json's own JSONDecodeError is). Where the accelerator is
missing (another interpreter), both fall back to `json` itself.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["compact", "encoder", "loads"]


def _default(value: Any) -> Any:
    # json.JSONEncoder.default's own words
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def encoder(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """`json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default).encode`."""
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:  # no C accelerator: the json package is the reference anyway
        import json

        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default).encode
    # As json.JSONEncoder.iterencode builds it for a one-shot encode without indent:
    # markers (check_circular), default, the string encoder of ensure_ascii=False, indent,
    # key separator, item separator, sort_keys, skipkeys, allow_nan.
    make = make_encoder
    strings = encode_basestring
    fallback = default or _default

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as JSONEncoder.encode: a lone string skips the encoder
            return strings(value)
        return "".join(make({}, fallback, strings, None, ":", ",", False, False, True)(value, 0))

    return encode


compact = encoder()


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
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text) and text[end:].strip(_WHITESPACE):
            raise ValueError(f"Extra data: char {end}")
        return value

    return loads


loads = _reader()
