"""Checks from the command line: assume, gate, verify, trust, metrics."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from todoledger.cli.main import emit, ledger, options, passphrase_option, reader, writes
from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.core.verification import CheckRow, Receipt

F = TypeVar("F", bound=Callable[..., Any])


def check_options(func: F) -> F:
    """The options a check spec may carry (see `todoledger.core.checkspec`)."""
    for option in reversed(
        [
            click.option(
                "--expect", default=None, help="cmd:/http: a regular expression the output must match."
            ),
            click.option(
                "--status", type=int, default=None, help="http: the exact status wanted (default: any 2xx)."
            ),
            click.option(
                "--timeout", type=float, default=None, help="Seconds before the check fails (default 60)."
            ),
            click.option("--nonempty", is_flag=True, default=None, help="file: must not be empty."),
            click.option("--newer", is_flag=True, default=None, help="file: written after the item started."),
            click.option("--baseline", default=None, help="metric: the item whose value `baseline` means."),
            click.option(
                "--max-age",
                "max_age",
                default=None,
                help="How long a passing receipt stands (90s, 10m, 2h; http and port default to 10m).",
            ),
            click.option(
                "--accept",
                "accept",
                type=click.Choice(["cross-checked"]),
                default=None,
                help="What waits on the item may start on another agent's passing check too (it still"
                " reads cross-checked; by default only verified opens it).",
            ),
            click.option(
                "--watch",
                "watch",
                multiple=True,
                help="A path whose change makes receipts stale (repeatable).",
            ),
        ]
    ):
        func = option(func)
    return func


def _options(kw: dict[str, Any]) -> dict[str, Any]:
    names = ("expect", "status", "timeout", "nonempty", "newer", "baseline", "watch", "max_age", "accept")
    out = {n: kw.pop(n, None) for n in names}
    out["watch"] = list(out["watch"] or []) or None
    if out["max_age"] is not None:
        from todoledger.core.checkspec import parse_age

        try:
            out["max_age"] = parse_age(out["max_age"])
        except ValueError:
            raise LedgerError(f"--max-age {out['max_age']!r}: write seconds or 90s, 10m, 2h, 1d") from None
    return {k: v for k, v in out.items() if v is not None}


def _clean(text: str) -> str:
    from todoledger.core.verification import tail

    return tail(text, 10_000)


@click.command()
@writes
@click.argument("text")
@click.option(
    "--check", "spec", default=None, help="The check that makes it hold (cmd:, http://, port:, disk:, file:)."
)
@click.option("--for", "for_", multiple=True, help="An item that waits for this assumption (repeatable).")
@check_options
def assume(
    text: str,
    spec: str | None,
    for_: tuple[str, ...],
    plan: str | None,
    writer: str | None,
    as_json: bool,
    **kw: Any,
) -> None:
    """Record an assumption: an item that holds when its check passes."""
    from todoledger.ledger.verify import assume as record_assumption

    options = _options(kw)
    if options and spec is None:
        raise LedgerError("check options need --check SPEC")
    with ledger() as lg:
        row = record_assumption(lg, text, check=spec, options=options, for_=for_, plan=plan, writer=writer)
    if as_json:
        emit(row)
        return
    check = f" (check {row['check']['id']}: {row['check']['spec']})" if row["check"] else " (no check yet)"
    waits = f"; {', '.join(row['for'])} wait for it" if row["for"] else ""
    click.echo(f"assumption {row['id']}: {_clean(row['content'])}{check}{waits}")


@click.group()
def gate() -> None:
    """Completion gates: checks an item must pass before it is completed."""


@gate.command("add")
@writes
@click.argument("ref", metavar="ID")
@click.argument("spec", metavar="SPEC")
@check_options
@passphrase_option
@click.option(
    "--stand-in",
    "stand_in",
    is_flag=True,
    help="SPEC runs against a stand-in (a local server, a simulation): its passing reads stand-in, never"
    " proof, until a person runs `gate real`.",
)
def gate_add(
    ref: str, spec: str, plan: str | None, writer: str | None, as_json: bool, stand_in: bool, **kw: Any
) -> None:
    """Give item ID a gate: `done` runs SPEC and refuses while it fails. The gate
    `approval` instead makes the item wait for a person's approval."""

    with ledger() as lg:
        if spec == "approval":
            item = lg.update(ref, plan=plan, writer=writer, kind="gate", needs_approval=True)
            emit(item) if as_json else click.echo(f"{item['id']} now waits for a person's approval")
            return
        row = lg.add_check(ref, spec, options=_options(kw), plan=plan, writer=writer, stand_in=stand_in)
    said = " (a stand-in: never proof)" if stand_in else ""
    emit(row) if as_json else click.echo(f"gate {row['id']} on {row['item']}: {row['spec']}{said}")


