"""opencode (V1 builds that still have `todowrite`): the plugin written by
`todoledger install opencode` forwards each `todo.updated` event as
`{cwd, sessionID, todos}`; the whole list is mirrored under
`opencode:<sessionID>`."""

from __future__ import annotations

from typing import Any


def writer_of(event: dict[str, Any]) -> str:
    return f"opencode:{event.get('sessionID') or event.get('session_id') or 'unknown'}"


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.hooks import mirror

    todos = event.get("todos")
    if todos is None and isinstance(event.get("properties"), dict):  # the raw bus event
        props = event["properties"]
        event = {**props, "cwd": event.get("cwd")}
        todos = props.get("todos")
    if not isinstance(todos, list):
        raise ValueError("todo.updated: expected {sessionID, todos: [...]}")
    mirror(cwd, {"todos": todos}, writer=writer_of(event), dialect="opencode")
    return None
