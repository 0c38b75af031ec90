"""The state of the working tree a check ran against, so a receipt can go stale.

A gate's receipt records the whole tree (or its watched paths); a sweep's run
records only its inputs (`inputs_state`): the same hashes, compared by `same`.

Git: HEAD plus a hash of everything uncommitted (the diff against HEAD and
the content of untracked files). Declared `watch` paths: a hash of each.
And the inputs a check names (its `file:` path, the files its command line
names), git-ignored ones included: a model file or a `.env` that `git status`
never reports still decides what the check proved.
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
_HASH_LIMIT = 16 << 20  # a larger input is fingerprinted by size and modification time
MAX_INPUTS = 16


def named_inputs(cwd: str, kind: str, target: str) -> tuple[str, ...]:
    """The existing files a check names: a `file:` check's path, the words of a
    command line that are files under `cwd` (at most MAX_INPUTS)."""
    if kind == "file":
        words = [os.path.expanduser(target)]
    elif kind == "cmd":
        import re

        words = [w.strip("'\"") for w in re.split(r"[\s;&|()<>=]+", target)]
        words = [w for w in words if w and not w.startswith("-") and "$" not in w and "*" not in w]
    else:
        return ()
    found: list[str] = []
    for w in dict.fromkeys(words):
        if os.path.isfile(os.path.join(cwd, w)):
            found.append(w)
            if len(found) >= MAX_INPUTS:
                break
    return tuple(found)


def state(cwd: str, watch: Sequence[str] = (), inputs: Sequence[str] = ()) -> dict[str, Any] | None:
    """The fingerprint of `cwd`'s tree, or of the watched paths, with the named
    inputs; None outside git with nothing watched or named."""
    if watch:
        out: dict[str, Any] = {
            "watch": {p: path_hash(os.path.join(cwd, p)) for p in watch},
            "root": os.path.abspath(cwd),
        }
        return _with_inputs(out, cwd, inputs)
    if not _in_git(cwd):
        return _with_inputs({"root": os.path.abspath(cwd)}, cwd, inputs) if inputs else None
    return _with_inputs(_git_state(cwd), cwd, inputs) if inputs else _git_state(cwd)


def inputs_state(cwd: str, watch: Sequence[str] = (), inputs: Sequence[str] = ()) -> dict[str, Any] | None:
    """What a sweep's run depends on: the watched paths and the named inputs,
    by content, and not the rest of the tree (None when it names nothing: a
    run is fresh for its recorded inputs, and records the commit for display)."""
    if watch:
        return state(cwd, watch, inputs)
    if not inputs:
        return None
    return _with_inputs({"root": os.path.abspath(cwd)}, cwd, inputs)


def _with_inputs(out: dict[str, Any] | None, cwd: str, inputs: Sequence[str]) -> dict[str, Any] | None:
    if not inputs:
        return out
    out = dict(out or {"root": os.path.abspath(cwd)})
    out["inputs"] = {p: input_hash(os.path.join(cwd, p)) for p in inputs}
    out.setdefault("input_root", os.path.abspath(cwd))
    return out


def input_hash(path: str) -> str:
    """A named input's fingerprint: its content's hash, or size and mtime for a large file."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    if st.st_size > _HASH_LIMIT:
        return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
    return path_hash(path)


def _git_state(cwd: str) -> dict[str, Any] | None:
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


def receipt_state(cwd: str, kind: str, target: str, watch: Sequence[str] = ()) -> dict[str, Any] | None:
    """What a check's receipt depends on, as a sweep's run records it (issue 31): a `file:`
    check its file (present or not); a `cmd:` check the whole tree, or its watched paths
    (a command's real inputs cannot be read from its line: `pytest -q` names no file), with
    the files its line names; any other check (metric, http, port, disk...) reads no file of
    the tree, so only its watched paths, if any. None: nothing the tree can make stale."""
    if kind == "file":
        return inputs_state(cwd, watch, (os.path.expanduser(target),))
    if kind == "cmd":
        return state(cwd, watch, named_inputs(cwd, kind, target))
    return inputs_state(cwd, watch, ())


def same(recorded: dict[str, Any]) -> bool:
    """Does the tree still look as it did when the receipt was taken?"""
    return changed(recorded) is None


def changed(recorded: dict[str, Any]) -> str | None:
    """What changed since the receipt was taken, for people: the input by its path
    (`the file results.json`, `the watched path src/`), or `the tree`; None if nothing."""
    inputs = recorded.get("inputs")
    if isinstance(inputs, dict):
        base = str(recorded.get("input_root") or recorded.get("root") or ".")
        for p, h in inputs.items():
            if input_hash(os.path.join(base, p)) != h:
                return f"the file {p}"
        recorded = {k: v for k, v in recorded.items() if k not in ("inputs", "input_root")}
        if "head" not in recorded and "watch" not in recorded:
            return None
    root = recorded.get("root")
    if not isinstance(root, str):
        return None
    if "watch" in recorded:
        for p, h in recorded["watch"].items():
            if path_hash(os.path.join(root, p)) != h:
                return f"the watched path {p}"
        return None
    return None if _git_state(root) == recorded else "the tree"


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
    from todoledger.store.locate import is_git_top

    folder = os.path.abspath(cwd)
    while True:
        if is_git_top(folder):
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
