"""Strict JSON loading for agents' payloads.

Python's json module silently keeps the last of two equal keys; a real
agent payload lost an item's status that way, so duplicates are reported.
Size is checked before parsing so an oversized payload is refused in
microseconds instead of being parsed. Stdlib only: this is on the hook path.
"""

from __future__ import annotations

import json
import math
import re

from todoledger.core.model import MAX_PAYLOAD_BYTES, Finding, LimitError, LintError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["json_path", "load", "load_checked", "payload_size", "size_text"]

_MB = 1024 * 1024
_KB = 1024
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VALUE_PREVIEW = 40


def size_text(n: int) -> str:
    """Human size: '10.5 MB', '2 MB', '300 KB', '12 bytes'."""
    if n >= _MB:
        return f"{n / _MB:.1f}".removesuffix(".0") + " MB"
    if n >= _KB:
        return f"{n / _KB:.1f}".removesuffix(".0") + " KB"
    return f"{n} bytes"


def payload_size(data: str | bytes) -> int:
    """Size in UTF-8 bytes."""
    return len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))


def _check_size(data: str | bytes) -> None:
    # Each char is 1..4 UTF-8 bytes, so most strings need no encoding to decide.
    if isinstance(data, str) and len(data) * 4 <= MAX_PAYLOAD_BYTES:
        return
    n = payload_size(data)
    if n > MAX_PAYLOAD_BYTES:
        raise LimitError(f"payload is {size_text(n)}; the limit is {size_text(MAX_PAYLOAD_BYTES)}")


def json_path(parts: list[str | int]) -> str:
    """`['todos', 3, 'status']` -> `todos[3].status`; the root is `$`."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.match(p):
            out += f".{p}" if out else p
        else:
            out += f"[{json.dumps(p, ensure_ascii=False)}]"
    return out or "$"


def _invalid(line: int, col: int, msg: str) -> LintError:
    text = f"invalid JSON at line {line} column {col}: {msg}"
    return LintError([Finding("error", "$", "invalid-json", text)])


def _decode(data: bytes) -> str:
    try:
        # A UTF-8 byte-order mark is harmless noise some Windows tools add.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _invalid(line, col, f"not UTF-8 (byte 0x{data[e.start]:02x})") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # `1e999` is valid JSON syntax but would become inf, which JSON cannot write back.
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


class _Dupes:
    """Collects objects that had duplicate keys while the parser runs.

    The objects themselves are kept (not just their ids) so that an id
    cannot be reused by a later object after one is discarded.
    """

    def __init__(self) -> None:
        self.found: dict[int, tuple[dict[str, Any], list[tuple[str, list[Any]]]]] = {}

    def hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: dict[str, list[Any]] = {}
            for k, v in pairs:
                seen.setdefault(k, []).append(v)
            dup = [(k, vs) for k, vs in seen.items() if len(vs) > 1]
            self.found[id(d)] = (d, dup)
        return d


def _preview(v: Any) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = "…"
    return text if len(text) <= _VALUE_PREVIEW else text[: _VALUE_PREVIEW - 1] + "…"


def _dupe_findings(root: Any, dupes: _Dupes) -> list[Finding]:
    """Walk the tree (iteratively: it may be deep) to give each duplicate a path."""
    findings: list[Finding] = []
    stack: list[tuple[Any, list[str | int]]] = [(root, [])]
    while stack and dupes.found:
        node, path = stack.pop()
        if isinstance(node, dict):
            hit = dupes.found.pop(id(node), None)
            if hit is not None:
                for key, values in hit[1]:
                    lost = (
                        "the first was lost" if len(values) == 2 else f"the first {len(values) - 1} were lost"
                    )
                    shown = ", ".join(_preview(v) for v in values)
                    findings.append(
                        Finding(
                            "error",
                            json_path(path),
                            "duplicate-key",
                            f'duplicate key "{key}" (values {shown}); {lost}',
                        )
                    )
            stack.extend((v, [*path, k]) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, [*path, i]) for i, v in reversed(list(enumerate(node))))
    return findings


def load_checked(data: str | bytes) -> tuple[Any, list[Finding]]:
    """Parse strictly; return the value and duplicate-key findings (errors).

    Raises LimitError when the payload is too big (before parsing) and
    LintError for text that is not JSON or bytes that are not UTF-8.
    """
    _check_size(data)
    text = _decode(data) if isinstance(data, bytes) else data
    dupes = _Dupes()
    try:
        value = json.loads(
            text, object_pairs_hook=dupes.hook, parse_constant=_reject_constant, parse_float=_finite_float
        )
    except json.JSONDecodeError as e:
        raise _invalid(e.lineno, e.colno, e.msg) from None
    except RecursionError:
        raise LintError(
            [Finding("error", "$", "invalid-json", "invalid JSON: nested too deeply to read")]
        ) from None
    except ValueError as e:
        # NaN/Infinity and integers beyond Python's digit limit carry no position.
        raise LintError([Finding("error", "$", "invalid-json", f"invalid JSON: {e}")]) from None
    if not dupes.found:
        return value, []
    return value, _dupe_findings(value, dupes)


def load(data: str | bytes) -> Any:
    """Parse strictly; raise LintError if there is any error (duplicate keys too)."""
    value, findings = load_checked(data)
    if any(f.level == "error" for f in findings):
        raise LintError(findings)
    return value
