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


@pytest.mark.parametrize(
    ("author", "claimant", "proven"),
    [
        ("cli:ann", "agent-shell:claude-code", True),  # a person's check proves, whoever claims
        ("web:ann", "claude-code:s1", True),
        ("agent:ci@mcp:ci-runner:1", "agent-shell:claude-code", True),  # a token shows another principal
        ("agent:ci@cli", "mcp:claude-code:1", True),
        ("agent:ci@web", "agent:ci@mcp:x:1", False),  # the same token's principal: its own check
        # Local identities are what a process says: never another principal's proof.
        ("mcp:reviewer:1", "agent-shell:claude-code", False),
        ("script:ann", "agent-shell:claude-code", False),
        ("ci:bot", "agent-shell:claude-code", False),
        ("mcp:claude-code:1", "agent-shell:codex:x", False),
        ("agent-shell:reviewer", "agent-shell:claude-code", False),
        ("gemini:g1", "mcp:claude-code:1", False),
        ("claude-code:ann@board", "mcp:codex:1", False),  # a hook's session id with @ is no token's
        ("agent-shell:claude-code:s1@web", "mcp:codex:1", False),  # a server an agent started
        ("agent:ci", "agent-shell:claude-code", False),  # `--writer agent:ci`: no token behind it
    ],
)
def test_a_check_proves_another_principals_claim_only_with_a_person_or_a_token_behind_it(
    author: str, claimant: str, proven: bool
) -> None:
    from todoledger.core.approval import authenticated, proves

    assert proves(author, claimant) is proven
    assert authenticated(author) is ("@" in author and author.split(":")[0] == "agent")
