"""How each real agent CLI is installed, approved and run against the fake model.

Each `Agent` holds exactly the steps a user takes after `todoledger install`
(the approvals), the flags for a non-interactive run, and the scripted calls a
model makes to reach a tool (Claude Code and Codex defer MCP tools behind a
tool search). The README's compatibility table lists the same facts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit

from tests.e2e.fakemodel import Step

HERE = Path(__file__).parent
INSTALL_SCRIPT = HERE / "install_agents.sh"
RUN_TIMEOUT = 90  # seconds for one agent run; each takes well under a minute
CACHE = Path(os.environ.get("TODOLEDGER_E2E_CACHE") or Path.home() / ".cache" / "todoledger-e2e")
BIN = Path(sys.executable).parent  # where this venv's `todoledger` lives

# Item texts the tests look for in requests and in the ledger.
PLAN = [
    {"content": "Write the parser", "status": "in_progress"},
    {"content": "Test the parser", "status": "pending"},
    {"content": "Ship the parser", "status": "pending"},
]


@dataclass
class Scratch:
    root: Path
    home: Path
    project: Path
    url: str = ""
    # False: this venv's `todoledger` is not on the agents' PATH (as after the README's
    # venv install): only what install writes, absolute paths, can reach it.
    venv_on_path: bool = True
    extra_path: list[str] = field(default_factory=list)  # the agent's own bin folder, as npm -g puts it

    def env(self) -> dict[str, str]:
        """A clean environment: no real config, keys or ledger leak in."""
        node = shutil.which("node")
        path = [
            *([str(BIN)] if self.venv_on_path else []),
            *self.extra_path,
            *([str(Path(node).parent)] if node else []),
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
        ]
        home = str(self.home)
        return {
            "PATH": os.pathsep.join(dict.fromkeys(path)),
            "HOME": home,
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "XDG_CACHE_HOME": f"{home}/.cache",
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "true",
        }

    def write_json(self, relative: str, data: dict[str, Any], *, in_home: bool = False) -> None:
        path = (self.home if in_home else self.project) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@dataclass
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"
        )


def run(argv: list[str], scratch: Scratch, extra: dict[str, str] | None = None, timeout: float = 60) -> Run:
    started = time.monotonic()
    proc = subprocess.run(
        argv,
        cwd=scratch.project,
        env={**scratch.env(), **(extra or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


@dataclass
class Agent:
    name: str  # as in install_agents.sh
    install_as: str  # `todoledger install <install_as>`
    binary: str  # under the cache prefix
    approve: Callable[[Scratch], None]
    command: Callable[[Scratch, str], tuple[list[str], dict[str, str]]]
    find_mcp: list[Step] = field(default_factory=list)  # calls a model makes before a deferred MCP tool
    native: list[Step] = field(default_factory=list)  # a native todo call (with its own discovery)
    native_items: dict[str, str] = field(default_factory=dict)  # text -> status the mirror should record
    native_env: dict[str, str] = field(default_factory=dict)  # what switches the native list on
    # A non-interactive run with only the fake model's connection: everything todoledger
    # needs comes from what `install` wrote (tests/e2e/test_routes.py).
    plain: Callable[[Scratch, str], tuple[list[str], dict[str, str]]] | None = None
    shell: tuple[str, str] = ("", "")  # its shell tool, and the argument holding the command

    @property
    def path(self) -> Path:
        return CACHE / self.name / "node_modules" / ".bin" / self.binary

    def version(self) -> str:
        pinned = CACHE / self.name / ".installed"
        return pinned.read_text().strip() if pinned.exists() else "?"


_FAILED: dict[str, str] = {}  # one failed install per agent and test run, not one per test


def ensure_installed(agent: Agent) -> str | None:
    """Install the pinned agent if it is missing; the reason when that fails."""
    if agent.path.exists():
        return None
    if agent.name not in _FAILED:
        _FAILED[agent.name] = _install(agent) or ""
    return _FAILED[agent.name] or None


def _install(agent: Agent) -> str | None:
    if shutil.which("npm") is None:
        return "npm is not on PATH"
    try:
        proc = subprocess.run(
            ["bash", str(INSTALL_SCRIPT), agent.name],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TODOLEDGER_E2E_CACHE": str(CACHE)},
        )
    except subprocess.TimeoutExpired:
        return "npm install timed out after 600 s"
    if proc.returncode != 0 or not agent.path.exists():
        return f"npm install failed: {(proc.stderr or proc.stdout).strip()[-500:]}"
    return None


# --- Claude Code -----------------------------------------------------------
CLAUDE_MODEL = "claude-sonnet-5"  # a current model: it gets no TodoWrite/Task tools by default


def _claude_approve(s: Scratch) -> None:
    # Interactive sessions start a .mcp.json server only in a trusted folder and
    # once it is approved; this approves it (-p skips both and starts it anyway).
    s.write_json(".claude/settings.local.json", {"enabledMcpjsonServers": ["todoledger"]})


def _claude_command(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    argv = [
        str(CLAUDE.path),
        "-p",
        prompt,
        "--model",
        CLAUDE_MODEL,
        # -p mode asks no questions: an MCP tool not allowed here is refused.
        # `mcp__todoledger` allows every tool of the server.
        "--allowedTools",
        "mcp__todoledger",
    ]
    env = {
        "ANTHROPIC_BASE_URL": s.url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return argv, env


def _claude_plain(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    argv, env = _claude_command(s, prompt)
    return argv[: argv.index("--allowedTools")], env


CLAUDE = Agent(
    name="claude",
    install_as="claude-code",
    binary="claude",
    approve=_claude_approve,
    command=_claude_command,
    find_mcp=[Step("ToolSearch", {"query": "select:mcp__todoledger__todowrite"})],
    native=[
        Step("ToolSearch", {"query": "select:TaskCreate"}),
        Step("TaskCreate", {"subject": "Native task via TaskCreate", "description": "mirrored by the hook"}),
    ],
    native_items={"Native task via TaskCreate": "pending"},
    native_env={"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"},
    plain=_claude_plain,
    shell=("Bash", "command"),
)


# --- Codex -----------------------------------------------------------------
def _codex_approve(s: Scratch) -> None:
    """What a user grants: trust for the project (`--trust` or the first-run
    dialog), then the hooks' review in `/hooks`. That review stores, per hook,
    the hash Codex computes; `codex app-server`'s `hooks/list` reports it, so it
    is taken from Codex rather than recomputed."""
    config_path = s.home / ".codex" / "config.toml"
    config_path.parent.mkdir(parents=True, exist_ok=True)  # install writes the project's config only
    config = tomlkit.parse(config_path.read_text(encoding="utf-8") if config_path.exists() else "")
    projects = config.setdefault("projects", tomlkit.table(is_super_table=True))
    projects[str(s.project)] = {"trust_level": "trusted"}
    config_path.write_text(tomlkit.dumps(config), encoding="utf-8")
    hooks = _codex_hooks(s)
    assert hooks and all(h["trustStatus"] != "trusted" for h in hooks), hooks
    state = config.setdefault("hooks", tomlkit.table()).setdefault(
        "state", tomlkit.table(is_super_table=True)
    )
    for hook in hooks:
        state[hook["key"]] = {"trusted_hash": hook["currentHash"]}
    config_path.write_text(tomlkit.dumps(config), encoding="utf-8")
    assert all(h["trustStatus"] == "trusted" for h in _codex_hooks(s))


def _codex_hooks(s: Scratch) -> list[dict[str, Any]]:
    """The project's hooks as Codex sees them (JSON-RPC over stdio)."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "e2e", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(s.project)]}},
    ]
    with subprocess.Popen(
        [str(CODEX.path), "app-server"],
        cwd=s.project,
        env=s.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        timer = threading.Timer(30, proc.kill)  # bounded: a hung server ends the read
        timer.start()
        try:
            for line in proc.stdout:
                answer = json.loads(line)
                if answer.get("id") == 2:
                    hooks: list[dict[str, Any]] = answer["result"]["data"][0]["hooks"]
                    return hooks
        finally:
            timer.cancel()
            proc.kill()
    raise AssertionError("codex app-server did not answer hooks/list")


def _codex_command(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    provider = (
        f'model_providers.fake={{name="fake",base_url="{s.url}/v1",wire_api="responses",env_key="E2E_KEY"}}'
    )
    argv = [
        str(CODEX.path),
        "exec",
        "-c",
        provider,
        "-c",
        "model_provider=fake",
        # exec runs with approval policy "never": an MCP call needing approval fails.
        "-c",
        'mcp_servers.todoledger.default_tools_approval_mode="approve"',
        # Without it the first turn starts before the server lists its tools.
        "-c",
        "mcp_servers.todoledger.required=true",
        *CODEX_EXTRA,
        "-m",
        "gpt-5.5",
        prompt,
    ]
    return argv, {"E2E_KEY": "sk-e2e-dummy"}


CODEX_EXTRA: list[str] = []  # more `-c` overrides, for a test that needs them (monkeypatched)


def _codex_plain(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    provider = (
        f'model_providers.fake={{name="fake",base_url="{s.url}/v1",wire_api="responses",env_key="E2E_KEY"}}'
    )
    argv = [str(CODEX.path), "exec", "-c", provider, "-c", "model_provider=fake", "-m", "gpt-5.5", prompt]
    return argv, {"E2E_KEY": "sk-e2e-dummy"}


CODEX = Agent(
    name="codex",
    install_as="codex",
    binary="codex",
    approve=_codex_approve,
    command=_codex_command,
    find_mcp=[Step("tool_search", {"query": "todoledger todowrite", "limit": 8})],
    plain=_codex_plain,
    shell=("exec_command", "cmd"),
)
# Codex made update_plan opt-in: a default exec offers no native list (see the test).


# --- Gemini CLI --------------------------------------------------------------
def _gemini_approve(s: Scratch) -> None:
    # -p in an untrusted folder exits 55 ("not running in a trusted directory").
    s.write_json(".gemini/trustedFolders.json", {str(s.project): "TRUST_FOLDER"}, in_home=True)
    # Non-interactive runs refuse the "gateway" auth that a base URL alone selects.
    s.write_json(
        ".gemini/settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}}, in_home=True
    )


def _gemini_command(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    argv = [
        str(GEMINI.path),
        "-p",
        prompt,
        "-m",
        "gemini-2.5-flash",
        # -p mode drops every tool that would ask for confirmation (write_todos and
        # MCP tools too) unless it is allowed up front; `"trust": true` on the
        # server entry in .gemini/settings.json does the same for its tools.
        "--allowed-tools",
        "mcp_todoledger_*,write_todos",
    ]
    return argv, {"GOOGLE_GEMINI_BASE_URL": s.url, "GEMINI_API_KEY": "e2e-dummy"}


def _gemini_plain(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    # The fake's base URL alone selects the "gateway" auth, which -p refuses: the key's.
    s.write_json(
        ".gemini/settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}}, in_home=True
    )
    argv, env = _gemini_command(s, prompt)
    return argv[: argv.index("--allowed-tools")], env


GEMINI = Agent(
    name="gemini",
    install_as="gemini",
    binary="gemini",
    approve=_gemini_approve,
    command=_gemini_command,
    native=[
        Step(
            "write_todos",
            {
                "todos": [
                    {"description": "Native gemini step one", "status": "in_progress"},
                    {"description": "Native gemini step two", "status": "pending"},
                ]
            },
        )
    ],
    native_items={"Native gemini step one": "in_progress", "Native gemini step two": "pending"},
    plain=_gemini_plain,
    shell=("run_shell_command", "command"),
)


# --- opencode ----------------------------------------------------------------
def _opencode_approve(s: Scratch) -> None:
    """Nothing to approve: opencode allows MCP tools by default. Only a speed-up:
    the plugin SDK that opencode would install on first start is linked in."""
    deps = CACHE / "opencode-deps"
    if not (deps / "node_modules").is_dir():
        return
    for folder in (s.project / ".opencode", s.home / ".config" / "opencode"):
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(deps / name, folder / name)
        (folder / "node_modules").symlink_to(deps / "node_modules", target_is_directory=True)


def _opencode_command(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
    # Point opencode's own Anthropic provider at the fake, next to what install wrote
    # (the provider block every opencode user adds).
    config_path = s.project / "opencode.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    config["provider"] = {"anthropic": {"options": {"baseURL": f"{s.url}/v1", "apiKey": "sk-ant-e2e-dummy"}}}
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    argv = [str(OPENCODE.path), "run", "--model", "anthropic/claude-sonnet-4-5", prompt]
    return argv, {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


OPENCODE = Agent(
    name="opencode",
    install_as="opencode",
    binary="opencode",
    approve=_opencode_approve,
    command=_opencode_command,
    native=[
        Step(
            "todowrite",
            {
                "todos": [
                    {"content": "Native opencode step one", "status": "in_progress", "priority": "high"},
                    {"content": "Native opencode step two", "status": "pending", "priority": "low"},
                ]
            },
        )
    ],
    native_items={"Native opencode step one": "in_progress", "Native opencode step two": "pending"},
    plain=lambda s, prompt: _opencode_command(s, prompt),
    shell=("bash", "command"),
)

AGENTS = {a.name: a for a in (CLAUDE, CODEX, GEMINI, OPENCODE)}
