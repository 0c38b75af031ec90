"""`todoledger doctor`: for each agent on PATH or configured in the project,
what works and what does not, each problem with the exact fix.

Read from the agents' own files (the same ones `install` writes) and from
running things: each agent's `--version`, and our MCP server started with
the command the agent would use. Levels: "error" means something is broken
(the exit status is then 1); "warning" means it may not work, or cannot be
checked from files (the fix says how to make sure).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from todoledger import agents as registry
from todoledger.install import jsonc, needs, probe
from todoledger.install.agents import SERVER
from todoledger.install.elements import is_our_command
from todoledger.install.exe import runs as exe_runs
from todoledger.install.files import read_text

T = TypeVar("T")


@dataclass
class Problem:
    level: str  # "error" | "warning"
    what: str
    fix: str


@dataclass
class AgentReport:
    name: str
    label: str
    path: str | None  # where its binary is on PATH
    version: str | None = None
    version_from: str | None = None  # "--version", or the npm manifest that declares the binary
    native_todo: str = "unknown"  # "on" | "off" | "unknown"
    native_why: str = ""
    server: str | None = None  # the config file holding our server, if any
    server_command: list[str] | None = None
    approved: str = "n/a"  # "yes" | "no" | "unknown" | "n/a"
    hooks: list[str] = field(default_factory=list)  # events our hook is installed for
    hooks_approved: str = "n/a"
    route: str | None = None  # as installed: "mcp" | "cli" | "both"
    problems: list[Problem] = field(default_factory=list)
    # The harness's own ways of saying "done" and whether todoledger gates each (hooks/goal_lock.py).
    goal_lock: list[str] = field(default_factory=list)
    # Claude Code's task panel written from the plan (`install claude-code --panel`): what was found.
    panel: list[str] = field(default_factory=list)

    @property
    def configured(self) -> bool:
        return self.server is not None or bool(self.hooks) or self.route is not None


@dataclass
class Report:
    project: str
    agents: list[AgentReport]
    servers: list[dict[str, Any]]
    ledger: dict[str, Any]
    problems: list[Problem]
    timings: dict[str, float]

    @property
    def broken(self) -> bool:
        every = [*self.problems, *(p for a in self.agents for p in a.problems)]
        return any(p.level == "error" for p in every)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = not self.broken
        return data


def run(project: Path, home: Path, env: dict[str, str] | None = None, check_server: bool = True) -> Report:
    from todoledger.install.runner import installed

    env = dict(os.environ) if env is None else env
    started = time.perf_counter()
    installs = installed(home, project)
    reports = [_inspect(spec, project, home, env, installs.get(spec.name)) for spec in registry.AGENTS]
    shown = [r for r in reports if r.path is not None or r.configured]
    # The agents' own processes (`--version` where no manifest gives it, `codex app-server`)
    # and our server's start run side by side. Todoledger's own time is all but the
    # stretch in which only the agents' processes were still running.
    commands = sorted({tuple(r.server_command) for r in shown if r.server_command}) if check_server else []
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    side_by_side = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, 2 * len(shown) + 1)) as pool:
        served = pool.submit(
            lambda: [(c, probe.mcp_server(list(c), project), time.perf_counter()) for c in commands]
        )
        asked = [pool.submit(_timed, _version, r) for r in shown]
        trust = [
            pool.submit(
                _timed, probe.codex_hooks, str(r.path), project, {**env, "HOME": str(home)}, codex_home
            )
            if r.name == "codex" and r.path and r.hooks
            else None
            for r in shown
        ]
        versions = [f.result() for f in asked]
        listed = [None if f is None else f.result() for f in trust]
        checks = served.result()
    agents_done = max([side_by_side, *(t for _, t in versions), *(t for _, t in filter(None, listed))])
    server_done = checks[-1][2] if checks else side_by_side
    agents_only = max(0.0, agents_done - server_done)
    version_seconds = max((v.seconds for v, _ in versions if v is not None), default=0.0)
    ledger, problems = _ledger(project)
    for report, (found, _), codex, hooks in zip(shown, versions, trust, listed, strict=True):
        if found is not None:
            report.version, report.version_from = found.text, found.source
            if found.error:
                report.problems.append(Problem("warning", found.error, f"check that `{report.path}` runs"))
        _native(report, project, env, found)
        if codex is not None:
            _codex_hook_trust(report, hooks[0] if hooks else None)
        if report.configured:
            _needs(report, project, home, env, installs.get(report.name), hooks[0] if hooks else None)
        if report.name == "claude-code":
            _panel(report, project, home, env, installs.get(report.name))
    servers: list[dict[str, Any]] = []
    server_seconds = 0.0
    for command, check, _ in checks:
        server_seconds += check.seconds
        servers.append(asdict(check))
        if not check.ok:
            for r in shown:
                # A server command that is not there is the commands-run need's (one line, one fix).
                missing = not exe_runs(shlex.quote(command[0]), env.get("PATH"))
                if r.server_command and tuple(r.server_command) == command and not missing:
                    r.problems.append(
                        Problem(
                            "error",
                            f"the todoledger MCP server does not start for {r.label}: {check.error}",
                            needs.install_line(
                                r.name,
                                needs.Seen(
                                    project,
                                    home,
                                    env,
                                    r.route or "mcp",
                                    bool((installs.get(r.name) or {}).get("gate_stop")),
                                ),
                                command=_here(),
                            ),
                        )
                    )
        elif not check.reads and not problems:
            # The ledger opens here but not for the server (another folder, another environment).
            problems.append(
                Problem(
                    "error",
                    f"the todoledger MCP server starts but cannot read the ledger: {check.read_error}",
                    "run `todoledger mcp` in this project by hand and read what it says",
                )
            )
    total = time.perf_counter() - started
    timings = {
        "total_s": round(total, 3),
        "agents_s": round(agents_done - side_by_side, 3),  # their processes, side by side (wall time)
        "agents_version_s": round(version_seconds, 3),  # the slowest version probe
        "server_s": round(server_seconds, 3),  # our server started and asked: todoledger's own
        "own_s": round(max(0.0, total - agents_only), 3),  # all but the time only the agents ran
    }
    return Report(str(project), shown, servers, ledger, problems, timings)


def _needs(
    r: AgentReport,
    project: Path,
    home: Path,
    env: dict[str, str],
    install: dict[str, Any] | None,
    codex_hooks: list[dict[str, Any]] | None,
) -> None:
    """Every need of the agent's route that its files do not meet (install/needs.py)."""
    route = r.route or "mcp"
    probes = {"codex_hooks": codex_hooks} if codex_hooks is not None else {}
    seen = needs.Seen(project, home, env, route, bool(install and install.get("gate_stop")), probes=probes)
    have = {p.what for p in r.problems}
    for u in needs.unmet(r.name, seen):
        if u.what not in have:
            r.problems.append(Problem(u.level, u.what, u.fix))


