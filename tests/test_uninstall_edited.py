"""`todoledger uninstall` after people edited the files install touched: our
elements go (found by content), every edit stays, our containers go only when
empty; an entry of ours that someone changed is named and left, run after run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.test_uninstall import FOREIGN, HOME_FOREIGN
from todoledger.cli.cmd_install import uninstall as uninstall_cmd
from todoledger.install import AGENTS, run
from todoledger.install.jsonc import parse
from todoledger.install.jsonedit import JsonDoc
from todoledger.install.runner import _load, uninstall

USER_HOOK = {"type": "command", "command": "echo mine"}


def project_dirs(tmp_path: Path, foreign: bool) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    for root, files in ((project, FOREIGN), (home, HOME_FOREIGN)):
        root.mkdir()
        for name, text in files.items() if foreign else ():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(text.encode())
    return project, home


def edit_json(text: str, label: str) -> tuple[str, list[tuple[list[str | int], Any]]]:
    """A person's edits of a JSON config install wrote to: a key of their own at the top,
    and an element of their own in each container todoledger uses. (path, value) of each."""
    doc = JsonDoc(text, label)
    made: list[tuple[list[str | int], Any]] = []

    def put(path: list[str | int], value: Any) -> None:
        doc.set_path(path, value)
        made.append((path, value))

    def push(path: list[str | int], value: Any) -> None:
        node = doc.find(path)
        if node is not None and node.kind == "array":
            doc.append(path, value)
            made.append(([*path, "∋"], value))  # in that list, wherever ours leaves it

    put(["userKey"], "mine ✓")
    if label.endswith("opencode.json"):  # every opencode user adds a provider
        put(["provider"], {"anthropic": {"options": {"baseURL": "http://127.0.0.1:1/v1"}}})
    hooks = doc.find(["hooks"])
    for event in list(hooks.value) if hooks is not None and hooks.kind == "object" else []:
        # Into the first group (often one todoledger created): a handler of the user's own.
        push(["hooks", event, 0, "hooks"], USER_HOOK)
    push(["permissions", "allow"], "Bash(make test)")
    push(["tools", "allowed"], "google_web_search")
    push(["enabledMcpjsonServers"], "other2")
    if doc.find(["env"]) is not None:
        put(["env", "USER_VAR"], "1")
    return doc.text, made


def edit(path: Path) -> list[tuple[list[str | int], Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".json", ".jsonc"):
        new, made = edit_json(text, str(path))
    elif path.suffix == ".toml":
        new, made = text + '\n[user_table]\nk = "mine"\n', [(["user_table", "k"], "mine")]
    elif path.suffix == ".md":
        new, made = text + "\nA line of the user's own.\n", []
    else:
        return []  # the generated plugin: a person who edits it keeps it (test below)
    path.write_text(new, encoding="utf-8")
    return made


def has_value(data: Any, path: list[str | int], value: Any) -> bool:
    for step in path[:-1]:
        data = data[step]
    return value in data if path[-1] == "∋" else data[path[-1]] == value


def holds(data: Any, earlier: Any) -> bool:
    """Everything of `earlier` is still in `data` (which may hold more)."""
    if isinstance(earlier, dict):
        return isinstance(data, dict) and all(k in data and holds(data[k], v) for k, v in earlier.items())
    if isinstance(earlier, list):
        return isinstance(data, list) and all(any(holds(d, e) for d in data) for e in earlier)
    return bool(data == earlier)


def parsed(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text.lstrip("\ufeff"))
    return parse(text).value if text.strip() else {}


def ours_left(data: Any, project: Path) -> list[str]:
    """Anything of todoledger's still in a parsed config."""
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("todoledger", "TODOLEDGER_AGENT", "$schema") or str(project) in key:
                    found.append(f"{where}.{key}")
                walk(inner, f"{where}.{key}")
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, f"{where}[{i}]")
        elif isinstance(value, str) and ("todoledger" in value and value != "mine ✓"):
            found.append(f"{where}: {value}")

    walk(data, "")
    return found


@pytest.mark.parametrize("foreign", [False, True], ids=["fresh", "foreign"])
@pytest.mark.parametrize("approve", [False, True], ids=["", "approve"])
@pytest.mark.parametrize("route", ["mcp", "cli", "both"])
@pytest.mark.parametrize("agent", AGENTS)
def test_uninstall_after_a_user_edit_of_every_file(
    agent: str, route: str, approve: bool, foreign: bool, tmp_path: Path
) -> None:
    project, home = project_dirs(tmp_path, foreign)
    before = {
        p: parsed(p) for root in (project, home) for p in root.rglob("*") if p.is_file() and p.suffix != ".md"
    }
    gate = ("--gate-stop",) if agent != "opencode" else ()
    run(agent, project=project, home=home, route=route, approve=approve, gate_stop=bool(gate))
    touched = [Path(p) for p in _load(home, project)["agents"][agent]["files"]]
    assert touched
    edits = {path: edit(path) for path in touched}
    where = ["--project", str(project), "--home", str(home)]
    out = CliRunner().invoke(uninstall_cmd, [agent, *where])
    assert out.exit_code == 0, out.output
    assert "left as it is" not in out.output and "by hand" not in out.output
    assert "  - " in out.output  # it says what it removed, element by element
    for path, made in edits.items():
        if path.suffix == ".js":
            assert not path.exists()
            continue
        assert path.exists(), f"{path} holds the user's edits and was removed"
        if path.suffix == ".md":
            text = path.read_text(encoding="utf-8")
            assert "todoledger:begin" not in text and "A line of the user's own." in text
            continue
        data = parsed(path)
        assert ours_left(data, project) == [], (path, ours_left(data, project))
        for at, value in made:  # every edit of the user survives, in place
            assert has_value(data, at, value), (path, at)
        assert holds(data, before.get(path) or {}), path  # and all that was there before install
    # Nothing of todoledger's is recorded any more: a second uninstall has nothing to do.
    again = CliRunner().invoke(uninstall_cmd, [agent, *where])
    assert "left no record" in again.output


