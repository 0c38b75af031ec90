"""The compatibility table in docs/agents.md comes from the real agents' e2e run
(tests/e2e/results.json, written by tests/e2e/test_routes.py): every agent and
route is there, at the pinned versions, and no cell that is not a pass goes
unexplained by what install printed in that run. That the page matches the
results is tests/test_docs.py's check (docs/docgen.py renders it)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e import results
from todoledger import agents

PINS = Path(__file__).resolve().parent / "e2e" / "install_agents.sh"
PACKAGE = {a.name: a.package for a in agents.AGENTS}


def pinned() -> dict[str, str]:
    found = dict(re.findall(r'\[\w+\]="(@?[^@"]+)@([^"]+)"', PINS.read_text()))
    return {name: found[package] for name, package in PACKAGE.items()}


def test_every_agent_and_route_is_in_the_results_at_its_pinned_version() -> None:
    data = results.load()
    want = {f"{a}/{r}" for a in results.AGENT_ORDER for r in results.ROUTE_ORDER}
    assert set(data["cells"]) == want, "run the e2e suite: .venv/bin/python -m pytest tests/e2e -m agents"
    versions = pinned()
    for cell in data["cells"].values():
        assert cell["version"] == versions[cell["agent"]], (cell["agent"], cell["route"], cell["version"])


def test_no_cell_goes_unexplained() -> None:
    assert results.unexplained(results.load()) == []


def test_a_failed_cell_without_a_reason_in_installs_output_is_caught() -> None:
    data = results.load()
    cell = dict(next(iter(data["cells"].values())))
    cell["plan"] = {"ok": False, "how": "", "why": "the write did not land"}
    assert results.unexplained({"cells": {"x/mcp": cell}}) == ["x/mcp plan: the write did not land"]
    cell["plan"] = {**cell["plan"], "explained_by": "no such words in the output"}
    assert results.unexplained({"cells": {"x/mcp": cell}}) == ["x/mcp plan: the write did not land"]
