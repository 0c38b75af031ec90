"""What each tool's result holds, as the `outputSchema` it is listed with.

Every result carries its data twice, as the protocol asks of a tool with an
output schema: `structuredContent` (for clients that read data) and the same
JSON as one text block (for clients that show the model text). The schemas
name the top-level fields only, compactly: they cost tokens in every
`tools/list`, and the results' inner shapes follow the agent's own dialect.
"""

from __future__ import annotations

from typing import Any

_S: dict[str, Any] = {"type": "string"}
_I: dict[str, Any] = {"type": "integer"}
_A: dict[str, Any] = {"type": "array"}
_O: dict[str, Any] = {"type": "object"}


def _schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    # Only the fields every result has are listed: each listed field costs tokens in
    # every tools/list, and the others are named in the tool's description.
    # (`properties` documents them here; the published schema names them as required.)
    return {"type": "object", "required": [k for k in required if k in properties]}


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "todowrite": _schema(
        ["plan", "revision", "ids"],
        plan=_S,
        revision=_I,
        todos=_A,
        ids={"type": "array", "items": _S},
        writer=_S,
        changes=_O,
        dropped=_A,
        conflicts=_A,
        notices=_A,
        warnings=_A,
        hint=_S,
    ),
    "todoread": _schema(
        ["plan", "revision", "counts"],
        plan=_S,
        revision=_I,
        counts=_O,
        in_progress=_A,
        ready=_A,
        blocked=_I,
        waits_for_cancelled=_A,
        contested=_A,
        dropped=_A,
        dropped_note=_S,
        recent=_A,
        items=_A,
        hint=_S,
    ),
    "plan_next": _schema(
        ["plan"], plan=_S, ready=_A, waits_on_cancelled=_A, claimed={"type": ["object", "null"]}, hint=_S
    ),
    "plan_update": _schema(["plan", "item"], plan=_S, item=_O, hint=_S),
    "plan_verify": _schema(["plan", "receipts"], plan=_S, receipts=_A, skipped=_A, hint=_S),
    "plan_sweep": _schema(["sweep", "runs"], plan=_S, sweep=_S, runs=_I, failed=_I, stopped=_S),
}