@gate.command("real")
@writes
@click.argument("check_id", metavar="CHECK")
def gate_real(check_id: str, plan: str | None, writer: str | None, as_json: bool) -> None:
    """A person says CHECK runs against the real thing: its stand-in mark goes."""

    with ledger() as lg:
        row = lg.clear_stand_in(check_id, plan=plan, writer=writer)
    emit(row) if as_json else click.echo(f"{row['id']} on {row['item']} runs against the real thing")


@gate.command("remove")
@writes
@click.argument("check_id", metavar="CHECK")
@click.option(
    "--force", is_flag=True, help="Also the check of an item completed without passing it (recorded)."
)
@passphrase_option
def gate_remove(check_id: str, plan: str | None, writer: str | None, as_json: bool, force: bool) -> None:
    """Remove a check (gate or assumption check) by its id."""

    with ledger() as lg:
        row = lg.remove_check(check_id, plan=plan, writer=writer, force=force)
    emit(row) if as_json else click.echo(f"removed {row['role']} {row['id']} from {row['item']}")


@gate.command("list")
@options(plan=True, as_json=True)
@click.argument("refs", metavar="[ID...]", nargs=-1)
def gate_list(refs: tuple[str, ...], plan: str | None, as_json: bool) -> None:
    """The checks of the plan or of the named items, with their trust and the
    folder each runs in (where it was written, whoever runs it)."""

    with reader() as lg:
        rows = [r.as_dict() for r in lg.checks(refs, plan=plan)]
        latest = {r["check"]: r for r in lg.receipts(plan=plan)} if rows else {}
    for r in rows:
        last = latest.get(r["id"])
        r["last"] = {"result": last["result"], "at": last["at"], "age": last["age"]} if last else None
    if as_json:
        emit(rows)
        return
    for r in rows:
        trusted = "trusted" if r["trusted"] else "UNTRUSTED"
        by = f"by {r['route']}" + (f", approved by {r['approved_by']}" if r.get("approved_by") else "")
        last = r["last"]
        ran = f"{last['result']} {last['age']} ago" if last else "never ran"
        where = f"; runs in {r['runs_in']}" if r.get("runs_in") and _in_a_folder(r) else ""
        click.echo(
            _clean(
                f"{r['id']}  {r['item']}  {r['role']:<10} {trusted:<9}  {_spec_line(r)}  ({by}; {ran}{where})"
            )
        )
    if not rows:
        click.echo("no checks")


def _in_a_folder(row: dict[str, Any]) -> bool:
    """A check that looks at the folder it runs in (a command, a file, a disk)."""
    return str(row["spec"]).split(":", 1)[0] in ("cmd", "file", "disk")


def _spec_line(row: dict[str, Any]) -> str:
    opts = row.get("options") or {}
    spec = str(row["spec"])
    if spec.startswith("port:"):  # it proves that some process listens there, not which
        spec = f"a process listens on {spec[5:]}"
    return spec + ("  " + " ".join(f"{k}={v!r}" for k, v in sorted(opts.items())) if opts else "")


_MARK = {"holds": "ok  ", "fails": "FAIL", "error": "ERR "}


@click.command()
@writes
@click.argument("refs", metavar="[ID...]", nargs=-1)
@click.option(
    "--watch", "every", type=click.FloatRange(min=0.1), default=None, help="Run again every SECONDS."
)
def verify(
    refs: tuple[str, ...], plan: str | None, writer: str | None, as_json: bool, every: float | None
) -> None:
    """Run the checks of the plan (or of the named items) in parallel; store a receipt each."""
    from todoledger.ledger.receipts import Stopped

    failed = False
    while True:
        try:
            failed = _verify_once(refs, plan, writer, as_json)
            if every is None:
                break
            time.sleep(every)
        except KeyboardInterrupt:
            if every is None:
                raise
            break  # --watch ends with Ctrl-C between runs
        except Stopped as exc:
            # The running checks' process groups were ended; their receipts say "interrupted".
            if every is not None and exc.signal_name == "SIGINT":
                break  # --watch ends with Ctrl-C, also during a run
            click.echo(f"Error: {exc}", err=True)
            sys.exit(130 if exc.signal_name == "SIGINT" else 143)
    sys.exit(1 if failed else 0)


