"""JSON on stdout, shared by the lean entry point and the click commands
(neither imports the other)."""

from __future__ import annotations

import json
import sys


def dumps(data: object) -> str:
    # The C encoder only runs without indent; indent only for a person at a terminal.
    if sys.stdout.isatty():
        return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