def _route(r: AgentReport, project: Path, install: dict[str, Any] | None, env: dict[str, str]) -> str | None:
    """The route as installed: install's record, else what the files show."""
    if install is not None:
        return str(install["route"])
    seen = needs.Seen(project, project, env)
    taught = needs.block_command(seen, r.name)
    if r.server is not None:
        return "both" if taught else "mcp"
    if taught:
        return "cli"
    return "mcp" if r.hooks else None


# -- per agent -------------------------------------------------------------------


def _inspect(
    spec: registry.Agent, project: Path, home: Path, env: dict[str, str], install: dict[str, Any] | None
) -> AgentReport:
    path = shutil.which(spec.binary, path=env.get("PATH"))
    report = AgentReport(spec.name, spec.label, path)
    inspect = {
        "claude-code": _claude,
        "opencode": _opencode,
        "codex": _codex,
        "gemini": _gemini,
    }[spec.name]
    inspect(report, project, home, env)
    report.goal_lock = _goal_lock(spec.name, project, home)
    report.route = _route(report, project, install, env)
    if path is not None and not report.configured:
        report.problems.append(
            Problem(
                "warning",
                f"{spec.label} is on PATH but todoledger is not installed for it in this project",
                f"todoledger install {spec.name}",
            )
        )
    if path is None and report.configured:
        report.problems.append(
            Problem(
                "warning",
                f"{spec.label} is configured here but `{spec.binary}` is not on PATH",
                f"install {spec.label} (npm install -g {spec.package}), or take todoledger out of this "
                f"project's config: todoledger uninstall {spec.name}",
            )
        )
    return report


