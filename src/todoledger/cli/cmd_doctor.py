"""`todoledger doctor`: is each agent set up to use the ledger, and is the ledger sound?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from todoledger.cli.cmd_install import HELP, HOME, PROJECT, _git_root


@click.command("doctor", context_settings=HELP)
@PROJECT
@HOME
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def doctor(project: Path | None, home: Path | None, as_json: bool) -> None:
    """Check each agent found on PATH or configured here: version, native todo tools, the
    todoledger server (configured, approved, starts), hooks, and the ledger. Exits 1 when
    something is broken; every problem comes with its fix."""
    from todoledger.core.sanitize import for_terminal
    from todoledger.install import doctor as checks

    project = (project or _git_root(Path.cwd())).resolve()
    home = (home or Path.home()).resolve()
    report = checks.run(project, home)
    if as_json:
        click.echo(checks.dumps(report))
        sys.exit(1 if report.broken else 0)

    def say(line: str) -> None:
        click.echo(for_terminal(line))  # paths and versions come from other programs

    say(f"project: {project}")
    if not report.agents:
        say("agents: none found on PATH or configured in this project")
    for a in report.agents:
        where = a.path or "not on PATH"
        read = f", from {a.version_from}" if a.version and a.version_from != "--version" else ""
        say(f"{a.label}: {a.version or 'version unknown'} ({where}{read})")
        say(f"  native todo tools: {a.native_todo}" + (f" ({a.native_why})" if a.native_why else ""))
        server = f"{a.server} ({' '.join(a.server_command or [])})" if a.server else "not configured"
        say(f"  todoledger server: {server}; approved: {a.approved}")
        say(f"  hooks: {', '.join(a.hooks) or 'none'}; approved: {a.hooks_approved}")
        say(f"  goal-lock: {'; '.join(a.goal_lock)}")
        for line in a.panel:
            say(f"  panel: {line}")
    sound = report.ledger.get("health") in ("ok", "not created yet (the first write creates it)")
    for s in report.servers:
        if not s["ok"]:
            state = s["error"]
        elif not sound:  # never "all is well" beside a ledger that is not
            state = f"starts and lists {len(s['tools'])} tools, but the ledger it serves is not sound (below)"
        elif s["reads"]:
            state = f"starts, lists {len(s['tools'])} tools ({s['protocol']}), reads the ledger"
        else:
            state = (
                f"starts and lists {len(s['tools'])} tools, but cannot read the ledger: every tool call fails"
            )
        say(f"server `{' '.join(s['command'])}`: {state}")
    led = report.ledger
    say(f"ledger: {led.get('location')}: {led.get('health')}")
    if led.get("source"):
        say(f"  from: {led['source']}")
    if led.get("people"):
        say(f"  {led['people']}")
    from todoledger.store.locate import waiting

    count, folder = waiting(str(project))
    if count:
        say(f"warning: {count} hook events wait in {folder} (the ledger was unavailable)")
        say("  fix: todoledger flush")
    problems = [*report.problems, *(p for a in report.agents for p in a.problems)]
    for p in problems:
        say(f"{p.level}: {p.what}")
        if p.fix:
            say(f"  fix: {p.fix}")
    t = report.timings
    say(
        f"time: {t['total_s']:.2f} s (the agents' own processes {t['agents_s']:.2f} s; "
        f"todoledger {t['own_s']:.2f} s, of which its server's start {t['server_s']:.2f} s)"
    )
    say("broken: see the errors above" if report.broken else "ok" if not problems else "ok, with warnings")
    sys.exit(1 if report.broken else 0)
