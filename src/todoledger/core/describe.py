"""One line of plain English for an event, shared by every renderer."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def short(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(value: Any) -> str:
    """A value in quotes, its text as written (issue 31: never a Python repr, whose
    `the agent\\'s` escapes people read on the board): single quotes, or double where the
    text holds one, or “ ” where it holds both; a line break shown as a space."""
    if not isinstance(value, str):
        return repr(value)  # a number, None, a list: as Python writes it, which is how it reads
    text = value.replace("\r\n", " ").replace("\n", " ")
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return f"“{text}”"


def when(ev: Mapping[str, Any]) -> str:
    """When an event happened, for people: its time, or, where its change carries no time of
    its own (store migration `untimed_ops`), the place its source gives it."""
    return str(ev.get("where") or "time not recorded") if ev.get("untimed") else str(ev["at"])


def describe_event(ev: dict[str, Any]) -> str:
    field, old, new = ev["field"], ev["old"], ev["new"]
    if field == "created":
        return f"added {quoted(short(new.get('content', '')))} [{new.get('status', 'pending')}]"
    if field == "removed":
        return "removed (undo)"
    if field == "status":
        return f"{old} → {new}"
    if field == "content":
        return f"reworded {quoted(short(old))} → {quoted(short(new))}"
    if field == "position":
        return "reordered"
    if field == "conflict":
        return f"conflict on {new['field']}: kept {quoted(new['kept'])}, set aside {quoted(new['rejected'])}"
    if field == "dropped":
        return f"dropped from {new}'s list"
    if field == "claimed" and isinstance(new, dict):
        return (
            f"claimed by {new.get('holder')} (token {new.get('token')}, lease until {new.get('expires_at')})"
        )
    if field == "released" and isinstance(new, dict):
        return f"{new.get('holder')}'s claim released ({new.get('why')}, token {new.get('token')})"
    if isinstance(new, dict) or isinstance(old, dict):  # an annotation: its words, never its JSON
        return _annotation(field, old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {})
    if field == "depends_on":
        return f"now waits for {', '.join(new or []) or 'nothing'}"
    if old is None:
        return f"{field}: {quoted(short(new))}"
    if new is None:
        return f"{field} cleared (was {quoted(short(old))})"
    return f"{field}: {quoted(short(old))} → {quoted(short(new))}"


def _spec(d: dict[str, Any]) -> str:
    return short(str(d.get("spec", "")).split("\n", 1)[0], 80)


def _annotation(field: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    """Events whose value is a record (a check, a receipt, a number, a forced change), in words."""
    if field == "check" and new:
        kind = "replaced by" if old else "added"
        trusted = "" if new.get("trusted", True) else " (not trusted yet)"
        return f"{new.get('role', 'gate')} {kind} {new.get('id', '')}: {_spec(new)}{trusted}".replace(
            "  ", " "
        )
    if field == "check":
        return f"check {old.get('id', '')} removed: {_spec(old)}"
    if field == "receipt":
        out = short(" ".join(str(new.get("output") or "").split()[-20:]), 100)
        return f"check {new.get('check', '')} {new.get('result', '?')}: {_spec(new)}" + (
            f" ({out})" if out else ""
        )
    if field == "metric":
        how = new.get("provenance") or "typed"
        return f"{new.get('name')} = {new.get('value')} (run {new.get('run')}, {how})"
    if field == "metric_accepted":
        return f"accepted {new.get('count')} typed {new.get('name')}"
    if field == "trust":
        return f"trusted check {new.get('id', '')}: {_spec(new)}"
    if field == "forced":
        why = f": {new['reason']}" if new.get("reason") else ""
        return f"forced past {new.get('past', 'a rule')}{why}"
    if field == "approved":
        return "approved by a person"
    if field == "signed":
        return f"signed by {new.get('name')} (key {new.get('key')})"
    if field == "plan_approved":
        return f"plan approved ({len(new.get('items') or [])} items)"
    if field == "task" and isinstance(new, dict):
        said = f": {new['message']}" if new.get("message") else ""
        return f"task {str(new.get('task'))[:8]} ({new.get('tool')}) {new.get('status')}{said}"
    return f"{field} recorded"
