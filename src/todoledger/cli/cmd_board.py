"""The plan as a schedule and the people over it: `path`, `next --parallel`,
`set`, `approve`, and `serve` (the board and MCP on one server).

The web and MCP stacks are imported inside `serve` only: `todoledger --help`
imports this module.
"""

from __future__ import annotations

from typing import Any

import click

from todoledger.cli.main import emit, ledger, options, passphrase_option, reader, say, writer_option, writes
from todoledger.cli.schedule_text import label as _label


@click.command()
@options(plan=True, as_json=True)
def path(plan: str | None, as_json: bool) -> None:
    """The critical path of the open work: the longest chain by estimate."""
    with reader() as lg:
        sched = lg.schedule(plan)
        rows = {r["id"]: r for r in lg.items(plan)}
    if as_json:
        emit(sched)
        return
    chain = sched["critical_path"]
    if not chain:
        say(f"plan {sched['plan']!r}: no open work")
        return
    unknown = [i for i in chain if i in sched["unestimated"]]
    note = f"; {len(unknown)} without an estimate count as 0" if unknown else ""
    say(f"critical path of {sched['plan']!r}: {sched['length'] or 'no estimates'} ({len(chain)} items{note})")
    for n, item_id in enumerate(chain, 1):
        say(f"  {n}. {_label(rows.get(item_id), item_id)}")


@click.command("set")
@writes
@click.argument("ref", metavar="ID")
@click.option("--estimate", default=None, help="How long it should take: 15m, 2h, 1h30m ('' clears).")
@click.option(
    "--uses", multiple=True, help="A resource it holds exclusively (repeatable; replaces the list)."
)
@click.option("--no-uses", is_flag=True, help="It holds no resource.")
@click.option("--force", is_flag=True, help="A person's override of another writer's lease (recorded).")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), default=None)
@click.option("--content", default=None, help="New wording.")
@click.option(
    "--needs-approval/--no-needs-approval",
    default=None,
    help="Whether a person must approve it before an agent starts it.",
)
def set_fields(
    ref: str,
    plan: str | None,
    writer: str | None,
    as_json: bool,
    estimate: str | None,
    uses: tuple[str, ...],
    no_uses: bool,
    priority: str | None,
    content: str | None,
    needs_approval: bool | None,
    force: bool = False,
) -> None:
    """Change an item's estimate, resources, priority, wording or approval gate."""
    fields: dict[str, Any] = {
        "estimate": estimate,
        "priority": priority,
        "content": content,
        "needs_approval": needs_approval,
        "uses": [] if no_uses else (list(uses) or None),
    }
    fields = {k: v for k, v in fields.items() if v is not None}
    if not fields:
        raise click.UsageError(
            "nothing to change: give --estimate, --uses, --priority, --content or --needs-approval"
        )
    with ledger() as lg:
        row = lg.update(ref, plan=plan, writer=writer, kind="set", force=force, **fields)
    if as_json:
        emit(row)
    else:
        from todoledger.cli import render

        render.changed(row)


