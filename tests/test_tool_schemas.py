"""Every MCP tool's input schema fits the strict function-calling subsets that
the OpenAI and Gemini APIs accept: one type per property, typed arrays with
`items`, no untyped unions, enums only on strings, and each argument one meaning."""

from __future__ import annotations

from typing import Any

import pytest

from todoledger.mcp.tools import TOOLS

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


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_input_schema_fits_the_strict_subset(tool: str) -> None:
    assert strict_problems(TOOLS[tool]["inputSchema"]) == []


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
    for name, spec in TOOLS.items():
        assert spec["inputSchema"]["properties"]["plan"] == {
            "type": "string",
            "description": "Plan name (default: main)",
        }, name
