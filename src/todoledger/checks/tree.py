"""The state of the working tree a check ran against, so a receipt can go stale.

Git: HEAD plus a hash of everything uncommitted (the diff against HEAD and
the content of untracked files). Declared `watch` paths: a hash of each.
"""

from __future__ import annotations

import hashlib
import os
import subprocess

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_GIT_TIMEOUT = 30
_CHUNK = 1 << 20


def state(cwd: str, watch: Sequence[str] = ()) -> dict[str, Any] | None:
    """The fingerprint of `cwd`'s tree, or of the watched paths; None outside git with nothing watched."""
    if watch:
        return {"watch": {p: path_hash(os.path.join(cwd, p)) for p in watch}, "root": os.path.abspath(cwd)}
    root = _git(cwd, "rev-parse", "--show-toplevel")
    if root is None:
        return None
    top = root.decode("utf-8", "replace").strip()
    head = _git(top, "rev-parse", "--verify", "-q", "HEAD")
    return {"root": top, "head": head.decode().strip() if head else None, "dirty": dirty_hash(top)}


def same(recorded: dict[str, Any]) -> bool:
    """Does the tree still look as it did when the receipt was taken?"""
    root = recorded.get("root")
    if not isinstance(root, str):
        return True
    if "watch" in recorded:
        return bool(recorded["watch"] == {p: path_hash(os.path.join(root, p)) for p in recorded["watch"]})
    return state(root) == recorded


def dirty_hash(top: str) -> str:
    h = hashlib.sha256()
    changes = _git(top, "diff", "HEAD", "--binary", "--no-ext-diff")
    if changes is None:  # no commit yet: what is staged and what is not
        changes = (_git(top, "diff", "--cached", "--binary") or b"") + (_git(top, "diff", "--binary") or b"")
    h.update(changes)
    untracked = _git(top, "ls-files", "--others", "--exclude-standard", "-z") or b""
    for name in sorted(n for n in untracked.split(b"\0") if n):
        h.update(b"\0untracked\0" + name + b"\0")
        h.update(path_hash(os.path.join(top, os.fsdecode(name))).encode())
    return h.hexdigest()


def path_hash(path: str) -> str:
    """Content hash of a file, or of a folder's files (names and contents); `missing` if absent."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(folder, name)
                h.update(os.path.relpath(full, path).encode("utf-8", "surrogateescape") + b"\0")
                _feed(h, full)
        return h.hexdigest()
    if not os.path.exists(path):
        return "missing"
    _feed(h, path)
    return h.hexdigest()


def _feed(h: Any, path: str) -> None:
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    except OSError as exc:
        h.update(f"unreadable:{exc.errno}".encode())


def _git(cwd: str, *args: str) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