def _claude(r: AgentReport, project: Path, home: Path, env: dict[str, str]) -> None:
    mcp = _json(r, project / ".mcp.json")
    server = _dig(mcp, "mcpServers", SERVER)
    if isinstance(server, dict):
        r.server, r.server_command = ".mcp.json", _command(server.get("command"), server.get("args"))
    settings = [_json(r, p) for p in _claude_settings(project, home)]
    r.hooks = _hook_events(settings[0], "claude-code") + [
        e
        for e in _hook_events(settings[1], "claude-code")
        if e not in _hook_events(settings[0], "claude-code")
    ]
    state = _json(r, home / ".claude.json")
    trusted = _dig(state, "projects", str(project), "hasTrustDialogAccepted") is True
    if r.hooks:
        # Claude Code runs project hooks once the workspace is trusted (`claude -p` skips the dialog)
        r.hooks_approved = "yes" if trusted else "yes in `claude -p`; interactive: once the folder is trusted"
    if r.server is None:
        return
    enabled = disabled = False
    for data in settings:
        enabled |= data.get("enableAllProjectMcpServers") is True
        enabled |= SERVER in _strings(data.get("enabledMcpjsonServers"))
        disabled |= SERVER in _strings(data.get("disabledMcpjsonServers"))
    r.approved = "no" if disabled or not enabled else "yes"


STORE_NOTE = (
    "Claude Code 2.1.332 keeps tasks as one file each in this folder, which is what todoledger "
    "writes; a second storage backend in its binary, behind a feature flag (not seen on here), "
    "does not read files: where it is on, the panel stays empty however many rows the folder holds"
)


def _panel(
    r: AgentReport, project: Path, home: Path, env: dict[str, str], install: dict[str, Any] | None
) -> None:
    """The panel route (todoledger.panel): the list's folder, Claude Code's variables, its
    Task tools not switched off, and a file written and read back in the list's folder."""
    from todoledger import panel
    from todoledger.panel import files

    where = panel.target(str(project), home)
    recorded = bool(install and install.get("panel"))
    if where is None and not recorded:
        return  # not installed: nothing to check
    again = "todoledger install claude-code --panel"
    if where is None:
        r.problems.append(Problem("error", "the panel's record is gone: no interface finds the list", again))
        return
    r.panel.append(f"list {where.list_id}, plan {where.plan!r}, folder {where.folder}")
    folder = Path(where.folder)
    if not folder.is_dir():
        r.problems.append(
            Problem(
                "error",
                f"the panel's folder {folder} does not exist: Claude Code shows no external row in a "
                "session that started without it",
                f"mkdir -p {shlex.quote(str(folder))} (or {again}), then start Claude Code again",
            )
        )
    wanted = {panel.LIST_VAR: where.list_id, panel.TODO_TOOLS_VAR: "1"}
    settings = [_json(r, p) for p in _claude_settings(project, home)]
    merged: dict[str, Any] = {}
    for data in reversed(settings):  # the project's local settings win
        given = data.get("env")
        merged.update(given if isinstance(given, dict) else {})
    for name, value in wanted.items():
        have = merged.get(name)
        if str(have) != value:
            r.problems.append(
                Problem(
                    "error",
                    f"Claude Code's settings `env` has {name}={json.dumps(have)}, the panel needs {value!r}",
                    again,
                )
            )
    switches: list[tuple[str, Any]] = [
        ("settings `env`", merged.get(panel.TASKS_VAR)),
        ("environment", env.get(panel.TASKS_VAR)),
    ]
    for source, switch in switches:
        if switch is not None and str(switch).strip().lower() in ("false", "0", "no", "off"):
            r.problems.append(
                Problem(
                    "error",
                    f"{panel.TASKS_VAR}={switch} in the {source} switches Claude Code's task list off: "
                    "no panel, no Task tools",
                    f"remove {panel.TASKS_VAR} from the {source}",
                )
            )
    if folder.is_dir():
        probe_name = ".todoledger-doctor"
        data = b'{"probe": "todoledger doctor"}'
        try:
            written = (
                files.create(str(folder), probe_name, data) and files.read(str(folder), probe_name) == data
            )
        except OSError as e:
            written = False
            r.problems.append(
                Problem("error", f"cannot write in the panel's folder {folder}: {e.strerror}", again)
            )
        finally:
            with contextlib.suppress(OSError):
                (folder / f"{probe_name}.json").unlink()
        rows = files.listing(str(folder)) or set()
        r.panel.append(
            f"round trip: {'a file written and read back' if written else 'failed'}; {len(rows)} rows now"
        )
    r.panel.append(STORE_NOTE)


