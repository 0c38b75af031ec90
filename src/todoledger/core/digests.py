"""`hashlib.sha256` and `hashlib.blake2b` without importing `hashlib`.

`import hashlib` loads OpenSSL (`_hashlib`), which costs a hook or an agent's
verb (a fresh process per call) a good part of a bare interpreter's start.
CPython's own modules compute the same digests: `_sha2` (3.12+) or `_sha256`
(3.11) for SHA-256, and `_blake2`, which is what `hashlib.blake2b` is on every
CPython. Each is found once, by the interpreter's version, so no import fails
(a failed import is not cached: it would search every finder again on each
call, tests/test_read_imports.py); `hashlib` only where a module is missing.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["blake2b", "sha256"]

_FOUND: dict[str, Callable[..., Any]] = {}


def sha256(data: bytes = b"") -> Any:
    """`hashlib.sha256(data)`: an object with `hexdigest()`, `digest()` and `update()`."""
    found = _FOUND.get("sha256")
    if found is None:
        found = _FOUND["sha256"] = _find_sha256()
    return found(data)


def blake2b(data: bytes = b"", *, digest_size: int = 64) -> Any:
    """`hashlib.blake2b(data, digest_size=digest_size)`."""
    found = _FOUND.get("blake2b")
    if found is None:
        found = _FOUND["blake2b"] = _find_blake2b()
    return found(data, digest_size=digest_size)


def _find_sha256() -> Callable[..., Any]:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256 as found  # type: ignore[import-not-found,unused-ignore]
        else:
            from _sha256 import sha256 as found  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # another interpreter: hashlib is the reference anyway
        import hashlib

        return hashlib.sha256
    return found  # type: ignore[no-any-return,unused-ignore]


def _find_blake2b() -> Callable[..., Any]:
    try:
        from _blake2 import blake2b as found
    except ImportError:  # another interpreter
        import hashlib

        return hashlib.blake2b
    return found
