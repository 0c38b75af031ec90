"""Console entry point.

Two paths skip click and rich entirely, because agents call them often and
their start-up is the cost: `todoledger hook ...` and `todoledger show --json`
(with at most --plan/--writer). Everything else goes through click.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        from todoledger.hooks import run_hook

        sys.exit(run_hook(args[1:]))
    refused = _bad_argument(args)
    if refused:
        sys.stderr.write(f"Error: {refused}\n")
        sys.exit(2)
    if args and args[0] == "show" and "--json" in args:
        options = _lean_options(args[1:])
        if options is not None:
            sys.exit(_show_json(**options))
    if args and args[0] == "done" and not sys.stdout.isatty():
        done = _lean_done(args[1:])
        if done is not None:
            sys.exit(_done(**done))
    from todoledger.cli.main import cli

    cli.main(args, prog_name="todoledger")


_DONE_VALUES = ("--evidence", "--metric", "--reason", "--plan", "--writer")


def _lean_done(args: list[str]) -> dict[str, Any] | None:
    """`done ID` with its options, as agents call it in a pipe: its gate runs on
    the start-up budget of a hook, so it skips click. Anything else: None."""
    options: dict[str, Any] = {"ref": None, "metric": [], "force": False, "as_json": False}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if arg == "--json" or arg == "--force":
            options["as_json" if arg == "--json" else "force"] = True
        elif name in _DONE_VALUES:
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if name == "--metric":
                options["metric"].append(value)
            else:
                options[name[2:]] = value
        elif arg.startswith("-") or options["ref"] is not None:
            return None
        else:
            options["ref"] = arg
    return options if options["ref"] is not None else None


def _done(ref: str, as_json: bool, **kw: Any) -> int:
    from todoledger.core.model import LedgerError
    from todoledger.service import Ledger
    from todoledger.verification import done_command

    try:
        with Ledger() as ledger:
            row = done_command(ledger, ref, **kw)
    except LedgerError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1
    if as_json:
        from todoledger.cli.jsonout import dumps

        sys.stdout.write(dumps(row) + "\n")
    else:
        from todoledger.cli import render_plain  # the lean path runs only in a pipe

        render_plain.changed(row)
    return 0


def _bad_argument(args: list[str]) -> str | None:
    """Arguments that are not UTF-8 reach Python as lone surrogates, which no
    text field can store: refused here, before any command runs."""
    if all(a.isascii() for a in args):
        return None
    from todoledger.core.unicode import bad_text

    for n, arg in enumerate(args, 1):
        why = bad_text(arg)
        if why is not None:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return f"argument {n} ({shown[:60]}) {why}: nothing was done"
    return None


def _lean_options(args: list[str]) -> dict[str, str | None] | None:
    """--json plus optional --plan/--writer; anything else takes the full CLI."""
    options: dict[str, str | None] = {"plan": None, "writer": None}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            continue
        name, eq, value = arg.partition("=")
        if name in ("--plan", "--writer"):
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            options[name[2:]] = value
        else:
            return None
    return options


def _show_json(plan: str | None, writer: str | None) -> int:
    from todoledger.cli.jsonout import dumps
    from todoledger.core.model import LedgerError
    from todoledger.service import Ledger, default_plan

    try:
        with Ledger(create=writer is not None) as ledger:
            view = ledger.show(plan or default_plan(), writer=writer)
    except LedgerError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1
    sys.stdout.write(dumps(view) + "\n")
    return 0


if __name__ == "__main__":
    main()
