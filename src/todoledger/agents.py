"""Every agent todoledger supports, in one table: where each part of its
support lives. Adding an agent starts here.

Modules are named, not imported: the hook path reads this table on every
tool call, and each part is imported only when it runs. A test checks that
every name here resolves (tests/test_agents.py).
"""

from __future__ import annotations

from todoledger.core.record import dataclass


@dataclass(frozen=True)
class Agent:
    name: str  # as in `todoledger hook NAME` and `todoledger install NAME`
    label: str  # for people
    dialects: tuple[str, ...]  # the formats its todo tools write (todoledger.dialects)
    hook: str  # module whose `handle(event, cwd)` answers `todoledger hook NAME`
    installer: str  # function of todoledger.install.agents that builds its config changes
    transcripts: tuple[str, ...]  # transcript formats `todoledger ingest` reads for it
    reader: str  # module reading those transcripts
    docs: str  # where its integration is described
    binary: str  # the command on PATH (`doctor` runs `<binary> --version`)
    package: str  # its npm package: `doctor` reads the version from its manifest when that is the binary's
    instructions: str  # the project file it reads for instructions (install adds a marked block)
    native_todo: tuple[str, ...]  # its own todo tools, where a build still has them
    tool_prefix: str  # how the model sees our MCP tools: prefix + tool name
    aliases: tuple[str, ...] = ()  # other names `todoledger hook` accepts


AGENTS: tuple[Agent, ...] = (
    Agent(
        name="claude-code",
        label="Claude Code",
        dialects=("claude-code", "claude-tasks"),
        hook="todoledger.hooks.claude_code",
        installer="claude_code",
        transcripts=("claude",),
        reader="todoledger.ingest.claude",
        docs="docs/agents.md#claude-code-mirror-the-native-list",
        binary="claude",
        package="@anthropic-ai/claude-code",
        instructions="CLAUDE.md",
        native_todo=("TodoWrite", "TaskCreate", "TaskUpdate"),
        tool_prefix="mcp__todoledger__",
        aliases=("claude",),
    ),
    Agent(
        name="opencode",
        label="opencode",
        dialects=("opencode",),
        hook="todoledger.hooks.opencode",
        installer="opencode",
        transcripts=("opencode-export", "opencode-storage", "opencode-sqlite"),
        reader="todoledger.ingest.opencode",
        docs="docs/agents.md#what-install-writes-per-route",
        binary="opencode",
        package="opencode-ai",
        instructions="AGENTS.md",
        native_todo=("todowrite",),
        tool_prefix="todoledger_",
    ),
    Agent(
        name="codex",
        label="Codex CLI",
        dialects=("codex",),
        hook="todoledger.hooks.codex",
        installer="codex",
        transcripts=("codex",),
        reader="todoledger.ingest.codex",
        docs="docs/agents.md#what-install-writes-per-route",
        binary="codex",
        package="@openai/codex",
        instructions="AGENTS.md",
        native_todo=("update_plan",),
        tool_prefix="mcp__todoledger__",
    ),
    Agent(
        name="gemini",
        label="Gemini CLI",
        dialects=("gemini",),
        hook="todoledger.hooks.gemini",
        installer="gemini",
        transcripts=("gemini", "gemini-json"),
        reader="todoledger.ingest.gemini",
        docs="docs/agents.md#what-install-writes-per-route",
        binary="gemini",
        package="@google/gemini-cli",
        instructions="GEMINI.md",
        native_todo=("write_todos",),
        tool_prefix="mcp_todoledger_",
    ),
)

NAMES: tuple[str, ...] = tuple(a.name for a in AGENTS)
DIALECTS: tuple[str, ...] = tuple(d for a in AGENTS for d in a.dialects)
_BY_NAME: dict[str, Agent] = {n: a for a in AGENTS for n in (a.name, *a.aliases)}


def find(name: str) -> Agent | None:
    """The agent called `name` (or one of its aliases)."""
    return _BY_NAME.get(name)


def hook_names() -> list[str]:
    return sorted(_BY_NAME)
