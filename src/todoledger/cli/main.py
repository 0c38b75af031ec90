"""The `todoledger` command: thin over `todoledger.ledger.Ledger`.

Heavy interfaces (MCP, install, ingest) register by name and are imported
only when their command runs.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from todoledger.agents import DIALECTS
from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.ledger import Ledger

F = TypeVar("F", bound=Callable[..., Any])

LAZY_COMMANDS: dict[str, str] = {
    "install": "todoledger.cli.cmd_install:install",
    "uninstall": "todoledger.cli.cmd_install:uninstall",
    "doctor": "todoledger.cli.cmd_doctor:doctor",
    "mcp": "todoledger.cli.cmd_mcp:mcp",
    "serve": "todoledger.cli.cmd_board:serve",
    "path": "todoledger.cli.cmd_board:path",
    "approve": "todoledger.cli.cmd_board:approve",
    "set": "todoledger.cli.cmd_board:set_fields",
    "token": "todoledger.cli.cmd_board:token",
    "person": "todoledger.cli.cmd_person:person",
    "ingest": "todoledger.cli.cmd_ingest:ingest",
    "report": "todoledger.cli.cmd_ingest:report",
    "stats": "todoledger.cli.cmd_ingest:stats",
    # checks
    "assume": "todoledger.cli.cmd_checks:assume",
    "gate": "todoledger.cli.cmd_checks:gate",
    "verify": "todoledger.cli.cmd_checks:verify",
    "trust": "todoledger.cli.cmd_checks:trust",
    "metrics": "todoledger.cli.cmd_checks:metrics_cmd",
    "accept-metric": "todoledger.cli.cmd_checks:accept_metric",
    "sweep": "todoledger.cli.cmd_sweep:sweep",
}


class LedgerGroup(click.Group):
    """Adds lazily imported commands and turns refusals into one clear line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            module, attr = LAZY_COMMANDS[cmd_name].split(":")
            try:
                command: click.Command = getattr(importlib.import_module(module), attr)
            except ImportError as exc:
                raise click.ClickException(f"{cmd_name} is unavailable: {exc}") from None
            return command
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["todoledger.argv"] = list(args)  # the command line, for a refusal's record
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            from todoledger.cli.refusals import note

            note(ctx.meta.get("todoledger.argv", []), str(exc))
            raise click.ClickException(str(exc)) from None
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            sys.exit(0)
        except Exception as exc:
            if os.environ.get("TODOLEDGER_DEBUG"):
                raise
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {exc} (set TODOLEDGER_DEBUG=1 for details)"
            ) from None


def options(*, plan: bool = False, writer: bool = False, as_json: bool = False) -> Callable[[F], F]:
    """The shared options a command takes, each only where it means something:
    --plan where a plan is used, --writer where the command records a change
    (or, for `show`, what the writer has seen), --json where there is a JSON answer."""

    def decorate(func: F) -> F:
        if as_json:
            func = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(func)
        if writer:
            func = click.option(
                "--writer",
                "writer",
                default=None,
                callback=writer_option,
                help="Who makes the change: a writer, never a person (default: from where it runs).",
            )(func)
        if plan:
            func = click.option(
                "--plan", "plan", envvar="TODOLEDGER_PLAN", default=None, help="Plan name (default: main)."
            )(func)
        return func

    return decorate


writes = options(plan=True, writer=True, as_json=True)


