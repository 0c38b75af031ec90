"""JSON on stdout, shared by the lean entry point and the click commands
(neither imports the other)."""

from __future__ import annotations

import sys


def dumps(data: object) -> str:
    # Without indent, the C encoder, reached without importing `json` (core/jsontext.py);
    # indent only for a person at a terminal.
    if sys.stdout.isatty():
        import json

        return json.dumps(data, ensure_ascii=False, indent=2)
    from todoledger.core.jsontext import compact

    return compact(data)
