"""The verbs an agent calls through its shell, without click or rich.

`show`, `next`, `add`, `start`, `done`, `write` and `prime` run here, on a
pipe (as an agent calls them) and on a terminal alike: the start-up of click
and rich would cost more than the work. On a terminal their output is drawn
with plain ANSI codes (`cli/render_term.py`), never rich.
Each does exactly what its click command in `cli/main.py` does, with the
same output and the same one-line errors (tests/test_lean.py runs both).
Anything this parser does not take as certain (an unknown or malformed
option, `--help`, a value click would refuse) returns None, and the click
command runs instead and says what is wrong.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` itself costs start-up (see bench/bench_agents.py): only for the checker
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Options = dict[str, Any]

# verb -> (flags, options taking a value, repeatable options, positional arguments: (min, max))
SPECS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str], tuple[int, int]]] = {
    "show": (frozenset({"json", "all", "no-pager"}), frozenset({"plan", "writer"}), frozenset(), (0, 0)),
    "next": (frozenset({"json", "claim"}), frozenset({"plan", "writer", "limit"}), frozenset(), (0, 0)),
    "start": (frozenset({"json", "force"}), frozenset({"plan", "writer"}), frozenset(), (1, 1)),
    "done": (
        frozenset({"json", "force"}),
        frozenset({"plan", "writer", "evidence", "reason"}),
        frozenset({"metric"}),
        (1, 1),
    ),
    "add": (
        frozenset({"json"}),
        frozenset({"plan", "writer", "parent", "after", "priority"}),
        frozenset({"depends-on"}),
        (1, 1),
    ),
    "write": (frozenset({"json"}), frozenset({"plan", "writer", "dialect"}), frozenset(), (0, 1)),
    "prime": (frozenset({"json"}), frozenset({"plan"}), frozenset(), (0, 0)),
}
VERBS = frozenset(SPECS)
# What an absent option or argument means, as in the click command (an absent flag: false).
DEFAULTS: dict[str, dict[str, object]] = {"next": {"limit": 5}, "write": {"source": "-", "dialect": "auto"}}
# The values click would refuse, left to it (`_valid`): its choices and ranges, as in cli/main.py.
PRIORITIES = ("high", "medium", "low")
LIMIT_RANGE = (1, 1000)


def run(args: list[str], *, console: bool = False) -> int | None:
    """Run the verb in `args`; None when the click command must take it.
    `console`: the process ends with `os._exit` once this returns (see `_Opened`)."""
    global KEEP_OPEN
    parsed = parse(args)
    if parsed is None:
        return None
    verb, opts, positional = parsed
    if not _valid(verb, opts):
        return None
    if "plan" not in opts and os.environ.get("TODOLEDGER_PLAN"):
        opts["plan"] = os.environ["TODOLEDGER_PLAN"]  # click's envvar for --plan
    from todoledger.core.model import LedgerError

    KEEP_OPEN = console
    try:
        if opts.get("writer"):  # a writer, never a person (todoledger.identity), as click's callback
            from todoledger.identity import cli_writer

            opts["writer"] = cli_writer(opts["writer"])
        VERB_RUNNERS[verb](opts, positional)
    except LedgerError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        from todoledger.cli.refusals import note

        note(args, str(exc))
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # as the click group says it: one line, never a traceback
        if os.environ.get("TODOLEDGER_DEBUG"):
            raise
        sys.stderr.write(
            f"Error: internal error: {type(exc).__name__}: {exc} (set TODOLEDGER_DEBUG=1 for details)\n"
        )
        return 1
    return 0


def parse(args: list[str]) -> tuple[str, Options, list[str]] | None:
    if not args or args[0] not in SPECS:
        return None
    verb, rest = args[0], list(args[1:])
    flags, valued, repeated, (low, high) = SPECS[verb]
    opts: Options = {}
    positional: list[str] = []
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            positional += rest
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in flags and not eq:
                opts[name] = True
            elif name in valued or name in repeated:
                if not eq:
                    if not rest:
                        return None
                    value = rest.pop(0)
                if name in repeated:
                    opts.setdefault(name, []).append(value)
                else:
                    opts[name] = value
            else:
                return None  # --help, a typo, an option of another verb: click says it
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            positional.append(arg)
    if not low <= len(positional) <= high:
        return None
    return verb, opts, positional


def _valid(verb: str, opts: Options) -> bool:
    """Values click would refuse are left to click, for its message."""
    if "limit" in opts:
        try:
            limit = int(opts["limit"])
        except ValueError:
            return False
        if not LIMIT_RANGE[0] <= limit <= LIMIT_RANGE[1]:
            return False
        opts["limit"] = limit
    if opts.get("priority") is not None and opts["priority"] not in PRIORITIES:
        return False
    if "dialect" in opts:
        from todoledger.agents import DIALECTS

        if opts["dialect"] not in ("auto", *DIALECTS):
            return False
    return True


# -- the verbs: each as its click command in cli/main.py -------------------------------


def _emit(data: Any) -> None:
    from todoledger.cli.jsonout import dumps

    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()


# Set by the console script (`cli/entry.py`), whose process ends with `os._exit`
# as soon as the verb's output is out.
KEEP_OPEN = False


class _Opened:
    """The ledger for one verb, closed at the end of the `with` block, except
    in the console script: closing SQLite's last connection checkpoints the
    WAL into the database and deletes it (three fsyncs), and the next call's
    first commit creates it again (one more, of the folder), which made a
    write verb wait for five fsyncs instead of the one of its commit. The
    commit is synced before the verb answers (synchronous=FULL), so what it
    wrote is durable either way; the next process reads the WAL as SQLite
    does after any process that ended without closing, and a later commit
    checkpoints it once it is long (wal_autocheckpoint)."""

    def __init__(self, create: bool) -> None:
        from todoledger.ledger import Ledger, new_key

        # lean: psycopg's import would cost more than the call; the key: made before the first attempt
        self.ledger = Ledger(create=create, lean=True, key=new_key("cli"))
        self.ledger.sign_with(_unlock)  # called only where a signed ledger needs a person's signature

    def __enter__(self) -> Any:
        return self.ledger

    def __exit__(self, *exc: object) -> None:
        if not KEEP_OPEN:
            self.ledger.close()


def _ledger(create: bool = True) -> _Opened:
    return _Opened(create)


def _show(opts: Options, _: list[str]) -> None:
    plan, writer = opts.get("plan"), opts.get("writer")
    with _ledger(create=False) as lg:
        if opts.get("json"):
            if sys.stdout.isatty():
                _emit(lg.show(plan, writer=writer))  # indented, for a person
            else:  # the same text as _emit(lg.show(...)), without building the dicts
                sys.stdout.write(lg.show_json(plan, writer=writer) + "\n")
                sys.stdout.flush()
            return
        from todoledger.cli import render

        where = lg.location if lg.exists else f"{lg.location} (not created yet: the first write creates it)"
        view = lg.view(plan, writer=writer)
        # On a terminal (a person reading), the line about person keys: signed or not, a recent reset.
        people = lg.people()["line"] if lg.exists and sys.stdout.isatty() else None
    render.plan(
        view,
        where,
        show_all=bool(opts.get("all")),
        pager=not opts.get("no-pager"),
        people=people,
    )
    from todoledger.store.locate import spooled_line

    if (line := spooled_line(None)) is not None:
        sys.stderr.write(line + "\n")


def _next(opts: Options, _: list[str]) -> None:
    plan, writer, claim = opts.get("plan"), opts.get("writer"), bool(opts.get("claim"))
    with _ledger(create=claim) as lg:
        rows = lg.next(plan, limit=opts.get("limit", DEFAULTS["next"]["limit"]), claim=claim, writer=writer)
        stranded = [] if opts.get("json") else lg.stranded(plan)
    if opts.get("json"):
        _emit(rows)
        return
    from todoledger.cli import render

    render.items(rows, title="claimed" if claim else "ready", empty="nothing is ready")
    for row in rows if claim else []:  # as `next_cmd` in cli/main.py says it
        sys.stdout.write(
            f"lease token {row['token']}, until {row['lease_expires']}: pass --token to your updates, with"
            f" TODOLEDGER_LEASE_SECRET={row['lease_secret']} (yours only: it proves you hold the lease)\n"
        )
    if stranded:
        render.stranded(stranded)


def _change(opts: Options, positional: list[str], verb: str) -> None:
    """`start` / `done`: one item's status, as `_item_command` in cli/main.py."""
    kw: dict[str, Any] = {
        "plan": opts.get("plan"),
        "writer": opts.get("writer"),
        "force": bool(opts.get("force")),
    }
    with _ledger() as lg:
        if verb == "done" and not opts.get("metric") and opts.get("reason") is None:
            # done_command without metrics or a reason, without importing the checks' service
            row = lg.done(positional[0], evidence=opts.get("evidence"), **kw)
        elif verb == "done":
            from todoledger.ledger.verify import done_command

            row = done_command(
                lg,
                positional[0],
                evidence=opts.get("evidence"),
                metric=tuple(opts.get("metric", ())),
                reason=opts.get("reason"),
                **kw,
            )
        else:
            row = lg.start(positional[0], **kw)
    if opts.get("json"):
        _emit(row)
        return
    from todoledger.cli import render

    render.changed(row, None)


