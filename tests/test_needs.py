"""One table (install/needs.py) says what each agent's route needs: install prints
its notes from it and doctor checks it, so a requirement added there shows in both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from todoledger.cli.cmd_install import install as install_cmd
from todoledger.install import AGENTS, doctor, needs, run
from todoledger.install.runner import ROUTES


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def test_a_requirement_added_to_the_table_shows_in_install_and_in_doctor(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = dirs
    marker = project / ".claude" / "extra-setting"
    extra = needs.Need(
        "claude-code.extra",
        "claude-code",
        needs.ALL,
        lambda seen: seen.text(marker) is not None,
        "Claude Code: the extra setting is missing",
        "create .claude/extra-setting",
    )
    where = ["--project", str(project), "--home", str(home), "--command", "todoledger", "--json"]
    before = json.loads(CliRunner().invoke(install_cmd, ["claude-code", *where]).output)["notes"]
    assert not any("extra setting" in n for n in before)
    report = doctor.run(project, home, check_server=False)
    assert not any("extra setting" in p.what for a in report.agents for p in a.problems)

    monkeypatch.setattr(needs, "NEEDS", [*needs.NEEDS, extra])
    after = json.loads(CliRunner().invoke(install_cmd, ["claude-code", *where]).output)["notes"]
    assert "Claude Code: the extra setting is missing: create .claude/extra-setting" in after
    report = doctor.run(project, home, check_server=False)
    (claude,) = [a for a in report.agents if a.name == "claude-code"]
    found = [p for p in claude.problems if p.what == "Claude Code: the extra setting is missing"]
    assert [(p.level, p.fix) for p in found] == [("error", "create .claude/extra-setting")]
    assert report.broken
    # Met: gone from both.
    marker.write_text("")
    again = json.loads(CliRunner().invoke(install_cmd, ["claude-code", *where]).output)["notes"]
    assert not any("extra setting" in n for n in again)
    report = doctor.run(project, home, check_server=False)
    assert not any("extra setting" in p.what for a in report.agents for p in a.problems)


# What a person still does after `install --approve` (the rest install writes), per agent:
# Codex's hook review, which only a real `codex` can hash (tests/e2e has one).
LEFT_TO_A_PERSON = {
    "claude-code": [],
    "opencode": [],
    "codex": ["codex.hooks-approved"],
    "gemini": [],
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("agent", AGENTS)
def test_after_install_approve_only_a_persons_steps_are_left(
    agent: str, route: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = dirs
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `codex` here: its hooks cannot be hashed
    exe = project.parent / "bin" / "todoledger"  # an executable at an absolute path, as a venv's
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    gate = agent != "opencode"
    result = run(
        agent, project=project, home=home, route=route, approve=True, gate_stop=gate, command=str(exe)
    )
    seen = needs.Seen(project, home, {"PATH": "/usr/bin:/bin"}, route, gate)
    assert [u.need.key for u in needs.unmet(agent, seen)] == LEFT_TO_A_PERSON[agent]
    # Each is printed, as the exact step.
    for u in needs.unmet(agent, seen):
        assert u.note() in result.notes
    # Without --approve the approvals are printed too, each with its setting.
    other = dirs[0].parent / "other"
    other.mkdir()
    plain = run(agent, project=other, home=home, route=route, command=str(exe))
    for key in [n.key for n in needs.NEEDS if n.agent == agent and n.by == "approve" and route in n.routes]:
        assert any(u.need.key == key for u in needs.unmet(agent, needs.Seen(other, home, {}, route))), key
        assert any(
            n.startswith(
                next(
                    u.what
                    for u in needs.unmet(agent, needs.Seen(other, home, {}, route))
                    if u.need.key == key
                )
            )
            for n in plain.notes
        )


def test_every_need_names_its_agent_route_and_fix() -> None:
    keys = [n.key for n in needs.NEEDS]
    assert len(keys) == len(set(keys))
    for n in needs.NEEDS:
        assert n.agent in AGENTS and n.key.startswith(n.agent + ".")
        assert set(n.routes) <= set(ROUTES) and n.routes
        assert n.by in ("install", "approve", "you")
