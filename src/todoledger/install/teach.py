"""The marked block `install` adds to the file an agent reads for project
instructions (CLAUDE.md, AGENTS.md, GEMINI.md): which todo tool to use, and
how to get the plan back.

The server's MCP instructions teach the same habits, but only where the MCP
route is installed and only to clients that pass them on; the block reaches
the model either way. It sits between two marker lines, so a re-install
replaces exactly it and an uninstall removes exactly it.
"""

from __future__ import annotations

import re

from todoledger.agents import Agent

ROUTES = ("mcp", "cli", "both")

_TOOLS = ("todowrite", "todoread", "plan_next", "plan_update")
# The verbs the CLI route teaches an agent, and the read-only ones beside them: what
# install lets an agent run without asking (Claude Code's permissions.allow, Gemini's
# tools.allowed). Never a person's verb (approve, trust, gate remove, undo --any).
AGENT_VERBS = ("show", "next", "add", "start", "done", "prime", "history", "release", "renew")
_COMMAND = re.compile(r"`([^`]+) prime`")


def begin(agent: Agent) -> str:
    # One block per agent: opencode and Codex both read AGENTS.md, and each
    # uninstall must take away its own block only.
    return (
        f"<!-- todoledger:begin {agent.name} (written by `todoledger install`; a re-install replaces it) -->"
    )


def end(agent: Agent) -> str:
    return f"<!-- todoledger:end {agent.name} -->"


def block(agent: Agent, route: str, command: str = "todoledger") -> str:
    """The block's lines, markers included, ending with a newline. `command` is
    how the agent's shell runs todoledger (the same command its hooks use)."""
    lines = [begin(agent), f"## Todo list: todoledger ({agent.label})", ""]
    lines.append(
        "This project keeps its todo list in todoledger: it survives restarts and compaction, "
        "and other agents see it."
    )
    if route in ("mcp", "both"):
        names = ", ".join(f"`{agent.tool_prefix}{t}`" for t in _TOOLS)
        native = " / ".join(f"`{n}`" for n in agent.native_todo)
        lines.append(f"- Plan and track work with the todoledger tools ({names}), not the built-in {native}.")
        lines.append(
            f"- At session start and after a compaction, call `{agent.tool_prefix}todoread` and continue "
            "that plan instead of starting anew."
        )
    if route in ("cli", "both"):
        t = command
        lines.append(
            f"- From the shell: `{t} show --json` (the plan), `{t} next --claim --json` "
            f'(take the next ready item), `{t} add "TEXT"`, `{t} start ID`, '
            f'`{t} done ID --evidence "WHAT SHOWS IT"`, `{t} prime` (where the plan stands).'
        )
        if route == "cli":
            lines.append(
                f"- At session start and after a compaction, run `{t} prime` and continue that plan."
            )
    lines.append(
        "- Keep exactly one item in progress. Mark an item completed only when it is really done, "
        "with evidence; partial or failing work stays in progress."
    )
    lines.append(end(agent))
    return "\n".join(lines) + "\n"


def ensure(text: str | None, agent: Agent, wanted: str) -> tuple[str, str]:
    """(`text` with our block in place, what was added before the block).
    The block is replaced where its markers are, else appended after a blank
    line. Everything outside the markers stays as it is."""
    current = text or ""
    nl = "\r\n" if "\r\n" in current else "\n"
    wanted = wanted.replace("\n", nl)
    span = find(current, agent)
    if span is not None:
        start, stop = span
        return current[:start] + wanted + current[stop:], ""
    if not current:
        return wanted, ""
    lead = "" if current.endswith(("\n", "\r")) else nl
    lead += nl
    return current + lead + wanted, lead


def remove(text: str, agent: Agent, lead: str) -> str | None:
    """`text` without our block (and the `lead` install put before it); None if there is none."""
    span = find(text, agent)
    if span is None:
        return None
    start, stop = span
    if lead and text[:start].endswith(lead):
        start -= len(lead)
    return text[:start] + text[stop:]


def command_of(block_text: str) -> str | None:
    """The todoledger command a CLI-route block teaches, if it teaches one."""
    found = _COMMAND.search(block_text)
    return found.group(1) if found else None


def find(text: str, agent: Agent) -> tuple[int, int] | None:
    """Start and end offsets of the agent's block (its last line's newline included)."""
    start = text.find(begin(agent))
    if start < 0 or (start > 0 and text[start - 1] not in "\r\n"):
        return None
    close = text.find(end(agent), start)
    if close < 0:
        return None
    stop = close + len(end(agent))
    if text.startswith("\r\n", stop):
        stop += 2
    elif text.startswith("\n", stop):
        stop += 1
    return start, stop