def _claude_settings(project: Path, home: Path) -> list[Path]:
    return [
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
        home / ".claude" / "settings.json",
    ]


def _opencode(r: AgentReport, project: Path, home: Path, env: dict[str, str]) -> None:
    for name in ("opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"):
        data = _json(r, project / name)
        server = _dig(data, "mcp", SERVER)
        if isinstance(server, dict):
            r.server = name
            r.server_command = _command(server.get("command"), None)
    plugin = read_text(project / ".opencode" / "plugins" / "todoledger.js")
    if plugin is not None:
        r.hooks = ["todo.updated"]
        if "experimental.session.compacting" in plugin:
            r.hooks += ["session start", "compaction"]
            if "tool.execute.before" in plugin:
                r.hooks.append("shell screen")  # person-only verbs denied before opencode's bash runs
        r.hooks_approved = "yes"  # plugins in .opencode/plugins load without approval
    r.approved = "yes" if r.server else "n/a"  # opencode starts configured servers without asking


def _codex(r: AgentReport, project: Path, home: Path, env: dict[str, str]) -> None:
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    user = _toml(r, codex_home / "config.toml")
    local = _toml(r, project / ".codex" / "config.toml")
    trusted = _dig(user, "projects", str(project), "trust_level") == "trusted"
    for where, data in (((project / ".codex" / "config.toml"), local), (codex_home / "config.toml", user)):
        server = _dig(data, "mcp_servers", SERVER)
        if isinstance(server, dict):
            r.server = str(where)
            r.server_command = _command(server.get("command"), server.get("args"))
            break
    hooks = _json(r, project / ".codex" / "hooks.json")
    r.hooks = _hook_events(hooks, "codex")
    needs_trust = r.hooks or (r.server is not None and r.server.startswith(str(project)))
    if needs_trust:
        r.approved = "yes" if trusted else "no"
    elif r.server is not None:
        r.approved = "yes"
    if r.hooks:
        r.hooks_approved = "unknown"  # Codex keeps its hook approvals to itself; app-server is asked


def _timed(call: Callable[..., T], *args: Any) -> tuple[T, float]:
    """The call's result and the moment it returned."""
    return call(*args), time.perf_counter()


def _version(r: AgentReport) -> probe.Version | None:
    if r.path is None:
        return None
    spec = registry.find(r.name)
    return probe.version(r.path, spec.package if spec else None)


def _codex_hook_trust(r: AgentReport, listed: list[dict[str, Any]] | None) -> None:
    """What Codex itself (`codex app-server`, `hooks/list`) says of our hooks' trust."""
    ours = [h for h in listed or [] if is_our_command(h.get("command"), "todoledger")]
    if ours:  # else Codex does not list them (an untrusted project, an older build): unknown
        r.hooks_approved = "no" if any(h.get("trustStatus") != "trusted" for h in ours) else "yes"


def _gemini(r: AgentReport, project: Path, home: Path, env: dict[str, str]) -> None:
    settings = _json(r, project / ".gemini" / "settings.json")
    user = _json(r, home / ".gemini" / "settings.json")
    for where, data in ((".gemini/settings.json", settings), (str(home / ".gemini" / "settings.json"), user)):
        server = _dig(data, "mcpServers", SERVER)
        if isinstance(server, dict):
            r.server, r.server_command = where, _command(server.get("command"), server.get("args"))
            break
    r.hooks = _hook_events(settings, "gemini")
    if r.hooks:
        # gemini-cli 0.61 (hooks/trustedHooks.ts) runs new project hooks, warns once, and then
        # lists them in ~/.gemini/trusted_hooks.json as "<name>:<command>" under the project root.
        seen = _strings(_json(r, home / ".gemini" / "trusted_hooks.json").get(str(project)))
        r.hooks_approved = (
            "yes" if any(":" in k and " hook gemini" in k for k in seen) else "yes (warns once)"
        )
    if r.server is None and not r.hooks:
        return
    view = needs.Seen(project, home, env)
    r.approved = "yes" if needs.gemini_trusted(view) else "no"


