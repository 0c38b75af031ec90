"""A command line's refused write, told to the person (issue 31).

Every write a command line is refused (a lint error, a lease fence, an identity
refusal, an item that is not there) is recorded in the plan's story as a
`refused` op with its writer and reason (`Ledger.record_refusal`): nothing else
changes, and the caller reads the same one line. Reads are not recorded. Plain
Python (no click): the lean verbs call it too.
"""

from __future__ import annotations

import os

# The verbs that change a plan; a refusal of any other is not a refused write.
WRITE_VERBS = frozenset(
    {
        "add", "start", "done", "cancel", "restore", "update", "write", "dep", "undo", "claim",
        "check", "gate", "metric", "verify", "approve", "accept-metric", "release", "sweep", "import",
    }
)  # fmt: skip


def _option(args: list[str], name: str) -> str | None:
    for n, arg in enumerate(args):
        if arg == f"--{name}" and n + 1 < len(args):
            return args[n + 1]
        if arg.startswith(f"--{name}="):
            return arg.partition("=")[2]
    return None


def note(args: list[str], reason: str) -> None:
    """Record the refusal of the command line `args` (verb first); never raises."""
    if not args or args[0] not in WRITE_VERBS:
        return
    try:
        from todoledger import Ledger
        from todoledger.core.model import LedgerError
        from todoledger.identity import cli_writer, local_writer, os_user
        from todoledger.ledger import new_key

        plan = _option(args, "plan") or os.environ.get("TODOLEDGER_PLAN") or None
        given = _option(args, "writer")
        line = f"{args[0]}: {reason}"
        with Ledger(key=new_key("cli")) as lg:
            try:
                lg.record_refusal(line, plan=plan, writer=cli_writer(given) if given else None)
            except LedgerError:  # the writer itself was refused (a bad token, a person's name)
                try:
                    writer = local_writer()
                except LedgerError:
                    writer = f"script:{os_user() or 'unknown'}"
                lg.record_refusal(line, plan=plan, writer=writer)
    except Exception:  # no ledger here, a plan that does not exist: the error line is what counts
        pass
