"""Claude Code's task list on disk, written the way Claude Code itself writes it.

Claude Code takes the list's lock (proper-lockfile: the directory
`<list>/.lock.lock`, stale after 10 s) to create a task, and a task's own lock
(`<id>.json.lock`) to update one. A writer that skips the list lock can lose
rows to an id clash (Claude writes new rows without an exclusive create); one
that holds it longer than Claude's retries (about 2 s) makes the model's own
TaskCreate fail. So the lock is held for milliseconds, taken with a short
patience, and never across a ledger query; every row is written to a
temporary file and renamed into place, a row of ours only while its file is
still the one todoledger last wrote or saw.
"""

from __future__ import annotations

import os
import time

from todoledger.core.digests import sha256
from todoledger.core.scoped import contextmanager

# Not `contextlib`, `hashlib` (OpenSSL's start) or `collections.abc`: the Claude Code hook
# loads this module on each call that syncs the panel (bench/bench_hooks.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

LIST_LOCK = ".lock.lock"
HIGH = ".highwatermark"
STALE_S = 10.0
WAIT_S = 2.0
_POLL_S = 0.005


def digest(data: bytes) -> str:
    return str(sha256(data).hexdigest())


def _take(path: str, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        try:
            os.mkdir(path)
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(path).st_mtime > STALE_S:  # its holder died: take it over
                    os.rmdir(path)
                    continue
            except OSError:
                pass
        except FileNotFoundError:
            return False  # the list's folder is gone
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


@contextmanager
def lock(folder: str, wait: float | None = None) -> Iterator[bool]:
    """The list's lock; yields whether it was taken within `wait` seconds (default WAIT_S)."""
    path = os.path.join(folder, LIST_LOCK)
    got = _take(path, WAIT_S if wait is None else wait)
    try:
        yield got
    finally:
        if got:
            try:  # noqa: SIM105 (contextlib's import, on the hook path)
                os.rmdir(path)
            except OSError:
                pass


def listing(folder: str) -> set[str] | None:
    """The row ids in the folder (one directory read); None if there is no folder."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    return {n[:-5] for n in names if n.endswith(".json") and not n.startswith(".")}


def read(folder: str, row_id: str) -> bytes | None:
    try:
        with open(os.path.join(folder, f"{row_id}.json"), "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _temporary(folder: str, row_id: str, data: bytes) -> str:
    tmp = os.path.join(folder, f".{row_id}.json.{os.getpid()}.{time.monotonic_ns()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    return tmp


def create(folder: str, row_id: str, data: bytes) -> bool:
    """A new row, never over an existing file (a hard link fails where the name is taken)."""
    tmp = _temporary(folder, row_id, data)
    try:
        os.link(tmp, os.path.join(folder, f"{row_id}.json"))
        return True
    except FileExistsError:
        return False
    finally:
        try:  # noqa: SIM105 (contextlib's import, on the hook path)
            os.unlink(tmp)
        except OSError:
            pass


def replace(folder: str, row_id: str, data: bytes, expect: str) -> bool:
    """Rewrite a row only while it is still the file whose hash is `expect` (read
    again just before the rename). Without the row's own lock, which would cost two
    more directory operations a row: a TaskUpdate that lands between that read and
    the rename loses only its file, never the call, which the hook mirrors from its
    own input; the ledger then has it, and the next sync writes it back."""
    current = read(folder, row_id)
    if current is None or digest(current) != expect:
        return False
    tmp = _temporary(folder, row_id, data)
    try:
        os.replace(tmp, os.path.join(folder, f"{row_id}.json"))
    except OSError:
        try:  # noqa: SIM105 (contextlib's import, on the hook path)
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def remove(folder: str, row_id: str, expect: str) -> bool:
    """Delete a row only while it is still the file whose hash is `expect`."""
    current = read(folder, row_id)
    if current is None or digest(current) != expect:
        return False
    try:  # noqa: SIM105 (contextlib's import, on the hook path)
        os.unlink(os.path.join(folder, f"{row_id}.json"))
    except OSError:
        pass
    return True


def highwatermark(folder: str) -> int:
    try:
        with open(os.path.join(folder, HIGH), encoding="utf-8") as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def raise_highwatermark(folder: str, value: int) -> None:
    """Claude Code numbers new tasks above this: above our rows too, even once they are gone."""
    if value <= highwatermark(folder):
        return
    tmp = os.path.join(folder, f".highwatermark.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(str(value))
    os.replace(tmp, os.path.join(folder, HIGH))
