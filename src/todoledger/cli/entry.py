"""Console entry point.

Two paths skip click and rich entirely, because agents call them often and
their start-up is the cost: `todoledger hook ...`, and the verbs an agent
calls through its shell (`show`, `next`, `add`, `start`, `done`, `write`,
`prime`), on a pipe or a terminal (`todoledger.cli.lean`).
`todoledger mcp [--plan NAME]` goes straight to the server, without the
command group, and answers its start and the hot tools before the SDK is
imported (`todoledger.mcp.lean`): an agent waits for its tools on the first turn
(bench/bench_mcp.py).
Everything else goes through click.
"""

from __future__ import annotations

import os
import sys

# As in todoledger.cli.lean, without importing it for the other commands.
LEAN_VERBS = frozenset({"show", "next", "add", "start", "done", "write", "prime"})


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    _real_clock_for_agents()
    if args and args[0] == "hook":
        if argv is None:
            # A hook is a process of some tens of milliseconds, bounded by its payload limit and its
            # 2 s deadline: the cyclic collector would only run during its imports (eight or
            # nine passes, about 1.5 ms of it). Reference counting frees the rest as before.
            import gc

            gc.disable()
        if args[2:3] == ["--screen"]:  # before every shell command: the leanest path (todoledger.screen)
            from todoledger.screen import run as screen

            _exit(screen(args[1]), argv is None)
        from todoledger.hooks import run_hook

        _exit(run_hook(args[1:], console=argv is None), argv is None)
    refused = _bad_argument(args)
    if refused:
        sys.stderr.write(f"Error: {refused}\n")
        sys.exit(2)
    if args and args[0] == "mcp":
        plan = _mcp_plan(args[1:])
        if not isinstance(plan, bool):
            plan = plan if plan is not None else os.environ.get("TODOLEDGER_PLAN") or None
            if os.environ.get("TODOLEDGER_MCP_PATH") == "sdk":  # the reference path, whole (tests, bench)
                from todoledger.mcp.server import run_stdio

                run_stdio(plan=plan)
            else:  # the start and the hot tools before the SDK; the rest handed on to it (mcp/lean.py)
                from todoledger.mcp.lean import serve

                serve(plan)
            # The session is over and the ledger closed: tearing the SDK's thousands of
            # objects down one by one would only delay the agent, or doctor, waiting on the exit.
            _exit(0, argv is None)
            return
    if args and args[0] in LEAN_VERBS:
        from todoledger.cli.lean import run

        code = run(args, console=argv is None)
        if code is not None:
            _panel(args)
            _exit(code, argv is None)
    from todoledger.cli.main import cli

    try:
        cli.main(args, prog_name="todoledger")
    finally:
        _panel(args)


# Verbs that never write a plan: no panel sync after them.
READ_ONLY = frozenset(
    {
        "show",
        "prime",
        "history",
        "log",
        "ops",
        "export",
        "check",
        "doctor",
        "install",
        "uninstall",
        "board",
        "serve",
        "watch",
        "report",
        "where",
        "plans",
        "schedule",
        "--help",
        "-h",
        "--version",
    }
)


def _panel(args: list[str]) -> None:
    """After a verb that may have written a plan: Claude Code's task panel, where
    `install claude-code --panel` set one up for this project (todoledger.panel)."""
    if not args or args[0] in READ_ONLY or (args[0] == "next" and "--claim" not in args):
        return
    if not os.path.isdir(os.path.join(os.path.expanduser("~"), ".local", "state", "todoledger", "panels")):
        return  # no panel on this machine (todoledger.panel.any_installed): nothing imported
    from todoledger.panel import target

    where = target()
    if where is None:
        return
    from todoledger.ledger import Ledger
    from todoledger.panel.sync import sync

    try:
        with Ledger(create=False, lean=True) as lg:
            sync(lg, where)
    except Exception:  # a view: the verb's own answer stands
        pass


def _real_clock_for_agents() -> None:
    """TODOLEDGER_NOW fixes the clock for tests and the README generator. In an
    agent's shell it would let the agent date its own writes: a time to come
    makes every other writer's lease look lapsed (the fence compares the
    write's time) and puts a false time in the history. There the real clock
    stands. (Only this process's own markers are read: a test suite run from
    an agent's shell keeps its clock; `env -u` of the marker is not caught.)"""
    if "TODOLEDGER_NOW" not in os.environ:
        return
    from todoledger.identity import agent_marker

    if agent_marker() is not None:
        del os.environ["TODOLEDGER_NOW"]


def _mcp_plan(rest: list[str]) -> str | bool | None:
    """`--plan NAME` of `todoledger mcp`, None without it; False for anything else
    (`--help`, a typo): click then says what it says."""
    if not rest:
        return None
    if len(rest) == 2 and rest[0] == "--plan" and rest[1] and not rest[1].startswith("-"):
        return rest[1]
    if len(rest) == 1 and rest[0].startswith("--plan=") and len(rest[0]) > len("--plan="):
        return rest[0].removeprefix("--plan=")
    return False


def _exit(code: int, console: bool) -> None:
    """Run from the console script, a lean command is finished once its output is
    flushed: tearing the interpreter down (freeing every module and object one by
    one) would cost a good part of the command again (see bench/bench_agents.py).
    Nothing registers exit handlers
    on these paths, and what a verb wrote is committed. Called as a function (tests),
    or when the flush fails (a closed pipe), it exits as usual. A lean verb
    leaves its ledger open for this exit (`cli/lean.py`, `_Opened`)."""
    if console:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass
        else:
            os._exit(code)
    sys.exit(code)


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


if __name__ == "__main__":
    main()
