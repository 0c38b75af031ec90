"""What an install changes, and the only place that touches the disk."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from todoledger.core.model import LedgerError

_NEW_FILE_MODE = 0o644


@dataclass
class FileChange:
    """One config file: its text before (None: did not exist) and after."""

    path: Path
    before: str | None
    after: str
    summary: list[str]
    # "block": our marked block in an instructions file (removed by its
    # markers); "edit": anything else (removed by its recorded hunks).
    kind: str = "edit"
    lead: str = ""  # for a block: the newlines added before it
    approval: bool = False  # an approval the user asked for (--approve)
    delete: bool = False  # uninstall: the file goes (install created it)
    fmt: str = "json"  # "json" | "toml" | "block" | "file": how its elements are found again
    # The elements (install/elements.py) this change ensures, each with whether it added it.
    ensured: list[tuple[dict[str, Any], bool]] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)  # uninstall: ours, changed by someone: left

    @property
    def created(self) -> bool:
        return self.before is None

    @property
    def changed(self) -> bool:
        return self.delete or self.before != self.after


@dataclass
class InstallResult:
    agent: str
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)


def read_text(path: Path) -> str | None:
    """The file's text, None if missing; newlines are kept as they are."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as e:
        raise LedgerError(f"{path}: is a directory, expected a config file") from e
    except OSError as e:
        raise LedgerError(f"{path}: cannot read: {e.strerror}") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LedgerError(f"{path}: not UTF-8 text (byte {e.start}); nothing was changed") from e


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` in one step, keeping its mode; a crash leaves old or new.

    A symlinked config (dotfile managers do this) is written through to its
    target, so the link survives.
    """
    target = path.resolve() if path.is_symlink() else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = _NEW_FILE_MODE
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise LedgerError(f"{path}: cannot write: {e.strerror}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:  # incl. Ctrl-C: never leave a temp file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise LedgerError(f"{path}: cannot write: {e.strerror}") from e
        raise
