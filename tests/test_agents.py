"""The agent registry: every part of each agent's support is found from
`todoledger.agents`, and every name there resolves to real code."""

from __future__ import annotations

import importlib
import io
import json
import re
from pathlib import Path

import pytest

from tests.conftest import PUBLIC_TRANSCRIPTS
from todoledger import agents
from todoledger.dialects import DIALECTS
from todoledger.hooks import handler, run_hook
from todoledger.ingest.calls import Skipped
from todoledger.ingest.sources import Source, discover
from todoledger.install import AGENTS as INSTALLABLE
from todoledger.install import agents as installers

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("agent", agents.AGENTS, ids=lambda a: a.name)
def test_every_part_named_in_the_registry_exists(agent: agents.Agent) -> None:
    assert callable(importlib.import_module(agent.hook).handle)
    assert callable(getattr(installers, agent.installer))
    importlib.import_module(agent.reader)
    assert set(agent.dialects) <= set(DIALECTS)
    page, _, anchor = agent.docs.partition("#")
    headings = re.findall(r"^#+ (.+)$", (README.parent / page).read_text("utf-8"), re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    assert anchor in slugs


def test_the_registry_covers_every_dialect_once() -> None:
    assert sorted(agents.DIALECTS) == sorted(DIALECTS)


def test_hooks_and_install_take_their_agents_from_the_registry() -> None:
    assert INSTALLABLE == agents.NAMES
    for name in agents.hook_names():
        spec = agents.find(name)
        assert spec is not None and handler(name).__module__ == spec.hook
    assert agents.find("claude") == agents.find("claude-code")
    assert agents.find("cursor") is None


def test_an_unknown_agent_is_logged_and_the_hook_still_exits_0(tmp_path: Path) -> None:
    out = io.StringIO()
    assert (
        run_hook(["cursor"], stdin=io.BytesIO(json.dumps({"cwd": str(tmp_path)}).encode()), stdout=out) == 0
    )
    assert out.getvalue() == ""


def test_every_real_transcript_belongs_to_an_agent() -> None:
    found: list[Source] = list(discover([str(PUBLIC_TRANSCRIPTS)], Skipped()))
    assert len(found) >= 4
    owners = {s.fmt: next((a for a in agents.AGENTS if s.fmt in a.transcripts), None) for s in found}
    assert None not in owners.values(), owners
    assert {a.name for a in owners.values() if a} == {"claude-code", "codex", "opencode"}
