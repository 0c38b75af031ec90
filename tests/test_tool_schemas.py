"""Every MCP tool as the server publishes it (`tools/list`, through the SDK's
client): its input schema fits the strict function-calling subsets that the
OpenAI and Gemini APIs accept (one type per property, typed arrays with
`items`, no untyped unions, enums only on strings, and each argument one
meaning), and the whole listing matches its snapshot in tests/snapshots/.

The snapshots (one JSON file per tool: name, description, inputSchema,
outputSchema, annotations, as a client receives them) make every change to
what agents see a reviewed diff. After an intended change, rewrite them with

    UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_tool_schemas.py
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from todoledger.mcp.tools import TOOLS

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tests" / "snapshots"
UPDATE = "UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_tool_schemas.py"


@functools.cache
def published() -> dict[str, dict[str, Any]]:
    """Each tool as `tools/list` gives it to a client: the SDK's client talking
    to the real server (built as `todoledger mcp` builds it), its JSON as sent
    (aliases, no absent fields). Listing opens no ledger."""
    from mcp import Client

    from todoledger.mcp.server import build_server

    async def listing() -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as cwd:
            server, tools = build_server(cwd=Path(cwd))
            try:
                async with Client(server) as client:
                    listed = (await client.list_tools()).tools
            finally:
                tools.close()
        return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]

    return {tool["name"]: tool for tool in anyio.run(listing)}


def snapshot_text(tool: dict[str, Any]) -> str:
    """In the order the server sends it: the order of the properties is what a model reads."""
    return json.dumps(tool, indent=2, ensure_ascii=False) + "\n"


def snapshot_problem(name: str, tool: dict[str, Any] | None, folder: Path = SNAPSHOTS) -> str | None:
    """Why the published tool and its snapshot differ (a diff), or None."""
    path = folder / f"{name}.json"
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if tool is None:
        return f"{shown}: a snapshot of tool {name!r}, which the server no longer lists"
    if not path.exists():
        return f"{shown}: tool {name!r} has no snapshot"
    saved = path.read_text(encoding="utf-8")
    if saved == snapshot_text(tool):
        return None
    diff = difflib.unified_diff(
        saved.splitlines(), snapshot_text(tool).splitlines(), f"{shown} (snapshot)", "published", lineterm=""
    )
    return f"tool {name!r} changed from its snapshot:\n" + "\n".join(diff)


ALLOWED_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
ALLOWED_KEYS = {"type", "description", "enum", "items", "properties", "required", "minimum", "maximum"}


def strict_problems(schema: Any, where: str = "$") -> list[str]:
    """The reasons a schema falls outside the subset, as `where: what` lines."""
    if not isinstance(schema, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}: keyword {k!r} not in the subset" for k in schema if k not in ALLOWED_KEYS]
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in ALLOWED_TYPES:
        return [*problems, f"{where}: type must be one of {sorted(ALLOWED_TYPES)}, not {kind!r}"]
    if "enum" in schema and (kind != "string" or not all(isinstance(v, str) for v in schema["enum"])):
        problems.append(f"{where}: enum only on strings")
    if kind == "array":
        if "items" not in schema:
            problems.append(f"{where}: array without items")
        else:
            problems += strict_problems(schema["items"], f"{where}[]")
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, dict) or not props:
            problems.append(f"{where}: object without properties")
        else:
            for name, sub in props.items():
                problems += strict_problems(sub, f"{where}.{name}")
            missing = [r for r in schema.get("required", []) if r not in props]
            problems += [f"{where}: required {r!r} is not a property" for r in missing]
    return problems


def test_the_server_publishes_every_tool_in_order() -> None:
    assert list(published()) == list(TOOLS)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_input_schema_fits_the_strict_subset(tool: str) -> None:
    assert strict_problems(published()[tool]["inputSchema"]) == []


def test_every_tool_matches_its_snapshot() -> None:
    """One file per tool in tests/snapshots/; UPDATE_SNAPSHOTS=1 rewrites them
    (and removes those of tools the server no longer lists) instead of comparing."""
    tools = published()
    saved = {p.stem for p in SNAPSHOTS.glob("*.json")}
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        for name, tool in tools.items():
            (SNAPSHOTS / f"{name}.json").write_text(snapshot_text(tool), encoding="utf-8")
        for name in saved - set(tools):
            (SNAPSHOTS / f"{name}.json").unlink()
        return
    problems = [p for name in sorted(set(tools) | saved) if (p := snapshot_problem(name, tools.get(name)))]
    assert not problems, (
        "\n\n".join(problems) + f"\n\nWhat MCP clients see changed. If that is intended, run\n    {UPDATE}\n"
        "and commit the snapshots with the change."
    )


def test_a_changed_tool_fails_naming_the_tool_and_the_fix(tmp_path: Path) -> None:
    tool = published()["plan_update"]
    (tmp_path / "plan_update.json").write_text(snapshot_text(tool))
    assert snapshot_problem("plan_update", tool, tmp_path) is None
    changed = json.loads(json.dumps(tool))
    changed["inputSchema"]["properties"]["evidence"]["type"] = "array"
    problem = snapshot_problem("plan_update", changed, tmp_path) or ""
    assert problem.startswith("tool 'plan_update' changed from its snapshot")
    assert '-        "type": "string"' in problem and '+        "type": "array"' in problem
    assert UPDATE not in problem  # the fix is said once, under all the diffs
    assert "has no snapshot" in (snapshot_problem("plan_verify", tool, tmp_path) or "")
    assert "no longer lists" in (snapshot_problem("plan_update", None, tmp_path) or "")


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"plan": {"type": ["string", "array"]}}}, "$.plan: type must be"),
        ({"type": "object", "properties": {"todos": {"type": "array"}}}, "$.todos: array without items"),
        ({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}, "keyword 'anyOf'"),
        ({"type": "object", "properties": {"n": {"type": "integer", "enum": [1]}}}, "enum only on strings"),
    ],
)
def test_the_check_catches_what_strict_apis_reject(schema: dict[str, Any], problem: str) -> None:
    assert any(problem in p for p in strict_problems(schema))


def test_plan_means_a_plan_name_in_every_tool() -> None:
    for name, spec in published().items():
        assert spec["inputSchema"]["properties"]["plan"] == {
            "type": "string",
            "description": "Plan name (default: main)",
        }, name