# -- native todo tools -------------------------------------------------------------


def _native(r: AgentReport, project: Path, env: dict[str, str], found: probe.Version | None) -> None:
    """Whether the agent still offers the model its own todo tool."""
    version = found if found is not None and found.text else None
    if r.name == "claude-code":
        settings_env = _dig(_loose(read_text(project / ".claude" / "settings.json")), "env")
        merged = {**(settings_env if isinstance(settings_env, dict) else {}), **env}
        todo_tools = str(merged.get("CLAUDE_CODE_ENABLE_TODO_TOOLS", "")).lower() in ("1", "true")
        tasks_off = str(merged.get("CLAUDE_CODE_ENABLE_TASKS", "")).lower() in ("0", "false")
        tool = "TodoWrite" if tasks_off else "TaskCreate/TaskUpdate"
        newer = version.at_least(2, 1, 233) if version else None
        if newer and not todo_tools:
            r.native_todo = "off"
            r.native_why = (
                f"{version.text if version else ''}: the newest models get no todo tools unless "
                "CLAUDE_CODE_ENABLE_TODO_TOOLS=1"
            )
        elif newer is None:
            r.native_todo, r.native_why = "unknown", "version unknown"
        else:
            r.native_todo, r.native_why = (
                "on",
                f"{tool} ({'CLAUDE_CODE_ENABLE_TODO_TOOLS=1' if todo_tools else 'by version'})",
            )
    elif r.name == "opencode":
        config = _loose(read_text(project / "opencode.json") or read_text(project / "opencode.jsonc"))
        if _dig(config, "tools", "todowrite") is False:
            r.native_todo, r.native_why = "off", "tools.todowrite is false in the project config"
        elif version is not None and version.at_least(2) is True:
            r.native_todo, r.native_why = "off", "opencode 2.x has no todowrite (PR #35989)"
        elif version is not None:
            r.native_todo = "on"
            r.native_why = (
                "1.x builds from before PR #35989 have todowrite (seen in 1.18.33); later ones do not"
            )
        else:
            r.native_todo, r.native_why = "unknown", "version unknown"
    elif r.name == "codex":
        if version is not None and version.at_least(0, 171) is True:
            r.native_todo, r.native_why = "off", "update_plan is opt-in (0.171 answers 'unsupported call')"
        else:
            r.native_todo, r.native_why = (
                "unknown",
                "update_plan became opt-in by 0.171; older builds are not known",
            )
    elif r.name == "gemini":
        excluded = _strings(
            _dig(_loose(read_text(project / ".gemini" / "settings.json")), "tools", "exclude")
        )
        if "write_todos" in excluded:
            r.native_todo, r.native_why = "off", "write_todos is in tools.exclude"
        else:
            r.native_todo, r.native_why = "on", "write_todos (unless excluded in settings)"


# -- the ledger ---------------------------------------------------------------------


def _ledger(project: Path) -> tuple[dict[str, Any], list[Problem]]:
    from todoledger.core.model import LedgerError
    from todoledger.ledger import Ledger
    from todoledger.store.locate import ledger_file as locate
    from todoledger.store.locate import ledger_source

    try:
        source = ledger_source(str(project))[1]
        with Ledger(cwd=project, create=False) as lg:
            info: dict[str, Any] = {"location": lg.location, "exists": lg.exists}
            if source:
                info["source"] = source
            if not lg.exists:
                info["health"] = "not created yet (the first write creates it)"
                return info, []
            integrity = lg.integrity()
            differences = lg.check()
            info["people"] = lg.people()["line"]
    except LedgerError as exc:
        try:
            where = locate(str(project))
        except LedgerError:  # the project's setting itself is what is wrong (a password in it)
            return {"location": str(project), "exists": False, "health": str(exc)}, [
                Problem("error", f"the ledger setting is refused: {exc}", "fix the setting the line names")
            ]
        return {"location": where, "exists": os.path.exists(where), "health": str(exc)}, [
            Problem(
                "error",
                f"the ledger cannot be opened: {exc}",
                f"move {where} aside and restore it from a backup (or `todoledger import` an export)",
            )
        ]
    info["integrity"] = "ok" if not integrity else f"damaged ({len(integrity)} findings)"
    info["replay_differences"] = len(differences)
    problems = []
    if integrity:
        problems.append(
            Problem(
                "error",
                "the ledger file is damaged: "
                + "; ".join(f.removeprefix("the ledger file is damaged: ") for f in integrity[:3]),
                f"move {lg.location} aside and restore it from a backup",
            )
        )
    if differences:
        problems.append(
            Problem(
                "error",
                f"the ledger's state differs from its events in {len(differences)} places",
                "todoledger check",
            )
        )
    info["health"] = "ok" if not problems else "damaged"
    return info, problems