def writer_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--writer` names a writer, never a person (`todoledger.identity`); without it
    the ledger takes the route's writer. One line for a refusal, nothing done."""
    from todoledger.identity import cli_writer

    if value is None:
        return None
    try:
        return cli_writer(value)
    except LedgerError as exc:
        raise click.ClickException(str(exc)) from None


def where(lg: Ledger) -> str:
    """The ledger's place, said truthfully before it exists."""
    return lg.location if lg.exists else f"{lg.location} (not created yet: the first write creates it)"


def ledger() -> Ledger:
    from todoledger.cli.signing import unlocker
    from todoledger.ledger import Ledger, new_key

    lg = Ledger(key=new_key("cli"))  # the command's idempotency key, made before its first attempt
    lg.sign_with(unlocker())  # asked only where a signed ledger needs a person's signature
    return lg


def passphrase_option(func: F) -> F:
    """`--passphrase-fd N` on a command that may need a person's signature."""
    from todoledger.personkeys import PASSPHRASE_FD_HELP

    def keep(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
        from todoledger.cli.signing import PASSPHRASE_FD

        if value is not None:
            PASSPHRASE_FD[0] = value

    return click.option(
        "--passphrase-fd",
        type=int,
        default=None,
        metavar="N",
        expose_value=False,
        callback=keep,
        help=PASSPHRASE_FD_HELP,
    )(func)


def reader() -> Ledger:
    from todoledger.ledger import Ledger

    return Ledger(create=False)


def say(line: str) -> None:
    """One line for a person: agent text in it is sanitised (`core.sanitize`)."""
    from todoledger.core.sanitize import for_terminal

    click.echo(for_terminal(line))


def emit(data: Any) -> None:
    from todoledger.cli.jsonout import dumps

    click.echo(dumps(data))


@click.group(
    cls=LedgerGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="todoledger")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """A durable, shared, verifiable ledger for coding agents' todo lists.

    With no command, shows the plan.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(show)


@cli.command()
@writes
@click.argument("target", metavar="[PLAN|ID]", required=False)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also draw the completed, cancelled and dropped items (after the open work).",
)
@click.option("--no-pager", is_flag=True, help="Never page a long plan on a terminal.")
def show(
    target: str | None,
    plan: str | None,
    writer: str | None,
    as_json: bool,
    show_all: bool = False,
    no_pager: bool = False,
) -> None:
    """Show a plan (PLAN, as `report PLAN` takes it, or --plan): open work first, with
    status, priority and dependencies. Given an item's id (of the current plan), show that
    item in full: its notes, evidence, checks with their last results, numbers and history.

    Completed, cancelled and dropped items fold into a count unless --all (a completion
    whose gate fails or never ran, and an item a writer's list still works on, are never
    folded; listing the plans is `todoledger plans`). On a terminal a plan longer than the
    screen goes through $TODOLEDGER_PAGER, $PAGER or less, as git log does (PAGER=cat or
    --no-pager: none)."""
    with reader() as lg:
        from todoledger.cli import itemview

        plan, item_id = itemview.resolve(lg, target, plan)
        if item_id is not None:
            from todoledger.cli import render

            assert plan is not None
            detail = itemview.detail(lg, plan, item_id)
            emit(detail) if as_json else render.item(detail)
            return
        if as_json:
            emit(lg.show(plan, writer=writer) if writer else lg.show(plan))
            return
        view, location = lg.view(plan, writer=writer), where(lg)
        people = lg.people()["line"] if lg.exists and sys.stdout.isatty() else None
    from todoledger.cli import render

    render.plan(
        view,
        location,
        show_all=show_all,
        pager=not no_pager,
        people=people,
    )
    _say_spooled()


def _say_spooled() -> None:
    """On stderr: hook events that wait for the ledger, which this view does not show yet."""
    from todoledger.store.locate import spooled_line

    if (line := spooled_line(None)) is not None:
        click.echo(line, err=True)


@cli.command()
@options(as_json=True)
def plans(as_json: bool) -> None:
    """List the plans in the ledger."""
    with reader() as lg:
        rows = lg.plans()
    if as_json:
        emit(rows)
    else:
        from todoledger.cli import render

        render.plans(rows)


@cli.command()
@click.option(
    "--all", "every", is_flag=True, help="Also the finished tasks still kept (24 h after they end)."
)
@options(as_json=True)
def tasks(every: bool, as_json: bool) -> None:
    """List the MCP tasks running and waiting (long tool calls an agent's client runs in
    the background), with their status messages."""
    from todoledger.ledger.tasks import lapsed, stopped_line

    with reader() as lg:
        rows = lg.tasks(finished=every) if lg.exists else []
    # A worker that died says so (its client may be gone too, and only a tasks/get resumes it):
    # the row alone would say its work is running for ever.
    shown = [
        {k: v for k, v in r.items() if k not in ("arguments", "result")} | {"stopped": lapsed(r)}
        for r in rows
    ]
    if as_json:
        emit(shown)
        return
    if not rows:
        say("no tasks running or waiting" + (" or kept" if every else ""))
        return
    for r in shown:
        if r["stopped"] is not None:
            worker = stopped_line(r["stopped"])
        else:
            worker = f"pid {r['pid']} on {r['host']}" if r["pid"] is not None else "no worker"
        say(
            f"{r['id']}  {r['status']:<14} {r['tool']}  plan {r['plan']}  {r['principal']}"
            f"  since {r['created_at']}  ({worker})"
        )
        if r["message"]:  # a stopped worker's last words ("... running") are no longer true
            say(f"    {'its worker last said: ' if r['stopped'] is not None else ''}{r['message']}")


LEASE = click.option(
    "--lease",
    "lease",
    type=int,
    default=None,
    help="Lease length in seconds (default: the plan's, else 1800).",
)
TOKEN = click.option(
    "--token",
    type=int,
    default=None,
    help="The claim's fencing token: refused if the item was claimed again.",
)


@cli.command("next")
@writes
@click.option(
    "--claim", is_flag=True, help="Give the first ready item to the writer for a lease (prints its token)."
)
@LEASE
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 1000))
@click.option(
    "--parallel", is_flag=True, help="Sets of ready items that can run at once (no shared resource)."
)
def next_cmd(
    plan: str | None,
    writer: str | None,
    as_json: bool,
    claim: bool,
    lease: int | None,
    limit: int,
    parallel: bool = False,
) -> None:
    """Ready items: dependencies met, by priority then order."""
    if parallel:
        with reader() as lg:
            sched = lg.schedule(plan)
            rows = {r["id"]: r for r in lg.items(plan)}
            waiting = set(lg.approvals(plan)["waiting"])
        if as_json:
            emit(
                {"plan": sched["plan"], "parallel": sched["parallel"], "held": sched["held"]}
                | {"needs_approval": sorted(waiting)}
            )
            return
        from todoledger.cli.schedule_text import parallel_lines

        for line in parallel_lines(sched, rows, waiting):
            say(line)
        return
    with ledger() if claim else reader() as lg:
        found = lg.next(plan, limit=limit, claim=claim, writer=writer, lease=lease)
        stranded = [] if as_json else lg.stranded(plan)
    if as_json:
        emit(found)
        return
    from todoledger.cli import render

    render.items(found, title="claimed" if claim else "ready", empty="nothing is ready")
    for row in found if claim else []:
        say(
            f"lease token {row['token']}, until {row['lease_expires']}: pass --token to your updates, with"
            f" TODOLEDGER_LEASE_SECRET={row['lease_secret']} (yours only: it proves you hold the lease)"
        )
    if stranded:
        render.stranded(stranded)


@cli.command()
@writes
@click.argument("ref", metavar="ID")
@click.option("--token", type=int, required=True, help="The claim's fencing token.")
@LEASE
def renew(
    ref: str, plan: str | None, writer: str | None, as_json: bool, token: int, lease: int | None
) -> None:
    """Extend your lease on a claimed item."""
    with ledger() as lg:
        row = lg.renew(ref, plan=plan, writer=writer, token=token, lease=lease)
    emit(row) if as_json else say(f"{row['item']}: leased to {row['holder']} until {row['expires_at']}")


@cli.command()
@writes
@click.argument("ref", metavar="ID")
@click.option("--token", type=int, required=True, help="The claim's fencing token.")
def release(ref: str, plan: str | None, writer: str | None, as_json: bool, token: int) -> None:
    """Give your claim on an item back: it is pending again."""
    with ledger() as lg:
        row = lg.release(ref, plan=plan, writer=writer, token=token)
    emit(row) if as_json else say(f"{row['item']}: released")


@cli.command()
@options(writer=True, as_json=True)
@click.option("--plan", "plan", envvar="TODOLEDGER_PLAN", default=None, help="Only this plan (default: all).")
def reclaim(plan: str | None, writer: str | None, as_json: bool) -> None:
    """Release every expired lease (each release is recorded)."""
    with ledger() as lg:
        rows = lg.reclaim(plan, writer=writer)
    if as_json:
        emit(rows)
        return
    for row in rows:
        say(f"{row['item']}: {row['holder']}'s lease expired at {row['expires_at']}: released")
    if not rows:
        say("no lease has expired")


@cli.command("lease")
@options(plan=True)
@click.argument("seconds", type=int, required=False)
def lease_cmd(plan: str | None, seconds: int | None) -> None:
    """Set the plan's lease length in seconds (none: back to 1800)."""
    with ledger() as lg:
        lg.set_lease_length(seconds, plan=plan)
    say(f"leases in this plan last {seconds or 1800} s")


def _item_command(name: str, doc: str, call: Callable[..., dict[str, Any]], *extra: Callable[[F], F]) -> None:
    def command(ref: str, plan: str | None, writer: str | None, as_json: bool, **kw: Any) -> None:
        with ledger() as lg:
            row = call(lg, ref, plan=plan, writer=writer, **kw)
        if as_json:
            emit(row)
        else:
            from todoledger.cli import render

            render.changed(row)

    command.__doc__ = doc
    wrapped: Any = writes(command)
    for option in extra:
        wrapped = option(wrapped)
    cli.command(name)(click.argument("ref", metavar="ID")(wrapped))


FORCE = click.option(
    "--force",
    is_flag=True,
    help="Go ahead although prerequisites are unmet or, for a person, another writer holds the lease"
    " (recorded in the history).",
)
_item_command(
    "start",
    "Mark an item in_progress.",
    lambda lg, ref, **kw: lg.start(ref, **kw),
    FORCE,
    TOKEN,
    passphrase_option,
)


def _done(lg: Ledger, ref: str, **kw: Any) -> dict[str, Any]:
    from todoledger.ledger.verify import done_command

    return done_command(lg, ref, **kw)


_item_command(
    "done",
    "Mark an item completed, with evidence; its gates run first and must pass.",
    _done,
    passphrase_option,
    click.option(
        "--evidence", default=None, help="What shows it is done (a command's output, a file, a figure)."
    ),
    click.option("--metric", "metric", multiple=True, help="A number measured, NAME=VALUE (repeatable)."),
    click.option(
        "--force",
        is_flag=True,
        help="Complete although prerequisites are unmet or a gate fails (a failing gate needs --reason),"
        " or, for a person, another writer holds the lease (recorded).",
    ),
    click.option("--reason", default=None, help="Why the override is right (recorded)."),
    TOKEN,
)
_item_command(
    "cancel",
    "Cancel an item.",
    lambda lg, ref, **kw: lg.cancel(ref, **kw),
    click.option("--reason", default=None, help="Why it is cancelled."),
    click.option("--force", is_flag=True, help="A person's override of another writer's lease (recorded)."),
    TOKEN,
)
_item_command("restore", "Restore a dropped or cancelled item.", lambda lg, ref, **kw: lg.restore(ref, **kw))


@cli.command()
@writes
@click.argument("text")
@click.option("--parent", default=None, help="The phase this item belongs to.")
@click.option("--after", default=None, help="Place it after this item.")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), default=None)
@click.option("--depends-on", "depends_on", multiple=True, help="An item this one waits for (repeatable).")
@click.option(
    "--done-when", "done_when", default=None, help="A gate: the check `done` must pass (e.g. cmd:pytest)."
)
@click.option("--estimate", default=None, help="How long it should take: 15m, 2h, 1h30m, 1d.")
@click.option("--uses", multiple=True, help="A resource it holds exclusively: server, gpu:0-3 (repeatable).")
@click.option("--needs-approval", is_flag=True, help="No agent may start it until a person approves it.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the ids, one a line (for a script to capture).")
def add(
    text: str,
    plan: str | None,
    writer: str | None,
    as_json: bool,
    parent: str | None,
    after: str | None,
    priority: str | None,
    depends_on: tuple[str, ...],
    done_when: str | None = None,
    estimate: str | None = None,
    uses: tuple[str, ...] = (),
    needs_approval: bool = False,
    quiet: bool = False,
) -> None:
    """Add an item."""
    with ledger() as lg:
        if done_when is not None:
            from todoledger.core.checkspec import parse

            parse(done_when)  # a bad spec refuses before anything is added
        row = lg.add(
            text,
            plan=plan,
            writer=writer,
            parent=parent,
            after=after,
            priority=priority,
            depends_on=depends_on,
            estimate=estimate,
            uses=uses,
            needs_approval=needs_approval,
        )
        if done_when is not None:
            row["gate"] = lg.add_check(row["id"], done_when, plan=plan, writer=writer)
    if quiet:
        click.echo(row["id"])
    elif as_json:
        emit(row)
    else:
        from todoledger.cli import render

        render.changed(row, verb="added")


@cli.group()
def dep() -> None:
    """Dependencies: an item waits for another."""


@dep.command("add")
@writes
@click.argument("ref", metavar="ID")
@click.argument("blocker", metavar="BLOCKER")
def dep_add(ref: str, blocker: str, plan: str | None, writer: str | None, as_json: bool) -> None:
    """ID waits for BLOCKER."""
    with ledger() as lg:
        row = lg.dep_add(ref, blocker, plan=plan, writer=writer)
    emit(row) if as_json else say(f"{row['id']} now waits for {', '.join(row['depends_on'])}")


@dep.command("remove")
@writes
@click.argument("ref", metavar="ID")
@click.argument("blocker", metavar="BLOCKER")
def dep_remove(ref: str, blocker: str, plan: str | None, writer: str | None, as_json: bool) -> None:
    """ID no longer waits for BLOCKER."""
    with ledger() as lg:
        row = lg.dep_remove(ref, blocker, plan=plan, writer=writer)
    emit(row) if as_json else say(f"{row['id']} waits for {', '.join(row['depends_on']) or 'nothing'}")


@cli.command()
@options(plan=True, as_json=True)
@click.argument("ref", metavar="[ID]", required=False)
def history(ref: str | None, plan: str | None, as_json: bool) -> None:
    """The story of a plan or an item, timestamped."""
    with reader() as lg:
        events = lg.history(plan, ref)
    if as_json:
        emit(events)
    else:
        from todoledger.cli import render

        render.history(events)


@cli.command()
@options(as_json=True)
@click.option("--to", "target", required=True, help="An empty ledger: a postgresql:// URL or a file path.")
def migrate(as_json: bool, target: str) -> None:
    """Copy this ledger, every plan and the whole history, to another backend, and verify the copy."""
    with reader() as lg:
        if not lg.exists:
            raise click.ClickException(f"no ledger at {lg.location} to copy")
        report = lg.copy_to(target)
    if as_json:
        emit(report)
        return
    rows = report["rows"]
    say(
        f"copied {rows.get('plans', 0)} plans, {rows.get('items', 0)} items, {rows.get('events', 0)} events"
        f" and {rows.get('ops', 0)} ops to {report['to']}: verified (same counts, the events replay,"
        " same exports and histories)"
    )


@cli.command()
@options(as_json=True)
@click.option("--plan", "plan", default=None, help="Only this plan's events (default: every plan's).")
@click.option("--since", type=int, default=None, help="Start after this event number (default: from now).")
@click.option("--count", type=click.IntRange(1), default=None, help="Exit after this many events.")
@click.option(
    "--panel",
    is_flag=True,
    help="Also keep this project's Claude Code task panel (install claude-code --panel) in step with "
    "every change, other machines' included (team mode).",
)
def watch(as_json: bool, plan: str | None, since: int | None, count: int | None, panel: bool) -> None:
    """Print each change as it happens, from any process or machine (--json: one line per event).
    A lost connection, a server restart or a failover does not end it: it reconnects with
    backoff and goes on after the last event it printed, saying so on stderr. A SQLite ledger
    file deleted or replaced under it ends it, with one line: a new `watch` reads the new file."""
    import time

    from todoledger.cli.render_plain import event_line
    from todoledger.core.model import UnavailableError

    shown, after, lost = 0, since, 0
    where = None
    if panel:
        from todoledger.panel import target
        from todoledger.panel.sync import sync

        where = target()
        if where is None:
            raise click.ClickException(
                "no Claude Code task panel is set up for this project: todoledger install claude-code --panel"
            )
    try:
        while True:
            try:
                with reader() as lg:
                    if where is not None:
                        sync(lg, where)
                    if after is None:
                        after = lg.last_event()
                    if lost:
                        click.echo(
                            f"watch: reconnected to {lg.location}; going on after event {after}", err=True
                        )
                        lost = 0
                    for ev in lg.watch(after=after):
                        after = ev["seq"]
                        if where is not None and ev["plan"] == where.plan:
                            sync(lg, where)  # one sync per revision: the rest find the rows matching
                        if plan is not None and ev["plan"] != plan:
                            continue
                        line = (
                            json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
                            if as_json
                            else event_line(ev)
                        )
                        click.echo(line)
                        shown += 1
                        if count is not None and shown >= count:
                            return
            except UnavailableError as exc:
                # Backoff from 0.1 s to 5 s; the next look starts after the last event
                # printed, so nothing is skipped or printed twice.
                delay = min(5.0, 0.1 * 2**lost)
                lost += 1
                click.echo(f"watch: {exc}; reconnecting in {delay:g} s", err=True)
                time.sleep(delay)
    except KeyboardInterrupt:
        return


@cli.command()
@writes
@click.option("--any", "any_writer", is_flag=True, help="Undo the plan's last change, whoever made it.")
@passphrase_option
def undo(plan: str | None, writer: str | None, as_json: bool, any_writer: bool) -> None:
    """Reverse your last change in the plan (by appending inverse events)."""
    with ledger() as lg:
        row = lg.undo(plan, writer=writer, any_writer=any_writer)
    if as_json:
        emit(row)
    else:
        whose = "" if row["yours"] else f" (not yours: {row['writer']}'s)"
        say(
            f"undid op {row['undone_op']}{whose}: {row['kind']} by {row['writer']} at {row['at']}: {row['summary'] or ''}"
        )


FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines (every field), or a Markdown task list (- [ ] / - [x], nesting as parents).",
)


@cli.command()
@options(plan=True)
@FORMAT
@click.option(
    "--ids",
    is_flag=True,
    help="Markdown: write each item's id as a trailing <!-- id:... --> comment "
    "(a file imported with them keeps them anyway).",
)
@click.argument("dest", type=click.File("wb"), default="-")
def export(dest: Any, plan: str | None, fmt: str, ids: bool) -> None:
    """Write the plan as JSON Lines (one item a line, stable order) or a Markdown task list
    (the file it was imported from, as it was, with the items as they are now)."""
    with reader() as lg:
        if fmt == "markdown":
            from todoledger.core.mdfile import listed, render, render_plain

            items = lg.items(plan)
            layout = lg.markdown_layout(plan)
            if layout is None:
                text = render_plain(items, ids=ids)
            else:
                known = listed(layout)
                extra = [i for i in items if i["id"] not in known]
                text = render(layout, {i["id"]: i for i in items}, extra, ids=ids)
            dest.write(text.encode("utf-8"))  # bytes: the file's own newlines (CRLF too) stay
            return
        for line in lg.export(plan):
            dest.write((line + "\n").encode("utf-8"))


@cli.command("import")
@writes
@FORMAT
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--force", is_flag=True, help="A person's override of other writers' leases (recorded).")
def import_cmd(
    source: Any, plan: str | None, writer: str | None, as_json: bool, fmt: str, force: bool = False
) -> None:
    """Make the plan match a JSON Lines export, or hold a Markdown task list's items."""
    try:
        text = source.read().decode("utf-8")  # bytes: a Markdown file's own newlines (CRLF too) are kept
    except UnicodeDecodeError:
        raise LedgerError("input is not UTF-8 text") from None
    with ledger() as lg:
        if fmt == "markdown":
            from todoledger.core.mdfile import parse
            from todoledger.defaults import default_plan
            from todoledger.ingest.markdown import apply_file

            doc = parse(text, kiro=".kiro/" in str(getattr(source, "name", "")).replace("\\", "/"))
            if not doc.tasks:
                raise LedgerError("no task list found: expected lines like `- [ ] text` or `- [x] text`")
            row = apply_file(lg, doc, plan=plan or default_plan(), writer=writer)
        else:
            import io

            # One record a line, split at \n only (a JSON string may hold U+2028; a \r
            # before the \n is white space to JSON).
            row = lg.import_jsonl(io.StringIO(text).readlines(), plan=plan, writer=writer, force=force)
    emit(row) if as_json else say(
        f"imported {row['records']} items into {row['plan']!r}: {row['added']} added, {row['changed']} changed"
    )


@cli.command()
@options(plan=True, as_json=True)
def prime(plan: str | None, as_json: bool) -> None:
    """The recovery point: what is in progress, ready next, recently done."""
    with reader() as lg:
        text = lg.prime(plan)
    emit(
        {"plan": plan or os.environ.get("TODOLEDGER_PLAN") or "main", "text": text}
    ) if as_json else click.echo(text, nl=False)


def _read_payload(source: str) -> bytes:
    from todoledger.cli.payload import read_payload

    return read_payload(source)


DIALECT_CHOICE = click.Choice(["auto", *DIALECTS])


@cli.command()
@writes
@click.option("--dialect", type=DIALECT_CHOICE, default="auto", show_default=True)
@click.argument("source", metavar="[FILE|-]", default="-")
@click.option("-q", "--quiet", is_flag=True, help="Print only the ids, one a line (for a script to capture).")
def write(
    source: str, plan: str | None, writer: str | None, as_json: bool, dialect: str, quiet: bool = False
) -> None:
    """Record an agent's whole todo list, in its own format."""
    data = _read_payload(source)
    with ledger() as lg:
        result = lg.write(data, plan=plan, writer=writer, dialect=dialect)
    if quiet:  # the list's ids in its order
        for item_id in result.as_dict()["ids"]:
            click.echo(item_id)
        return
    if as_json:
        emit(result.as_dict())
        return
    from todoledger.cli import render

    render.write_result(result.as_dict())


@cli.command()
@options(as_json=True)
@click.option("--dialect", type=DIALECT_CHOICE, default="auto", show_default=True)
@click.argument("source", metavar="[FILE|-]", default="-")
def lint(source: str, as_json: bool, dialect: str) -> None:
    """Check a payload without writing it; exits 1 on errors."""
    from todoledger.dialects import lint_payload

    findings = lint_payload(_read_payload(source), dialect)
    if as_json:
        emit([f.as_dict() for f in findings])
    else:
        for f in findings:
            say(f.line())
        if not findings:
            click.echo("ok: no findings")
    if any(f.level == "error" for f in findings):
        sys.exit(1)


@cli.command()
@options(plan=True, as_json=True)
def check(plan: str | None, as_json: bool) -> None:
    """Verify the ledger: state equals the replay of its events."""
    with reader() as lg:
        damage = lg.integrity()
        try:
            problems = lg.check(plan)
        except LedgerError as exc:  # a damaged file may not even replay: that is a finding too
            problems = [f"replay: {'cannot read every event' if damage else exc}"]
    integrity = "ok" if not damage else f"the ledger file is damaged ({len(damage)} findings)"
    if as_json:
        emit(
            {
                "ok": not problems and not damage,
                "integrity": integrity,
                "damage": damage,
                "problems": problems,
            }
        )
    else:
        for line in [*damage, *problems]:
            say(line)
        click.echo(
            f"integrity: {integrity}; replay: {'ok' if not problems else f'{len(problems)} differences'}"
        )
    if problems or damage:
        sys.exit(1)


@cli.command()
@options(plan=True, as_json=True)
@click.option(
    "--checks",
    "with_checks",
    is_flag=True,
    help="Also run the seeds' assumptions as checks and the draft-token sweep, against local stand-ins.",
)
def demo(plan: str | None, as_json: bool, with_checks: bool) -> None:
    """Load the todo calls the five seeds quote as two demo plans (PLAN and PLAN-qwen, default
    demo) and show them. Loaded once: a fresh copy goes into other plans (--plan NEW)."""
    from todoledger.demo import DEMO_PLAN, load_demo

    name = plan or DEMO_PLAN
    with ledger() as lg:
        loaded = load_demo(lg, plan=name)
        ran = None
        if with_checks:
            from todoledger.demo_checks import run_checks

            ran = run_checks(lg, plan=name)
        if as_json:
            emit(lg.show(name) | ({"checks": ran.receipts, "sweep": ran.sweep} if ran else {}))
            return
        from todoledger.cli import render

        if not loaded.created:
            say(f"(demo plans {', '.join(loaded.plans)} already loaded; --plan NEW loads a fresh copy)")
        for out in loaded.outcomes:
            for line in out.lines(lg):
                say(line)
        if loaded.review:
            say("after the session, the reviewer (cli:reviewer) adds, each item's notes citing its seed:")
            for line in loaded.review:
                say(f"  {line}")
        for shown in loaded.plans:
            click.echo()
            render.plan(lg.view(shown), None)
        if ran is not None:
            _show_demo_checks(ran, name)
        click.echo()
        say(f"ledger: {where(lg)}")
        click.echo(
            f"The story and its findings: todoledger report {name}   todoledger report {loaded.plans[-1]}"
        )


def _show_demo_checks(ran: Any, plan: str) -> None:
    from todoledger.core.sweep import lines, table
    from todoledger.core.verification import tail

    click.echo()
    say("The seeds' assumptions as checks, against local stand-ins:")
    for r in ran.receipts:
        last = next((ln for ln in reversed(r["output"].splitlines()) if ln.strip()), "")
        say(f"  {r['item']} {r['result']}: {r['spec']}: {tail(last, 200)}")
    click.echo()
    say("The reviewer's gates on what the seeds' agent claimed completed (see each item's notes):")
    for r in ran.claims:
        verdict = (
            "holds, but on a file the demo wrote: a stand-in, no proof of the seeds' claim"
            if r["result"] == "holds"
            else "refused: the gate does not hold"
        )
        say(f"  {r['item']} {r['content']}: {r['result']}: {r['spec']}: {verdict}")
    click.echo()
    say("The draft-token sweep, one stand-in server per combination (SIMULATED figures, labelled stand-in):")
    for line in ran.story:
        say(f"  {tail(line, 2000)}")
    click.echo()
    say(f"$ todoledger sweep results {ran.sweep['sweep']} --plan {plan}")
    for line in lines(table(ran.sweep["rows"])):
        say(line)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.option(
    "--gate-stop", is_flag=True, help="Block a stop while this session's completed items fail their gates."
)
def hook(agent: str, gate_stop: bool) -> None:
    """Hook entry for agents (reads the agent's hook JSON on stdin; never fails)."""
    from todoledger.hooks import run_hook

    sys.exit(run_hook([agent, "--gate-stop"] if gate_stop else [agent]))


@cli.command()
@click.option(
    "--team",
    "url",
    default=None,
    metavar="URL",
    help="A team's PostgreSQL ledger, named without a password: creates its schema and tables and"
    " writes the URL to .todoledger/config.toml.",
)
@click.option(
    "--test-clock",
    is_flag=True,
    help="For tests and generated docs: let TODOLEDGER_NOW fix this new ledger's clock (a ledger"
    " with history cannot be switched; every other ledger keeps the real clock).",
)
def init(url: str | None, test_clock: bool) -> None:
    """Create this project's ledger: a SQLite file in .todoledger/, or with --team URL a
    PostgreSQL schema that every agent, hook and terminal of the project then finds."""
    from pathlib import Path

    from todoledger.store.locate import CONFIG, DIRNAME, FILENAME, project_root

    root = Path(project_root(os.path.realpath(os.getcwd())))
    folder = root / DIRNAME
    if url is None:
        from todoledger.ledger import Ledger

        with Ledger(str(folder / FILENAME)) as lg:
            if test_clock:
                lg.start_test_clock()
            say(
                f"ledger: {lg.location}"
                + (" (test clock: TODOLEDGER_NOW fixes its time)" if test_clock else "")
            )
        return
    config = folder / CONFIG
    line = f"ledger = {json.dumps(url)}\n"
    if config.exists() and line not in config.read_text(encoding="utf-8", errors="replace"):
        raise click.ClickException(f"{config} exists already: edit it, or move it aside and run init again")
    from todoledger.ledger import Ledger
    from todoledger.store.locate import GITIGNORE

    location = Ledger.create_team(url)
    if test_clock:
        with Ledger(url) as lg:
            lg.start_test_clock()
    folder.mkdir(exist_ok=True)

    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(GITIGNORE, encoding="utf-8")
    config.write_text(
        "# The project's team ledger (todoledger init --team). No password here: PGPASSWORD,\n"
        "# ~/.pgpass or a service file give it (docs/team.md).\n" + line,
        encoding="utf-8",
    )
    say(f"ledger: {location} (schema ready)")
    say(
        f"setting: {config} (commit it: every agent, hook and terminal of the project finds the ledger there)"
    )


@cli.command()
def flush() -> None:
    """Replay the hook events kept while the ledger was unavailable, oldest first, each
    with its writer and time (an event applied before is skipped). Exits 1 while some
    still cannot be written."""
    from todoledger.hooks import replay
    from todoledger.store.locate import waiting

    done, refused, left = replay(None)
    folder = waiting(None)[1]
    say(f"{done} replayed, {refused} refused (see the hook log), {left} still waiting in {folder}")
    if left:
        sys.exit(1)
