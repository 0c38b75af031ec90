"""Principals: who stands behind a writer, across an agent's routes."""

from __future__ import annotations

import pytest

from todoledger.core.approval import principal


@pytest.mark.parametrize(
    ("writer", "expected"),
    [
        ("cli:ann", "person:ann"),
        ("web:ann", "person:ann"),
        ("cli", "person:cli"),
        ("mcp-user:claude-code:ab12", "person:mcp-user:claude-code"),
        ("claude-code:s1", "agent:claude-code"),
        ("claude-code:s1:plan-mode", "agent:claude-code"),
        ("mcp:claude-code:12", "agent:claude-code"),
        ("mcp:codex-mcp-client:1", "agent:codex"),
        ("agent-shell:codex", "agent:codex"),
        ("agent-shell:claude-code:s9", "agent:claude-code"),
        ("agent:ci", "agent:ci"),
        ("agent:ci@mcp:x:1", "agent:ci"),
        ("ann@mcp:x:1", "person:ann"),
        ("mcp-user:ann@sneaky:1a2b", "person:ann"),
        ("demo-agent", "agent:demo-agent"),
    ],
)
def test_a_writer_has_one_principal(writer: str, expected: str) -> None:
    assert principal(writer) == expected


def test_one_agent_across_its_routes_is_one_principal() -> None:
    routes = ["claude-code:s1", "mcp:claude-code:9f", "agent-shell:claude-code:s2", "claude-code:s3:goal"]
    assert {principal(w) for w in routes} == {"agent:claude-code"}
    assert principal("mcp:claude-code:9f") != principal("agent-shell:codex")
