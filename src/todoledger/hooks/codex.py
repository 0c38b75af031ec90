"""Codex CLI: import `update_plan` calls from the rollout on Stop and SessionStart.

The rollout is read incrementally by `todoledger.ingest.rollout` (the one
ingest entry point hooks may call; see docs/ARCHITECTURE.md).
On SessionStart the plan's recovery text goes back as additionalContext.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.hooks import ledger as hook_ledger

    name = event.get("hook_event_name")
    if name not in ("Stop", "SessionStart"):
        return None
    raw = event.get("transcript_path")
    transcript = Path(raw) if isinstance(raw, str) and raw else None
    if transcript is not None and not transcript.is_file():
        transcript = None
    with hook_ledger(cwd, create=transcript is not None) as ledger:
        plan = None
        if transcript is not None:
            from todoledger.ingest.rollout import import_rollout

            plan = import_rollout(ledger, transcript)
        if name != "SessionStart":
            return None
        if plan is None or not ledger.show(plan)["items"]:
            plan = None  # nothing recorded for this session yet: recover the default plan
        text = ledger.prime(plan)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
