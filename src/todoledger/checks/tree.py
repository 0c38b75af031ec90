"""The state of the working tree a check ran against, so a receipt can go stale.

Git: HEAD plus a hash of everything uncommitted (the diff against HEAD and
the content of untracked files). Declared `watch` paths: a hash of each.
"""

from __future__ import annotations

import os

from todoledger.core.checkspec import sha256

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
    if not _in_git(cwd):
        return None
    found = _git(cwd, "rev-parse", "--show-toplevel", "HEAD")  # one process for both, as a rule
    head: str | None = None
    if found is not None:
        top, head = found.decode("utf-8", "surrogateescape").strip().rsplit("\n", 1)
    else:
        bare = _git(cwd, "rev-parse", "--show-toplevel")  # a repository without a commit, or none
        if bare is None:
            return None
        top = bare.decode("utf-8", "surrogateescape").strip()
    return {"root": top, "head": head, "dirty": dirty_hash(top)}


def same(recorded: dict[str, Any]) -> bool:
    """Does the tree still look as it did when the receipt was taken?"""
    root = recorded.get("root")
    if not isinstance(root, str):
        return True
    if "watch" in recorded:
        return bool(recorded["watch"] == {p: path_hash(os.path.join(root, p)) for p in recorded["watch"]})
    return state(root) == recorded


def dirty_hash(top: str) -> str:
    """A hash of every path `git status` reports (modified, staged, deleted, untracked) and its content now."""
    listing = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames") or b""
    h = sha256()
    for entry in sorted(e for e in listing.split(b"\0") if e):
        name = os.fsdecode(entry[3:])
        h.update(entry + b"\0")
        h.update(path_hash(os.path.join(top, name)).encode())
    return h.hexdigest()


def _in_git(cwd: str) -> bool:
    """Is there a `.git` above cwd? Saves starting git (the cost of a gate) outside repositories."""
    if os.environ.get("GIT_DIR"):
        return True
    folder = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def path_hash(path: str) -> str:
    """Content hash of a file, or of a folder's files (names and contents); `missing` if absent."""
    h = sha256()
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
    import subprocess  # only inside a repository: outside, a gate never starts a process

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
