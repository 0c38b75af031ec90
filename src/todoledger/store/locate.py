"""Where the ledger lives: TODOLEDGER_DB, else the nearest `.todoledger/`
above the working directory, else the git root's `.todoledger/`."""

from __future__ import annotations

import os
from pathlib import Path

DIRNAME = ".todoledger"
FILENAME = "ledger.db"


def ledger_path(cwd: Path | None = None) -> Path:
    override = os.environ.get("TODOLEDGER_DB")
    if override:
        return Path(override).expanduser()
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / DIRNAME).is_dir():
            return folder / DIRNAME / FILENAME
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder / DIRNAME / FILENAME
    return start / DIRNAME / FILENAME
