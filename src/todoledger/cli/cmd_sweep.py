"""`todoledger sweep add|run|results`: parameter sweeps with measured results."""

from __future__ import annotations

import csv
import io
from typing import Any

import click

from todoledger.cli.main import emit, ledger, options, reader, writes


@click.group()
def sweep() -> None:
    """Parameter sweeps: one item per combination, every repeat measured."""


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
def sweep_add(name: str, plan: str | None, writer: str | None, as_json: bool, **kw: Any) -> None:
    """Define sweep NAME and add its items."""

    kw["run"] = kw.pop("run_cmd")
    with ledger() as lg:
        out = lg.add_sweep(name, plan=plan, writer=writer, **kw)
    if as_json:
        emit(out)
        return
    click.echo(f"sweep {name}: {len(out['items'])} combinations under {out['parent']}")
    for it in out["items"]:
        click.echo(f"  {it['id']} {_clean(it['content'])}")


@sweep.command("run")
@writes
@click.argument("name")
@click.option("--parallel", default=1, show_default=True, type=click.IntRange(1, 64))
def sweep_run(name: str, plan: str | None, writer: str | None, as_json: bool, parallel: int) -> None:
    """Run each pending combination; resumable after any interruption."""
    from todoledger.ledger import sweeps

    def progress(p: dict[str, Any]) -> None:
        if as_json:
            return
        params = " ".join(f"{k}={v}" for k, v in p["params"].items())
        values = " ".join(f"{k}={v:g}" for k, v in p["values"].items()) or _clean(p["line"])
        click.echo(
            f"[{p['combination']}/{p['of']}] {params} repeat {p['repeat']}/{p['repeats']}"
            f" {p['result']} {values} ({p['elapsed']:.1f} s)"
        )

    with ledger() as lg:
        out = sweeps.run(lg, name, parallel=parallel, plan=plan, writer=writer, on_progress=progress)
    if as_json:
        emit(out)
    else:
        click.echo(
            f"{out['runs']} runs over {out['combinations']} pending combinations, {out['failed']} failed"
        )
    if out["failed"]:
        raise SystemExit(1)


@sweep.command("results")
@options(plan=True, as_json=True)
@click.argument("name")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json", "html"]), default="table", show_default=True
)
def sweep_results(name: str, plan: str | None, as_json: bool, fmt: str) -> None:
    """Median, min, max and spread per combination, ratio to the baseline, verdict."""
    from todoledger.core.sweep import lines, table

    with reader() as lg:
        out = lg.sweep_results(name, plan=plan)
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


def _clean(text: str) -> str:
    from todoledger.core.verification import tail

    return tail(text, 10_000)
