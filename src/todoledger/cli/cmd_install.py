"""`todoledger install AGENT`: merge our hooks and MCP server into an agent's config."""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import click

from todoledger.core.model import LedgerError
from todoledger.install import AGENTS, FileChange, InstallResult, run
from todoledger.install.runner import ROUTES
from todoledger.install.runner import uninstall as run_uninstall

PROJECT = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project root for project-scoped config (default: git root of the cwd, else the cwd).",
)
# As the group's: these commands are also invoked on their own (tests), and click keeps the
# help option of a command's first invocation.
HELP = {"help_option_names": ["-h", "--help"]}
HOME = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Home directory for user-scoped config (default: ~).",
)


@click.command("install", context_settings=HELP)
@click.argument("agent", type=click.Choice(AGENTS))
@click.option("--dry-run", is_flag=True, help="Show what would change (with a diff); write nothing.")
@PROJECT
@HOME
@click.option(
    "--route",
    type=click.Choice(ROUTES),
    default="mcp",
    show_default=True,
    help="How the agent reaches the ledger: its MCP tools, the todoledger CLI through its shell, or both.",
)
@click.option(
    "--approve",
    is_flag=True,
    help="Also write the approvals the agent would ask for (Claude Code's enabledMcpjsonServers, "
    "Codex's trusted project, Gemini's trusted folder).",
)
@click.option(
    "--command",
    "exe",
    default=None,
    help="How the agent should invoke todoledger (default: `todoledger` when that is this one on PATH, "
    "else this one's absolute path; always the absolute path for Codex, whose shell is a login shell).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option(
    "--gate-stop",
    is_flag=True,
    help="Also block the agent from stopping while items it completed fail their gates (not opencode).",
)
@click.option(
    "--panel",
    is_flag=True,
    help="Claude Code: show the plan in its task panel (ctrl+t), written one way from the ledger; "
    "gives newer models their Task tools back (mirrored by the hooks).",
)
def install(
    agent: str,
    dry_run: bool,
    project: Path | None,
    home: Path | None,
    route: str,
    approve: bool,
    exe: str | None,
    as_json: bool,
    gate_stop: bool,
    panel: bool,
) -> None:
    """Add todoledger's hooks, MCP server and instructions to AGENT's config (merged, idempotent)."""
    from todoledger.install.exe import resolve

    home_given = home is not None
    project = (project or _git_root(Path.cwd())).resolve()
    home = (home or Path.home()).resolve()
    command, why = resolve(exe, agent)
    try:
        result = run(
            agent,
            project=project,
            home=home,
            dry_run=dry_run,
            command=command,
            route=route,
            approve=approve,
            gate_stop=gate_stop,
            panel=panel,
        )
    except LedgerError as e:
        raise click.ClickException(str(e)) from e
    result.notes[:0] = why
    if agent == "codex" and approve and not home_given and os.environ.get("CODEX_HOME"):
        # Codex then reads $CODEX_HOME/config.toml, not the ~/.codex one we merged into.
        result.notes.append(
            f"CODEX_HOME is set: Codex reads {os.environ['CODEX_HOME']}/config.toml; "
            f'copy the [projects."{project}"] table there'
        )
    if as_json:
        from todoledger.cli.main import emit

        emit(_as_dict(result))
    else:
        _print_human(result, project)
        if not dry_run:
            _offer_person_key(project)


def _offer_person_key(project: Path) -> None:
    """Before any agent runs: a ledger no person key signs lets an agent running as
    you act as you. The offer is the one command that makes the key, printed, never a
    prompt: install runs in scripts and in the README's own terminal, where a question
    would wait for ever; a person runs the command next (it asks for a passphrase)."""
    from todoledger.ledger import Ledger

    try:
        with Ledger(cwd=project, create=False) as lg:
            if lg.exists and lg.signed():
                return
    except LedgerError:
        return
    click.echo(
        "no person key signs this ledger: an agent running as you could act as you."
        " Sign it before any agent runs: todoledger person init"
    )


@click.command("uninstall", context_settings=HELP)
@click.argument("agent", type=click.Choice(AGENTS))
@click.option("--dry-run", is_flag=True, help="Show what would change (with a diff); write nothing.")
@PROJECT
@HOME
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def uninstall(agent: str, dry_run: bool, project: Path | None, home: Path | None, as_json: bool) -> None:
    """Take back exactly what `todoledger install AGENT` added; the rest of each file stays byte for byte."""
    project = (project or _git_root(Path.cwd())).resolve()
    home = (home or Path.home()).resolve()
    try:
        result = run_uninstall(agent, project=project, home=home, dry_run=dry_run)
    except LedgerError as e:
        raise click.ClickException(str(e)) from e
    if as_json:
        from todoledger.cli.main import emit

        emit(_as_dict(result))
    else:
        _print_human(result, project, done=f"nothing of todoledger's is left to remove for {agent}")
    if _left(result):
        sys.exit(1)


def _left(result: InstallResult) -> bool:
    """Whether uninstall left an entry of ours in place (someone changed it)."""
    return any("left as it is" in n or n.endswith("by hand") for n in result.notes)


def _git_root(start: Path) -> Path:
    from todoledger.store.locate import is_git_top

    for folder in (start, *start.parents):
        if is_git_top(str(folder)):
            return folder
    return start


def _as_dict(result: InstallResult) -> dict[str, object]:
    return {
        "agent": result.agent,
        "dry_run": result.dry_run,
        "changes": [
            {"path": str(c.path), "summary": c.summary, "created": c.created, "changed": c.changed}
            for c in result.changes
        ],
        "notes": result.notes,
    }


def _print_human(result: InstallResult, project: Path, done: str | None = None) -> None:
    from todoledger.core.sanitize import for_terminal

    def say(text: str) -> None:
        # Config files and paths are not ours: print them through the one sanitiser too.
        click.echo(for_terminal(text, newlines=True), nl=False)

    for change in result.changes:
        state = "created" if change.created else "updated" if change.changed else "unchanged"
        state = "removed" if change.delete else state
        verb = f"would be {state}" if result.dry_run and change.changed else state
        say(f"{_shown(change.path, project)} ({verb})\n")
        for line in change.summary:
            say(f"  {line}\n")
        if result.dry_run and change.changed:
            say(_diff(change, project))
    for note in result.notes:
        say(f"note: {note}\n")
    if result.dry_run:
        click.echo("dry run: nothing was written")
    elif not result.changed and not (done and _left(result)):
        click.echo(done or f"todoledger is already installed for {result.agent}")


def _shown(path: Path, project: Path) -> str:
    try:
        return str(path.relative_to(project))
    except ValueError:
        return str(path)


def _diff(change: FileChange, project: Path) -> str:
    name = _shown(change.path, project)
    lines = difflib.unified_diff(
        (change.before or "").splitlines(keepends=True),
        change.after.splitlines(keepends=True),
        fromfile="/dev/null" if change.created else f"a/{name}",
        tofile=f"b/{name}",
    )
    # A file without a final newline would glue the diff's next header onto it.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
