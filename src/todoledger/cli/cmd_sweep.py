"""`todoledger sweep add|run|results|compare|show|trust`: parameter sweeps with measured results."""

from __future__ import annotations

import csv
import io
import sys
from typing import Any

import click

from todoledger.cli.main import emit, ledger, options, passphrase_option, reader, writes
from todoledger.core.model import LedgerError


@click.group()
def sweep() -> None:
    """Parameter sweeps: one item per combination, every repeat measured."""


def _check_options(expect: str | None, timeout: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expect is not None:
        out["expect"] = expect
    if timeout is not None:
        out["timeout"] = timeout
    return out


@sweep.command("add")
@writes
@click.argument("name")
@click.option("--template", required=True, help='Item text, e.g. "Benchmark {draft_tokens} draft tokens".')
@click.option("--param", "params", multiple=True, required=True, help="NAME=V1,V2,... (repeatable).")
@click.option("--baseline", "baseline", multiple=True, help="NAME=VALUE of the baseline (repeatable).")
@click.option("--run", "run_cmd", required=True, help='The command, e.g. "python bench.py {draft_tokens}".')
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    required=True,
    help="NAME=REGEX with one group, or NAME=$.json.path.",
)
@click.option("--repeat", default=1, show_default=True, type=int, help="Runs per combination.")
@click.option("--keep", default=None, help="The verdict rule, e.g. 'tok_s>baseline*1.1'.")
@click.option("--timeout", default=3600.0, show_default=True, type=float, help="Seconds per run.")
@click.option(
    "--setup", default=None, help="A command kept running per combination, e.g. a server with {NAME} flags."
)
@click.option(
    "--ready",
    default=None,
    help="A check polled every second until it holds, e.g. http://127.0.0.1:30000/health.",
)
@click.option("--ready-expect", default=None, help="A regex the ready check's output or body must match.")
@click.option(
    "--ready-timeout", default=600.0, show_default=True, type=float, help="Seconds to wait for --ready."
)
@click.option(
    "--teardown", default=None, help="A command after the runs (the setup's process group is ended anyway)."
)
@click.option(
    "--clean", default=None, help="A check after the teardown, e.g. port:127.0.0.1:30000 (closed) or cmd:..."
)
@click.option("--clean-expect", default=None, help="A regex the clean check's output must match.")
@click.option(
    "--clean-timeout",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds the clean check is polled (every second) after a teardown before the sweep stops.",
)
@click.option(
    "--teardown-timeout",
    default=60.0,
    show_default=True,
    type=float,
    help="Seconds a teardown waits for the ready check's port to be free again.",
)
@click.option("--warmup", default=0, show_default=True, type=int, help="Runs per combination not counted.")
@click.option(
    "--order",
    type=click.Choice(["grouped", "interleaved", "shuffled"]),
    default="grouped",
    show_default=True,
    help="The order of the runs.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="The seed of --order shuffled.")
@click.option(
    "--allow-restarts",
    is_flag=True,
    help="With --setup: let interleaved or shuffled order restart it between runs.",
)
@click.option(
    "--watch",
    "watch",
    multiple=True,
    help="A path a run depends on (repeatable): its change makes runs stale.",
)
def sweep_add(
    name: str,
    plan: str | None,
    writer: str | None,
    as_json: bool,
    ready_expect: str | None,
    clean_expect: str | None,
    allow_restarts: bool,
    **kw: Any,
) -> None:
    """Define sweep NAME and add its items."""

    kw["run"] = kw.pop("run_cmd")
    kw["ready_options"] = _check_options(ready_expect, None)
    kw["clean_options"] = _check_options(clean_expect, None)
    kw["restarts"] = allow_restarts
    kw["watch"] = list(kw["watch"])
    with ledger() as lg:
        out = lg.add_sweep(name, plan=plan, writer=writer, **kw)
    if as_json:
        emit(out)
        return
    click.echo(f"sweep {name}: {len(out['items'])} combinations under {out['parent']}")
    for it in out["items"]:
        click.echo(f"  {it['id']} {_clean(it['content'])}")
    if kw.get("setup") and kw["order"] != "grouped":
        say(
            f"warning: --order {kw['order']} with --setup: the setup starts {out['restarts']} times"
            f" (once per combination when grouped)"
        )
    if not out["approved"]:
        say(f"not a person's sweep: nothing runs until a person approves it (todoledger sweep trust {name})")


@sweep.command("show")
@options(plan=True, as_json=True)
@click.argument("name")
def sweep_show(name: str, plan: str | None, as_json: bool) -> None:
    """Every command the sweep runs, per combination, its author and approval."""
    with reader() as lg:
        out = lg.sweep_definition(name, plan=plan)
    if as_json:
        emit(out)
        return
    for line in _definition_lines(out):
        click.echo(line)


def _definition_lines(out: dict[str, Any]) -> list[str]:
    d = out["definition"]
    approved = (
        f"approved by {out['approved_by']} at {out['approved_at']}"
        if out["approved_by"]
        else ("runs as written (a person's)" if out["runnable"] else "not approved: it does not run")
    )
    lines = [
        _clean(f"sweep {out['sweep']} (plan {out['plan']}), written by {out['created_by']}: {approved}"),
        f"  repeat {d['repeat']}, warmup {d.get('warmup', 0)}, order {d.get('order', 'grouped')}"
        + (f" (seed {d.get('seed', 0)})" if d.get("order") == "shuffled" else "")
        + (f", ready timeout {d.get('ready_timeout'):g} s" if d.get("ready") else "")
        + (f", clean timeout {d.get('clean_timeout', 30):g} s" if d.get("clean") else "")
        + (f", teardown timeout {d.get('teardown_timeout', 60):g} s" if d.get("setup") else "")
        + (f"; the setup starts {out['restarts']} times" if d.get("setup") else ""),
    ]
    if d.get("watch"):
        lines.append(_clean(f"  watch: {', '.join(d['watch'])}"))
    held = out.get("runner")
    if held:
        on = f", on {held['doing']}" if held["doing"] else ""
        state = "running" if held["alive"] else "gone"
        lines.append(
            _clean(
                f"  runner: pid {held['pid']} on {held['host']} since {held['started_at']}{on};"
                f" heartbeat {held['beat_age_s']:g} s ago; {state} ({held['how']})"
            )
        )
    for c in out["combinations"]:
        params = " ".join(f"{k}={v}" for k, v in c["params"].items()) + (
            " (baseline)" if c["baseline"] else ""
        )
        lines.append(_clean(f"  {c['item']} {params}"))
        for role, text in c["commands"]:
            lines.append(_clean(f"    {role}: {text}"))
    return lines


@sweep.command("trust")
@writes
@click.argument("name")
@click.option("--yes", is_flag=True, help="Approve without asking (after showing every command).")
@passphrase_option
def sweep_trust(name: str, plan: str | None, writer: str | None, as_json: bool, yes: bool) -> None:
    """A person approves every command of sweep NAME (its setup, ready, runs,
    teardown and clean, per combination), as shown: an agent's sweep runs only then."""
    interactive = sys.stdin.isatty() and not as_json

    def shown(found: dict[str, Any]) -> bool:
        if not as_json:
            for line in _definition_lines(found):
                click.echo(line)
        if yes:
            return True
        if not interactive:
            return False
        return click.confirm("Approve every command above?", default=False)

    with ledger() as lg:
        out = lg.approve_sweep(name, plan=plan, writer=writer, shown=shown)
    if out is None:
        raise LedgerError(f"sweep {name} not approved: approve on a terminal or with --yes")
    if as_json:
        emit(out)
    else:
        click.echo(
            _clean(f"approved sweep {name} ({len(out['combinations'])} combinations) as {out['approved_by']}")
        )


@sweep.command("run")
@writes
@click.argument("name")
@click.option("--parallel", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--stale", is_flag=True, help="Run again the completed combinations whose runs went stale.")
def sweep_run(
    name: str, plan: str | None, writer: str | None, as_json: bool, parallel: int, stale: bool
) -> None:
    """Run each pending combination; resumable after any interruption."""
    from todoledger.ledger import sweeps

    def progress(p: dict[str, Any]) -> None:
        if as_json:
            return
        params = " ".join(f"{k}={v}" for k, v in p["params"].items())
        where = f"[{p['combination']}/{p['of']}] " if p.get("combination") else ""
        if p.get("phase", "run") != "run":
            click.echo(_clean(f"{where}{params} {p['line']} ({p['elapsed']:.1f} s)"))
            return
        values = " ".join(f"{k}={v:g}" for k, v in p["values"].items()) or _clean(p["line"])
        click.echo(
            f"{where}{params} repeat {p['repeat']}/{p['repeats']}"
            f" {p['result']} {values} ({p['elapsed']:.1f} s)"
        )

    with ledger() as lg:
        out = sweeps.run(
            lg, name, parallel=parallel, plan=plan, writer=writer, on_progress=progress, stale=stale
        )
    if as_json:
        emit(out)
    else:
        warm = f", {out['warmups']} warm-up runs not counted" if out["warmups"] else ""
        setups = f", {out['setups']} setups" if out["setups"] else ""
        click.echo(
            f"{out['runs']} runs over {out['combinations']} pending combinations, {out['failed']} failed{warm}{setups}"
        )
        if out["stopped"]:
            say(_clean(out["stopped"]))
    if out["failed"] or out["stopped"]:
        raise SystemExit(1)


@sweep.command("results")
@options(plan=True, as_json=True)
@click.argument("name")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json", "html"]), default="table", show_default=True
)
@click.option("--include-stale", is_flag=True, help="Count runs whose inputs changed since (flagged).")
def sweep_results(name: str, plan: str | None, as_json: bool, fmt: str, include_stale: bool) -> None:
    """Median, min, max and spread per combination, ratio to the baseline, verdict."""
    from todoledger.core.sweep import lines, table

    with reader() as lg:
        out = lg.sweep_results(name, plan=plan, include_stale=include_stale)
    if as_json or fmt == "json":
        emit(out)
        return
    if fmt == "html":
        from todoledger.core.sweep_html import page

        click.echo(page(out), nl=False)
        return
    rows = table(out["rows"])
    if fmt == "csv":
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        click.echo(buf.getvalue(), nl=False)
        return
    for line in lines(rows):
        click.echo(_clean(line))
    from todoledger.core.sweep import result_notes

    for line in result_notes(out):
        click.echo(_clean(line))


@sweep.command("compare")
@options(plan=True, as_json=True)
@click.argument("a")
@click.argument("b")
@click.option("--plan-b", default=None, help="B's plan, where it is not the same as A's.")
@click.option("--include-stale", is_flag=True, help="Count stale runs on both sides.")
def sweep_compare(
    a: str, b: str, plan: str | None, plan_b: str | None, as_json: bool, include_stale: bool
) -> None:
    """Two sweeps side by side (two days, two commits): each combination's medians and B/A."""
    from todoledger.core.sweep import compare_sweeps, compare_table, lines

    with reader() as lg:
        left = lg.sweep_results(a, plan=plan, include_stale=include_stale)
        right = lg.sweep_results(b, plan=plan_b or plan, include_stale=include_stale)
    rows = compare_sweeps(left["rows"], right["rows"])
    if as_json:
        emit(
            {
                "a": {k: left[k] for k in ("plan", "sweep", "environments")},
                "b": {k: right[k] for k in ("plan", "sweep", "environments")},
                "rows": rows,
            }
        )
        return
    for line in lines(compare_table(rows)):
        click.echo(_clean(line))
    for side, found in (("A", left), ("B", right)):
        for env in found["environments"] or ["no environment recorded"]:
            click.echo(_clean(f"{side} = {found['sweep']} (plan {found['plan']}): {env}"))


def say(line: str) -> None:
    """A warning or a stop, for the person, on stderr (sanitised)."""
    from todoledger.core.sanitize import for_terminal

    click.echo(for_terminal(line), err=True)


def _clean(text: str) -> str:
    from todoledger.core.verification import tail

    return tail(text, 10_000)