def _verify_once(refs: tuple[str, ...], plan: str | None, writer: str | None, as_json: bool) -> bool:
    with ledger() as lg:
        total = len([r for r in lg.checks(refs, plan=plan) if r.trusted])
        done = [0]
        started = time.monotonic()

        def progress(row: CheckRow, receipt: Receipt) -> None:
            done[0] += 1
            if as_json:
                return
            line = f"[{done[0]}/{total}] {_MARK[receipt.result]} {row.id} {row.item}  {row.check.text()}"
            click.echo(_clean(f"{line}  ({receipt.duration_ms} ms) {receipt.line()}"))

        result = lg.verify(refs, plan=plan, writer=writer, on_result=progress)
    failed = any(r["result"] != "holds" for r in result["receipts"])
    if as_json:
        emit(result)
        return failed
    for s in result["skipped"]:
        click.echo(_clean(f"skipped {s['id']} {s['item']}  {s['spec']}: {s['why']}"))
    counts: dict[str, int] = {}
    for r in result["receipts"]:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no checks ran"
    skipped = f", {len(result['skipped'])} skipped (untrusted)" if result["skipped"] else ""
    click.echo(f"{summary}{skipped} in {time.monotonic() - started:.2f} s")
    return failed


@click.command()
@writes
@click.argument("refs", metavar="[ID...]", nargs=-1)
@click.option("--yes", is_flag=True, help="Approve every check shown without asking.")
@passphrase_option
def trust(refs: tuple[str, ...], plan: str | None, writer: str | None, as_json: bool, yes: bool) -> None:
    """Show untrusted checks (imported, or from the HTTP server) and agents' own
    checks, and approve their exact text: a person's approval makes an agent's
    passing check prove its claim (self-checked becomes verified)."""

    interactive = sys.stdin.isatty() and not as_json

    history: dict[str, int] = {}

    def approve(row: Any) -> bool:
        if not as_json:
            route = row.route or row.principal
            click.echo(
                f"{row.id} on {row.item} ({row.role}), from {_clean(row.created_by)} ({_clean(route)}):"
            )
            click.echo(
                f"    {_clean(row.check.describe() if row.check.kind == 'port' else row.check.text())}"
            )
            for name, value in sorted(row.check.options().items()):
                click.echo(f"    {name} = {value!r}")
            if row.cwd:  # its writer chose where it runs: part of what a person approves
                click.echo(f"    runs in {_clean(row.cwd)}")
            failed = history.get(row.id, 0)
            click.echo(
                f"    seen failing: {failed} time(s)"
                if failed
                else "    seen failing: never (a check never seen failing may not be able to fail)"
            )
        if yes:
            return True
        if not interactive:
            return False
        return click.confirm("Trust this exact check?", default=False)

    with ledger() as lg:
        pending = lg.awaiting_trust(refs, plan=plan, writer=writer)
        history.update(lg.failing_history(plan=plan))
        if not pending:
            emit([]) if as_json else click.echo("nothing to trust: every check is trusted")
            return
        approved = lg.trust(refs, plan=plan, writer=writer, approve=approve)
    if as_json:
        emit(approved)
    elif approved:
        click.echo(f"trusted {len(approved)} of {len(pending)} checks")
    if not yes and not interactive and len(approved) < len(pending):
        raise LedgerError(f"{len(pending)} checks shown, none trusted: approve on a terminal or with --yes")


@click.command("metrics")
@options(plan=True, as_json=True)
@click.argument("ref", metavar="[ID]", required=False)
def metrics_cmd(ref: str | None, plan: str | None, as_json: bool) -> None:
    """Numbers recorded on items (`done ID --metric NAME=VALUE`)."""

    with reader() as lg:
        rows = lg.metrics(ref, plan=plan)
    if as_json:
        emit(rows)
        return
    for r in rows:
        how = r.get("provenance", "typed")
        if r.get("accepted_by"):
            how += f", accepted by {_clean(r['accepted_by'])}"
        click.echo(
            f"{r['item']}  {r['name']} = {r['value']:g}  (run {r['run']}, {how}, {_clean(r['writer'])}, {r['at']})"
        )
    if not rows:
        click.echo("no metrics")


@click.command("accept-metric")
@writes
@click.argument("ref", metavar="ID")
@click.argument("name")
@passphrase_option
def accept_metric(ref: str, name: str, plan: str | None, writer: str | None, as_json: bool) -> None:
    """A person accepts the typed values of a metric on an item: a `metric:` gate
    passes on measured values only (a sweep run) unless a person accepts the typed one."""

    with ledger() as lg:
        done = lg.accept_metric(ref, name, plan=plan, writer=writer)
    if as_json:
        emit(done)
    else:
        click.echo(
            f"{done['item']}: accepted {done['accepted']} typed {done['name']} (by {_clean(done['by'])})"
        )
