"""What each agent needs, per route, for the plan to reach it: one table that
`install` prints its notes from and `doctor` checks, so that they cannot drift.

A `Need` is one setting or step: how to tell from the agent's own files whether
it is there (`check`: True, False, or None when files cannot show it), what is
wrong when it is not, and the one fix. `by` says who provides it: `install`
writes it; `approve` is an approval that `install --approve` writes for the
person who asks; `you` is a step only a person can take (a dialog in the agent).
`blocks`: when it is missing the plan cannot reach the agent (doctor's error,
exit status 1); otherwise a warning.

Checked against the agents' builds that tests/e2e runs (Claude Code 2.1.332,
opencode 1.18.33, Codex 0.171.0, Gemini CLI 0.61.0).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from todoledger.install.seen import (
    ALL,
    CLI,
    MCP,
    Seen,
    block,
    block_command,
    claude_allowed,
    claude_bash_missing,
    claude_bash_rules,
    claude_rejected,
    claude_server_approved,
    claude_trusted,
    claude_wanted,
    codex_hooks_approved,
    codex_trusted,
    codex_untrusted_what,
    commands_run,
    dig,
    gemini_allowed_missing,
    gemini_allowed_wanted,
    gemini_trusted,
    has_hook,
    hook,
    hook_files,
    not_running,
    opencode_config,
    server,
    server_entry,
)

# What the rest of install uses, through the table's module.
__all__ = [
    "ALL",
    "CLI",
    "MCP",
    "NEEDS",
    "Need",
    "Seen",
    "Unmet",
    "block_command",
    "claude_bash_rules",
    "dig",
    "gemini_allowed_wanted",
    "gemini_trusted",
    "unmet",
]

Text = str | Callable[[Seen], str]


@dataclass(frozen=True)
class Need:
    key: str
    agent: str
    routes: tuple[str, ...]
    check: Callable[[Seen], bool | None]
    what: Text
    fix: Text
    blocks: bool = True
    by: str = "install"  # "install" | "approve" | "you"
    gate: bool = False  # only for an install with --gate-stop
    doc: str = ""  # for docs/agents.md where `what` depends on the files (else `what` itself)

    @property
    def summary(self) -> str:
        return self.doc or (self.what if isinstance(self.what, str) else self.key)

    def say(self, seen: Seen) -> tuple[str, str]:
        what = self.what(seen) if callable(self.what) else self.what
        fix = self.fix(seen) if callable(self.fix) else self.fix
        return what, fix


@dataclass(frozen=True)
class Unmet:
    need: Need
    what: str
    fix: str
    known: bool  # False: the files cannot show it (check said None)

    @property
    def level(self) -> str:
        return "error" if self.need.blocks and self.known else "warning"

    def note(self) -> str:
        return f"{self.what}: {self.fix}"


def unmet(agent: str, seen: Seen) -> list[Unmet]:
    """The needs of `agent` on `seen.route` that are not met, in table order."""
    out = []
    for need in NEEDS:
        if need.agent != agent or seen.route not in need.routes or (need.gate and not seen.gate_stop):
            continue
        state = need.check(seen)
        if state is True:
            continue
        what, fix = need.say(seen)
        out.append(Unmet(need, what, fix, known=state is False))
    return out


def install_line(agent: str, seen: Seen, *, approve: bool = False, command: str | None = None) -> str:
    """The install command that keeps the install as it was (issue 31): its recorded route and
    --gate-stop, and the command its files name where that is not the bare name and runs
    (`command` overrides: the PATH fix names the todoledger that runs doctor)."""
    from todoledger.install.exe import runs
    from todoledger.install.seen import commands_named

    route = "" if seen.route == "mcp" else f" --route {seen.route}"
    gate = " --gate-stop" if seen.gate_stop else ""
    if command is None:
        named = [c for c in dict.fromkeys(commands_named(seen, agent)) if c != "todoledger"]
        working = [c for c in named if runs(shlex.quote(c), seen.path)]
        command = working[0] if len(working) == 1 else None
    chosen = f" --command {shlex.quote(command)}" if command else ""
    return f"todoledger install {agent}{route}{gate}{chosen}" + (" --approve" if approve else "")


def _reinstall(agent: str) -> Callable[[Seen], str]:
    return lambda seen: install_line(agent, seen)


def _not_running_what(agent: str, label: str) -> Callable[[Seen], str]:
    def what(seen: Seen) -> str:
        bad = not_running(seen, agent)
        names = ", ".join(repr(c) for c in bad)
        if all("/" in c for c in bad):
            return f"{label}'s config names todoledger as {names}, which is not there (no such executable)"
        where = "the PATH of a login shell (Codex's shell)" if agent == "codex" else "PATH"
        return f"{label}'s config names todoledger as {names}, which is not on {where}"

    return what


def _here_fix(agent: str) -> Callable[[Seen], str]:
    from todoledger.install.exe import running

    return lambda seen: install_line(agent, seen, command=str(running()))


def _agent_needs(agent: str, label: str, instructions: str) -> list[Need]:
    """What every agent needs alike: its instructions block, and commands that run."""
    return [
        Need(
            f"{agent}.commands-run",
            agent,
            ALL,
            commands_run(agent),
            _not_running_what(agent, label),
            _here_fix(agent),
            doc=f"{label}'s config names a todoledger that is not there (hooks, server, instructions)",
        ),
        Need(
            f"{agent}.block",
            agent,
            CLI,
            block(agent),
            f"{label}: {instructions} has no todoledger block, so the agent is not told how to reach the plan",
            _reinstall(agent),
        ),
        Need(
            f"{agent}.block-mcp",
            agent,
            ("mcp",),
            block(agent),
            f"{label}: {instructions} has no todoledger block (which todo tool to use, how to get the plan back)",
            _reinstall(agent),
            blocks=False,
        ),
    ]


CLAUDE = "Claude Code"
NEEDS: list[Need] = [
    # -- Claude Code ---------------------------------------------------------------------
    Need(
        "claude-code.server",
        "claude-code",
        MCP,
        server("claude-code"),
        "Claude Code: .mcp.json has no todoledger server",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.server-rejected",
        "claude-code",
        MCP,
        lambda seen: not claude_rejected(seen),
        "Claude Code: the project server `todoledger` was rejected (disabledMcpjsonServers)",
        'remove "todoledger" from disabledMcpjsonServers in .claude/settings.local.json, '
        'then add it to "enabledMcpjsonServers"',
        by="you",
    ),
    Need(
        "claude-code.server-approved",
        "claude-code",
        MCP,
        lambda seen: claude_rejected(seen) or claude_server_approved(seen),
        "Claude Code: the project server `todoledger` is not approved (interactive sessions keep it "
        "'pending approval'; `claude -p` starts it anyway)",
        lambda seen: (
            'add "enabledMcpjsonServers": ["todoledger"] to .claude/settings.local.json '
            f"({install_line('claude-code', seen, approve=True)}), or approve it under /mcp"
        ),
        by="approve",
    ),
    Need(
        "claude-code.mcp-allowed",
        "claude-code",
        MCP,
        lambda seen: any(r in ("mcp__todoledger", "mcp__todoledger__*") for r in claude_allowed(seen)),
        "Claude Code: the todoledger MCP tools are not in permissions.allow, so `claude -p` refuses them "
        "(interactive sessions ask each time)",
        'add "mcp__todoledger" to permissions.allow in .claude/settings.json (todoledger install claude-code)',
    ),
    Need(
        "claude-code.cli-allowed",
        "claude-code",
        CLI,
        lambda seen: not claude_bash_missing(seen),
        "Claude Code: the todoledger commands are not in permissions.allow, so `claude -p` refuses "
        'them ("This command requires approval"; interactive sessions ask)',
        lambda seen: (
            "add to permissions.allow in .claude/settings.json: "
            + ", ".join(claude_bash_missing(seen))
            + f" ({_reinstall('claude-code')(seen)})"
        ),
    ),
    Need(
        "claude-code.hook-start",
        "claude-code",
        ALL,
        hook("claude-code", "SessionStart", matcher_has="startup"),
        "Claude Code: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.hook-compact",
        "claude-code",
        ALL,
        hook("claude-code", "SessionStart", matcher_has="compact"),
        "Claude Code: the SessionStart hook does not fire after compaction, so the plan is lost there",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.hook-mirror",
        "claude-code",
        ALL,
        hook("claude-code", "PostToolUse"),
        "Claude Code: no PostToolUse hook, so its native task list is not mirrored",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.hook-screen",
        "claude-code",
        ALL,
        hook("claude-code", "PreToolUse", "--screen"),
        "Claude Code: no PreToolUse screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.hook-stop",
        "claude-code",
        ALL,
        hook("claude-code", "Stop", "--gate-stop"),
        "Claude Code: no Stop gate hook (installed with --gate-stop)",
        _reinstall("claude-code"),
        blocks=False,
        gate=True,
    ),
    Need(
        "claude-code.hook-goal-lock",
        "claude-code",
        ALL,
        hook("claude-code", "TaskCompleted", "--gate-stop"),
        "Claude Code: no TaskCompleted goal-lock hook, so a task whose gates fail can be marked completed "
        "(installed with --gate-stop)",
        _reinstall("claude-code"),
        blocks=False,
        gate=True,
    ),
    Need(
        "claude-code.marker",
        "claude-code",
        ALL,
        lambda seen: isinstance(
            dig(seen.json(seen.project / ".claude" / "settings.json"), "env", "TODOLEDGER_AGENT"), str
        ),
        "Claude Code: no env.TODOLEDGER_AGENT in .claude/settings.json (the mark of its shell's commands)",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.folder-trusted",
        "claude-code",
        ALL,
        claude_trusted,
        "Claude Code: this folder is not trusted yet: Claude Code ignores its permissions.allow until it "
        "is (so `claude -p` refuses the todoledger tools) and interactive sessions ask first",
        lambda seen: (
            "start `claude` in this project once and accept the trust dialog, or: "
            f"{install_line('claude-code', seen, approve=True)}"
            f' (sets projects["{seen.project}"].hasTrustDialogAccepted in '
            f"{seen.home / '.claude.json'}); for one `claude -p` run: --allowedTools "
            + shlex.quote(",".join(claude_wanted(seen)))
        ),
        by="approve",
    ),
    *_agent_needs("claude-code", CLAUDE, "CLAUDE.md"),
    # -- opencode ---------------------------------------------------------------------------
    Need(
        "opencode.server",
        "opencode",
        MCP,
        server("opencode"),
        "opencode: opencode.json has no todoledger server",
        _reinstall("opencode"),
    ),
    Need(
        "opencode.server-enabled",
        "opencode",
        MCP,
        lambda seen: dig(server_entry(seen, "opencode"), "enabled") is not False,
        lambda seen: (
            f"opencode: the todoledger server is disabled in {(opencode_config(seen) or ('opencode.json',))[0]}"
        ),
        lambda seen: f'set "enabled": true in {(opencode_config(seen) or ("opencode.json",))[0]}',
        by="you",
        doc="opencode: the todoledger server is disabled",
    ),
    Need(
        "opencode.plugin",
        "opencode",
        ALL,
        lambda seen: seen.text(seen.project / ".opencode" / "plugins" / "todoledger.js") is not None,
        "opencode: no .opencode/plugins/todoledger.js, so the plan does not reach a session",
        _reinstall("opencode"),
    ),
    Need(
        "opencode.plugin-current",
        "opencode",
        ALL,
        lambda seen: (
            "experimental.session.compacting"
            in (
                seen.text(seen.project / ".opencode" / "plugins" / "todoledger.js")
                or "experimental.session.compacting"
            )
        ),
        "opencode: the plugin is from an older install (no plan at session start or after compaction)",
        _reinstall("opencode"),
    ),
    *_agent_needs("opencode", "opencode", "AGENTS.md"),
    # -- Codex --------------------------------------------------------------------------------
    Need(
        "codex.server",
        "codex",
        MCP,
        server("codex"),
        "Codex: .codex/config.toml has no todoledger server",
        _reinstall("codex"),
    ),
    Need(
        "codex.required",
        "codex",
        MCP,
        lambda seen: dig(server_entry(seen, "codex"), "required") is True,
        "Codex: the todoledger server is not `required`, so the first turn starts before it lists its "
        "tools and tool_search finds nothing",
        "set required = true in [mcp_servers.todoledger] (todoledger install codex)",
    ),
    Need(
        "codex.tools-approved",
        "codex",
        MCP,
        lambda seen: dig(server_entry(seen, "codex"), "default_tools_approval_mode") == "approve",
        'Codex: the todoledger tools need approval, which `codex exec` never gives ("MCP tool call '
        'requires approval, but approval policy is never")',
        'set default_tools_approval_mode = "approve" in [mcp_servers.todoledger] (todoledger install codex)',
    ),
    Need(
        "codex.trusted",
        "codex",
        ALL,
        codex_trusted,
        "Codex ignores this project's .codex/ (server and hooks) until the project is trusted",
        lambda seen: (
            f'add to {seen.codex_home / "config.toml"}: [projects."{seen.project}"] '
            f'trust_level = "trusted" ({install_line("codex", seen, approve=True)}; `codex exec --trust` for one run)'
        ),
        by="approve",
    ),
    Need(
        "codex.hook-start",
        "codex",
        ALL,
        hook("codex", "SessionStart", matcher_has="startup"),
        "Codex: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("codex"),
    ),
    Need(
        "codex.hook-compact",
        "codex",
        ALL,
        hook("codex", "SessionStart", matcher_has="compact"),
        "Codex: the SessionStart hook does not fire after compaction (where a build sends `compact`)",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hook-stop",
        "codex",
        ALL,
        lambda seen: (
            has_hook(hook_files(seen, "codex"), "Stop")
            or has_hook(hook_files(seen, "codex"), "Stop", "--gate-stop")
        ),
        "Codex: no todoledger Stop hook, so its goals and plan calls are not read from the rollout",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hook-gate",
        "codex",
        ALL,
        hook("codex", "Stop", "--gate-stop"),
        "Codex: the Stop hook does not gate the stop (installed with --gate-stop)",
        _reinstall("codex"),
        blocks=False,
        gate=True,
    ),
    Need(
        "codex.hook-screen",
        "codex",
        ALL,
        hook("codex", "PreToolUse", "--screen"),
        "Codex: no PreToolUse screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hooks-approved",
        "codex",
        ALL,
        codex_hooks_approved,
        lambda seen: codex_untrusted_what(seen),
        lambda seen: (
            "approve the todoledger hooks in Codex's `/hooks` screen, or: "
            f"{install_line('codex', seen, approve=True)} (writes the hashes Codex computes under [hooks.state])"
        ),
        by="approve",
        doc="Codex: todoledger's hooks are not approved (`/hooks`), so they do not run",
    ),
    *_agent_needs("codex", "Codex", "AGENTS.md"),
    # -- Gemini CLI ---------------------------------------------------------------------------
    Need(
        "gemini.server",
        "gemini",
        MCP,
        server("gemini"),
        "Gemini CLI: .gemini/settings.json has no todoledger server",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.trusted",
        "gemini",
        ALL,
        gemini_trusted,
        "Gemini CLI: this folder is not trusted: .gemini/settings.json (server and hooks) is ignored, "
        "and `gemini -p` exits 55",
        lambda seen: (
            f'add "{seen.project}": "TRUST_FOLDER" to {seen.home / ".gemini" / "trustedFolders.json"} '
            f"({install_line('gemini', seen, approve=True)}), or trust the folder when Gemini asks"
        ),
        by="approve",
    ),
    Need(
        "gemini.allowed",
        "gemini",
        ALL,
        lambda seen: not gemini_allowed_missing(seen),
        lambda seen: (
            "Gemini CLI: tools.allowed lacks "
            + ", ".join(gemini_allowed_missing(seen))
            + ", so `gemini -p` does not offer "
            + ("them" if len(gemini_allowed_missing(seen)) > 1 else "it")
        ),
        lambda seen: (
            "add "
            + ", ".join(json.dumps(w) for w in gemini_allowed_missing(seen))
            + f" to tools.allowed in .gemini/settings.json ({_reinstall('gemini')(seen)}), or pass "
            f"--allowed-tools '{','.join(gemini_allowed_wanted(seen))}' to `gemini -p`"
        ),
        doc="Gemini CLI: tools.allowed lacks write_todos or the route's tools (`mcp_todoledger_*`, "
        "`run_shell_command(<todoledger>)`), so `gemini -p` does not offer them",
    ),
    Need(
        "gemini.hook-start",
        "gemini",
        ALL,
        hook("gemini", "SessionStart"),
        "Gemini CLI: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.hook-compress",
        "gemini",
        ALL,
        hook("gemini", "PreCompress"),
        "Gemini CLI: no PreCompress hook, so the plan is not re-based after compression",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.hook-mirror",
        "gemini",
        ALL,
        hook("gemini", "AfterTool"),
        "Gemini CLI: no AfterTool hook, so write_todos is not mirrored",
        _reinstall("gemini"),
        blocks=False,
    ),
    Need(
        "gemini.hook-screen",
        "gemini",
        ALL,
        hook("gemini", "BeforeTool", "--screen"),
        "Gemini CLI: no BeforeTool screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("gemini"),
        blocks=False,
    ),
    Need(
        "gemini.hook-gate",
        "gemini",
        ALL,
        hook("gemini", "AfterAgent", "--gate-stop"),
        "Gemini CLI: no AfterAgent gate hook (installed with --gate-stop)",
        _reinstall("gemini"),
        blocks=False,
        gate=True,
    ),
    *_agent_needs("gemini", "Gemini CLI", "GEMINI.md"),
]