# -- helpers --------------------------------------------------------------------------


def _json(r: AgentReport, path: Path) -> dict[str, Any]:
    text = read_text(path)
    if not text or not text.strip():
        return {}
    try:
        value = jsonc.parse(text).value
    except jsonc.JsoncError as e:
        r.problems.append(
            Problem(
                "error", f"{path}: cannot parse line {e.line}, column {e.column}: {e.message}", f"fix {path}"
            )
        )
        return {}
    return value if isinstance(value, dict) else {}


def _toml(r: AgentReport, path: Path) -> dict[str, Any]:
    text = read_text(path)
    if not text:
        return {}
    try:
        return tomllib.loads(text.lstrip("\ufeff"))
    except tomllib.TOMLDecodeError as e:
        r.problems.append(Problem("error", f"{path}: cannot parse: {e}", f"fix {path}"))
        return {}


def _loose(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = jsonc.parse(text).value
    except jsonc.JsoncError:
        return {}
    return value if isinstance(value, dict) else {}


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _command(command: Any, args: Any) -> list[str] | None:
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return list(command)
    if isinstance(command, str) and command:
        return [command, *_strings(args)]
    return None


GATE_FIX = "todoledger install {agent} --gate-stop"


def _goal_lock(agent: str, project: Path, home: Path) -> list[str]:
    """Each route by which the agent's harness declares "done", and whether it is gated."""
    fix = GATE_FIX.format(agent=agent)
    if agent == "claude-code":
        gated = set()
        for path in _claude_settings(project, home):
            gated |= _gated_events(_loose(read_text(path)))
        task = "TaskCompleted: gated" if "TaskCompleted" in gated else f"TaskCompleted: not gated ({fix})"
        goal = "/goal: held by the Stop gate" if "Stop" in gated else f"/goal: not gated ({fix})"
        plan = "plan mode: a changed item asks a person again" + ("" if gated else f" (not gated: {fix})")
        return [task, goal, plan]
    if agent == "codex":
        gated = _gated_events(_loose(read_text(project / ".codex" / "hooks.json")))
        held = (
            "a completed goal: held by the Stop gate"
            if "Stop" in gated
            else f"a completed goal: not gated ({fix})"
        )
        return [
            "update_goal complete: not gated (Codex runs no PreToolUse hook for its goal tools)",
            held,
        ]
    if agent == "gemini":
        return ["no goal or task completion of its own: not gated (only its stop, with --gate-stop)"]
    return ["no hook can hold a completion or a stop: not gated"]


def _gated_events(settings: dict[str, Any]) -> set[str]:
    """Events whose todoledger hook runs with --gate-stop."""
    found: set[str] = set()
    hooks = settings.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            for handler in _dig(group, "hooks") or []:
                command = handler.get("command") if isinstance(handler, dict) else None
                if is_our_command(command, "todoledger") and "--gate-stop" in str(command):
                    found.add(str(event))
    return found


def _hook_events(settings: dict[str, Any], agent: str) -> list[str]:
    hooks = settings.get("hooks")
    found: list[str] = []
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                command = handler.get("command") if isinstance(handler, dict) else None
                if is_our_command(command, "todoledger") and event not in found:
                    found.append(event)
    return found


def _matcher_has(files: list[dict[str, Any]], event: str, value: str) -> bool:
    for settings in files:
        for group in _dig(settings, "hooks", event) or []:
            matcher = group.get("matcher") if isinstance(group, dict) else None
            if isinstance(matcher, str) and value in matcher.split("|"):
                return True
    return False


def _here() -> str:
    return shlex.quote(str(Path(sys.executable).parent / "todoledger"))


def dumps(report: Report) -> str:
    return json.dumps(report.as_dict(), ensure_ascii=False, indent=2)