@click.command()
@click.argument("ref", metavar="[ID]", required=False)
@click.option(
    "--plan",
    "plan",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[NAME]",
    help="Without ID: approve the plan as it stands (NAME, default: main). With ID: the item's plan.",
)
@click.option("--list", "listing", is_flag=True, help="Only list what waits for a person (with --plan NAME).")
@click.option(
    "--writer",
    "writer",
    default=None,
    callback=writer_option,
    help="Never a person: a person approves from a terminal, the board or TODOLEDGER_TOKEN.",
)
@click.option(
    "--task",
    "tasks",
    multiple=True,
    metavar="TASK",
    help="With ID: also let this agent's waiting task complete the item past a person's gate, as"
    " `todoledger approve` listed it (its whole id; repeatable). Without it, no such task is let"
    " through.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@passphrase_option
def approve(
    ref: str | None,
    plan: str | None,
    listing: bool,
    writer: str | None,
    tasks: tuple[str, ...],
    as_json: bool,
) -> None:
    """Approve an item (an agent may then start it); `--plan` approves the plan
    as it stands; with neither, list what waits for a person, with the diff.
    An agent's completion forced past a person's gate goes through only with
    `--task`, naming the waiting task that the list showed."""
    name = plan or None
    if tasks and (not ref or listing):
        raise click.UsageError("--task names a task that an item's approval lets through: give the item's ID")
    if ref and not listing:
        with ledger() as lg:
            row = lg.approve(ref, plan=name, writer=writer, tasks=list(tasks) or None)
            waits = lg.gate_waits(name, row["id"])
        let = {e["task"] for e in row["lets_through"]}
        if as_json:
            emit(row | {"still_waiting": [w for w in waits if w["task"] not in let]})
            return
        say(f"approved {row['id']} {row['content']!r} by {row['by']}")
        for e in row["lets_through"]:  # what this approval consents to, as named
            args = e["arguments"]
            say(
                f"  this lets task {e['task'][:8]} of {e['writer']} complete it past a person's gate,"
                f" on its reason {args.get('reason')!r}{_also(args)}"
            )
        for w in waits:
            if w["task"] not in let:
                say(
                    f"  {_forcing(w)} still waits: todoledger approve {w['item']} --task {w['task']} lets it through"
                )
        return
    if plan is not None and not listing:
        with ledger() as lg:
            done = lg.approve_plan(name, writer=writer)
        emit(done) if as_json else say(
            f"approved plan {done['plan']!r} as it stands ({done['items']} items,"
            f" {done['hash'][:12]}) by {done['by']}"
        )
        return
    with reader() as lg:
        state = lg.approvals(name)
        rows = {r["id"]: r for r in lg.items(name)}
        forcing = lg.gate_waits(name)
    if as_json:
        emit(state | {"forcing": forcing})
        return
    standing = state["plan"]
    if standing["by"] is None:
        say("the plan was never approved (todoledger approve --plan)")
    elif standing["approved"]:
        say(f"the plan is approved as it stands (by {standing['by']} at {standing['at']})")
    else:
        say(f"the plan changed since {standing['by']} approved it at {standing['at']}:")
        for change in standing["diff"]:
            say("  " + _change_line(change))
    for item_id in state["waiting"]:
        say(f"waits for a person: {_label(rows.get(item_id), item_id)}")
        for d in state["items"][item_id]["diff"]:
            say(f"    {d['field']}: approved {d['approved']!r}, now {d['now']!r}")
    for w in forcing:
        say(
            f"waits for a person: {_label(rows.get(w['item']), w['item'])}: {_forcing(w)}"
            f" (todoledger approve {w['item']} --task {w['task']} lets it through)"
        )
    if not state["waiting"] and not forcing:
        say("no item waits for a person")


def _forcing(wait: dict[str, Any]) -> str:
    """A waiting forced completion, as the person is shown it before they let it through."""
    return (
        f"task {wait['task'][:8]} of {wait['writer']} would complete it past {wait['gate_by']}'s gate"
        f" {wait['gate']}, on its reason {wait['reason']!r}{_also(wait['changes'])}"
    )


def _also(args: dict[str, Any]) -> str:
    """What else a forced completion's task would change with it (shown as it is)."""
    from todoledger.ledger.tasks import NOT_CHANGES

    changes = {k: v for k, v in sorted(args.items()) if k not in NOT_CHANGES and v is not None}
    return "; it also sets " + ", ".join(f"{k}={v!r}" for k, v in changes.items()) if changes else ""


@click.group()
def token() -> None:
    """The tokens the command line believes (TODOLEDGER_TOKEN), registered in the
    ledger by a person: `add` prints a new token once, `list` shows them (no
    secrets), `remove` takes one back. A tokens file is never read here: the
    agent's environment names it, so the agent could write its own; `hash-file`
    only hashes one in place for `serve --tokens`."""


@token.command("add")
@click.argument("name")
@click.option(
    "--agent", "agent", is_flag=True, help="An agent's token (identity agent:NAME), not a person's."
)
@click.option(
    "--token",
    "given",
    default=None,
    help="Register this secret (16 characters or more, e.g. one of serve's tokens file) instead of a new one.",
)
@click.option(
    "--writer", "writer", default=None, callback=writer_option, help="Never a person: a person adds tokens."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@passphrase_option
def token_add(name: str, agent: bool, given: str | None, writer: str | None, as_json: bool) -> None:
    """A person registers a token for NAME: the secret is printed once; the ledger keeps its hash."""
    with ledger() as lg:
        row = lg.add_token(name, agent=agent, token=given, writer=writer)
    if as_json:
        emit(row)
        return
    say(f"token {row['id']} for {row['name']} ({row['role']}): {row['token']}")
    say(
        "it is shown only now; give it with TODOLEDGER_TOKEN (the command line) or Authorization: Bearer (serve)"
    )


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def token_list(as_json: bool) -> None:
    """The registered tokens: id, holder, role, who added it and when."""
    with reader() as lg:
        rows = lg.tokens()
    if as_json:
        emit(rows)
        return
    for r in rows:
        say(f"{r['id']}  {r['name']}  {r['role']}  added by {r['added_by']} at {r['at']}")
    if not rows:
        say("no tokens registered (todoledger token add NAME)")


@token.command("remove")
@click.argument("ref", metavar="ID|NAME")
@click.option(
    "--writer",
    "writer",
    default=None,
    callback=writer_option,
    help="Never a person: a person removes tokens.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@passphrase_option
def token_remove(ref: str, writer: str | None, as_json: bool) -> None:
    """A person removes a token (its id) or every token of a holder (its name)."""
    with ledger() as lg:
        rows = lg.remove_token(ref, writer=writer)
    if as_json:
        emit(rows)
        return
    for r in rows:
        say(f"removed token {r['id']} of {r['name']} ({r['role']})")


@token.command("hash-file")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
def token_hash_file(path: str) -> None:
    """Replace each token in plain text in a `serve --tokens` FILE by its SHA-256
    (`sha256:HASH IDENTITY [ROLE]`), in place: reading the file then gives
    nothing to log in with. The holders keep their tokens; serve checks them
    against the hashes. Hashed lines and comments are kept as they are."""
    from todoledger.tokens import hash_file

    replaced = hash_file(path)  # a bad file: one line (the group's LedgerError), never a token
    if replaced:
        say(f"{path}: {replaced} token(s) hashed in place; the file no longer holds a token to log in with")
    else:
        say(f"{path}: every token is hashed already (nothing was changed)")


def _change_line(change: dict[str, Any]) -> str:
    if change["change"] == "reordered":
        return "order changed"
    if change["change"] == "changed":
        fields = "; ".join(f"{f['field']}: {f['approved']!r} -> {f['now']!r}" for f in change["fields"])
        return f"changed {change['item']} {change['content']!r}: {fields}"
    return f"{change['change']} {change['item']} {change['content']!r}"


@click.command()
@click.option("--plan", "plan", envvar="TODOLEDGER_PLAN", default=None, help="Default plan (default: main).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="TODOLEDGER_TOKEN",
    default=None,
    help="Token every request must carry (bearer header, or the board asks once); required off"
    " loopback, where its holders write as agent:token (people get their own with --tokens)."
    " At least 32 hex or 22 base64url characters (128 bits).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="Another name clients use to reach this server (Host/Origin check; repeatable).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the board in the browser.")
@click.option("--name", default=None, help="Who writes from the board: web:<name> (default: your user name).")
@click.option(
    "--tokens",
    "tokens_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="File of `sha256:HASH IDENTITY [person|agent]` lines (hashes only: `todoledger token hash-file"
    " FILE` converts plain tokens): each token's writes (board and MCP) carry its person or agent, and"
    " only a person's token approves (docs/tokens.md).",
)
@click.option(
    "--allow-checks",
    is_flag=True,
    help="Run trusted checks (gates of done, plan_verify, the board); without it this server runs none.",
)
@click.option(
    "--pool-size",
    type=click.IntRange(1, 1000),
    default=None,
    help="PostgreSQL ledger: connections this server opens at most, so calls run side by side"
    " (default: TODOLEDGER_POOL_SIZE, else 10). A SQLite ledger has one; calls take turns.",
)
def serve(
    plan: str | None,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    open_browser: bool,
    name: str | None,
    tokens_file: str | None,
    allow_checks: bool,
    pool_size: int | None,
) -> None:
    """Serve the board (/) and MCP (/mcp) on one server, over the project's ledger.

    Who started it decides whether a person is behind it: from a plain
    terminal, or with TODOLEDGER_TOKEN set to a person's registered token, its
    tokenless board and its tokens file are that person's; from an agent's shell
    or without a terminal, nobody there is a person but the holders of tokens a
    person registered (`todoledger token add`)."""
    import sys

    from todoledger.ledger.shared import SharedLedger
    from todoledger.mcp.http import serve as serve_http
    from todoledger.tokens import load_tokens
    from todoledger.web.app import Board

    shared = SharedLedger(pool_size=pool_size)  # the board's and MCP's calls share its connections
    token, starter = _starter(click.get_current_context(), token or None, shared)
    identities = load_tokens(tokens_file) if tokens_file else None
    board = Board(
        plan=plan,
        token=token,
        name=name,
        allow_checks=allow_checks,
        shared=shared,
        identities=identities,
        starter=starter,
    )

    def started(base: str) -> None:
        print(f"todoledger: board on {base}/", file=sys.stderr, flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(f"{base}/")

    try:
        serve_http(
            host=host,
            port=port,
            token=token,
            plan=plan,
            allow_hosts=allow_hosts,
            identities=identities,
            allow_checks=allow_checks,
            routes=board.routes(),
            started=started,
            shared=shared,
            starter=starter,
        )
    finally:
        board.close()


def _starter(ctx: click.Context, token: str | None, shared: Any) -> tuple[str | None, str | None]:
    """(the single token, who started the server unless a person did). A
    TODOLEDGER_TOKEN that a person registered in the ledger says who starts the
    server (it is no shared --token then); otherwise the route does, as for
    every command: a terminal without an agent's marker above it is a person."""
    import os

    from todoledger.core.approval import is_person
    from todoledger.identity import local_writer

    from_env = ctx.get_parameter_source("token") == click.core.ParameterSource.ENVIRONMENT
    given = os.environ.get("TODOLEDGER_TOKEN") or ""
    holder = shared.token_holder(given) if given else None
    if holder is not None:
        starter = f"cli:{holder.name}" if holder.person else f"{holder.name}@cli"
        token = None if from_env else token
    else:
        starter = local_writer()
    return token, (None if is_person(starter) else starter)