def _add(opts: Options, positional: list[str]) -> None:
    with _ledger() as lg:
        row = lg.add(
            positional[0],
            plan=opts.get("plan"),
            writer=opts.get("writer"),
            parent=opts.get("parent"),
            after=opts.get("after"),
            priority=opts.get("priority"),
            depends_on=tuple(opts.get("depends-on", ())),
        )
    if opts.get("json"):
        _emit(row)
        return
    from todoledger.cli import render

    render.changed(row, "added")


def _write(opts: Options, positional: list[str]) -> None:
    from todoledger.cli.payload import read_payload

    default = DEFAULTS["write"]
    data = read_payload(positional[0] if positional else str(default["source"]))
    with _ledger() as lg:
        result = lg.write(
            data,
            plan=opts.get("plan"),
            writer=opts.get("writer"),
            dialect=opts.get("dialect", default["dialect"]),
        )
    if opts.get("json"):
        _emit(result.as_dict())
        return
    from todoledger.cli import render

    render.write_result(result.as_dict())


def _prime(opts: Options, _: list[str]) -> None:
    plan = opts.get("plan")
    with _ledger(create=False) as lg:
        text = lg.prime(plan)
    if opts.get("json"):
        _emit({"plan": plan or os.environ.get("TODOLEDGER_PLAN") or "main", "text": text})
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


VERB_RUNNERS: dict[str, Callable[[Options, list[str]], None]] = {
    "show": _show,
    "next": _next,
    "start": lambda opts, positional: _change(opts, positional, "start"),
    "done": lambda opts, positional: _change(opts, positional, "done"),
    "add": _add,
    "write": _write,
    "prime": _prime,
}


def _unlock(registered: set[str]) -> Any:
    """A person's key, unlocked at their terminal (`cli/signing.py`): loaded only when asked."""
    from todoledger.cli.signing import unlock_registered

    return unlock_registered(registered)