def test_our_containers_go_when_empty_and_stay_with_the_users_element_in_them(tmp_path: Path) -> None:
    project, home = project_dirs(tmp_path, foreign=False)
    run("claude-code", project=project, home=home, route="both")
    settings = project / ".claude" / "settings.json"
    text, _ = edit_json(settings.read_text(), str(settings))
    settings.write_text(text)
    uninstall("claude-code", project=project, home=home)
    data = json.loads(settings.read_text())
    # Each group todoledger created holds the user's handler now: the group stays, with it alone.
    assert {e: [g["hooks"] for g in groups] for e, groups in data["hooks"].items()} == {
        e: [[USER_HOOK]] for e in ("PostToolUse", "SessionStart", "PreToolUse")
    }
    assert data["permissions"] == {"allow": ["Bash(make test)"]}
    assert data["env"] == {"USER_VAR": "1"}


def test_a_changed_entry_of_ours_is_named_and_left_run_after_run(tmp_path: Path) -> None:
    project, home = project_dirs(tmp_path, foreign=True)
    run("gemini", project=project, home=home)
    settings = project / ".gemini" / "settings.json"
    edited = settings.read_text().replace('"todoledger hook gemini"', '"todoledger hook gemini --debug"')
    settings.write_text(edited)
    where = ["--project", str(project), "--home", str(home)]
    first = CliRunner().invoke(uninstall_cmd, ["gemini", *where])
    assert first.exit_code == 1
    named = [line for line in first.output.splitlines() if "left as it is" in line]
    # The three hooks whose command changed are named; the rest of ours is gone.
    assert len(named) == 3 and all("todoledger hook gemini" in line for line in named), first.output
    data = json.loads(settings.read_text())
    assert "mcpServers" not in data or "todoledger" not in data.get("mcpServers", {})
    assert [h["command"] for g in data["hooks"].values() for x in g for h in x["hooks"]] == [
        "todoledger hook gemini --debug"
    ] * 3
    assert "todoledger" not in (project / "GEMINI.md").read_text()
    second = CliRunner().invoke(uninstall_cmd, ["gemini", *where])
    assert second.exit_code == 1
    assert [line for line in second.output.splitlines() if "left as it is" in line] == named
    assert "nothing of todoledger's is left" not in second.output
    # Put back as install wrote it: the next uninstall takes it.
    settings.write_text(settings.read_text().replace(" --debug", ""))
    third = CliRunner().invoke(uninstall_cmd, ["gemini", *where])
    assert third.exit_code == 0, third.output
    assert settings.read_text() == FOREIGN[".gemini/settings.json"]


def test_codex_server_table_with_a_users_key_stays_whole(tmp_path: Path) -> None:
    """Issue 19: a key the user added under [mcp_servers.todoledger] once ended up at the
    top level. The table with the user's key is ours changed: left whole, and named."""
    project, home = project_dirs(tmp_path, foreign=True)
    run("codex", project=project, home=home)
    config = project / ".codex" / "config.toml"
    text = config.read_text()
    config.write_text(text.replace('args = ["mcp"]\n', 'args = ["mcp"]\nstartup_timeout_sec = 40\n'))
    result = uninstall("codex", project=project, home=home)
    assert any("mcp_servers.todoledger" in n and "left as it is" in n for n in result.notes)
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3" and data["mcp_servers"]["todoledger"]["startup_timeout_sec"] == 40
    assert "startup_timeout_sec" not in data  # nothing moved to the top level


def test_a_generated_plugin_someone_edited_is_kept(tmp_path: Path) -> None:
    project, home = project_dirs(tmp_path, foreign=False)
    run("opencode", project=project, home=home)
    plugin = project / ".opencode" / "plugins" / "todoledger.js"
    plugin.write_text(plugin.read_text() + "\n// mine\n")
    result = uninstall("opencode", project=project, home=home)
    assert plugin.exists() and any("todoledger.js" in n and "left as it is" in n for n in result.notes)
    assert not (project / "opencode.json").exists()  # created by install, nothing else in it: gone


def test_an_instructions_block_someone_edited_is_kept(tmp_path: Path) -> None:
    project, home = project_dirs(tmp_path, foreign=True)
    run("claude-code", project=project, home=home)
    claude = project / "CLAUDE.md"
    claude.write_text(claude.read_text().replace("Keep exactly one item", "Keep one item"))
    result = uninstall("claude-code", project=project, home=home)
    assert any("CLAUDE.md" in n and "left as it is" in n for n in result.notes)
    assert "todoledger:begin claude-code" in claude.read_text()
