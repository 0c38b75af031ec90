"""`todoledger ingest | report | stats`: transcripts into the ledger, and their story.

Imported lazily by the CLI group; plotly is loaded only for `--format html`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.ledger import Ledger

# A progress bar only pays off when there are this many files, and only on a terminal.
PROGRESS_MIN_FILES = 20


def _emit(data: Any) -> None:
    from todoledger.cli.main import emit

    emit(data)


def _skipped_line(counts: dict[str, int]) -> str:
    return "skipped: " + ", ".join(f"{n} {what}" for what, n in counts.items())


def _missing(paths: tuple[str, ...]) -> None:
    """A path that does not exist is a mistake to say, before anything is read or written."""
    gone = [p for p in paths if p != "-" and not Path(p).exists()]
    if gone:
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        raise LedgerError(f"{gone[0]}: no such file or folder{more}; nothing was imported")


def _run_ingest(lg: Ledger, paths: tuple[str, ...]) -> Any:
    from todoledger.ingest.calls import Skipped
    from todoledger.ingest.importer import ingest as run
    from todoledger.ingest.sources import discover

    skipped = Skipped()
    sources = list(discover(list(paths), skipped))
    if len(sources) < PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return run(lg, paths, sources=sources, skipped=skipped, read_ahead=None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=None, transient=True) as bar:
        task = bar.add_task("ingest", total=len(sources))
        return run(
            lg,
            paths,
            sources=sources,
            skipped=skipped,
            read_ahead=None,
            progress=lambda _s, _n: bar.advance(task),
        )


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: a list of imported sessions.")
def ingest(paths: tuple[str, ...], as_json: bool) -> None:
    """Import agents' transcripts (Claude Code, Codex, opencode, Gemini); '-' reads stdin.

    Each session becomes a plan named <project>/<session>: the session id's first
    8 characters, or the whole id when another session already has that plan.
    Importing the same files again (or older copies of them) changes nothing.
    """
    from todoledger.ledger import Ledger

    _missing(paths)
    with Ledger() as lg:
        result = _run_ingest(lg, paths)
    rows = [s.as_dict() for s in result.sessions]
    if result.skipped.counts:
        click.echo(_skipped_line(result.skipped.as_dict()), err=True)
    for s in result.sessions:
        warning = s.future_warning()
        if warning:
            click.echo(warning, err=True)
    if as_json:
        _emit(rows)
        return
    if not rows:
        click.echo(f"no todo calls found in {result.files} file(s)")
        return
    for row in rows:
        final = ", ".join(f"{n} {k}" for k, n in row["final"].items()) or "empty"
        new = f"{row['written']} new" if row["written"] else "already imported"
        click.echo(
            f"{row['plan']}: {row['calls']} calls ({new}), {row['items']} items: {final}  [{row['format']}]"
        )


@click.command()
@click.argument("plan")
@click.option("--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file.")
def report(plan: str, fmt: str, as_json: bool, output: Path | None) -> None:
    """A plan's story: timeline of every item, phases, and what went wrong, with evidence."""
    from todoledger.ingest.report import load, render_json, render_md
    from todoledger.ledger import Ledger

    with Ledger(create=False) as lg:
        analysis = load(lg, plan)
        people = lg.people()["line"]  # who could sign here: person keys, or unsigned, or a recent reset
    fmt = "json" if as_json else fmt
    if fmt == "html":
        from todoledger.ingest.html import render_html

        text = render_html(analysis, people)
    elif fmt == "json":
        import json

        text = json.dumps(
            {**json.loads(render_json(analysis)), "people": people}, ensure_ascii=False, indent=2
        )
        text += "\n"
    else:
        from todoledger.core.sanitize import for_terminal

        # The last line of the headline, above the phases.
        text = render_md(analysis).replace("\n\n## Phases", f"\n{for_terminal(people)}\n\n## Phases", 1)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LedgerError(f"{output}: cannot write the report ({exc.strerror})") from None
    click.echo(f"wrote {output}", err=True)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def stats(paths: tuple[str, ...], as_json: bool) -> None:
    """Across many sessions: plans, items, completion rate, time per item, common anomalies.

    With PATHs, their transcripts are read into a scratch ledger in memory
    (the ledger is not touched); without, every plan of the ledger counts.
    """
    from todoledger.ingest import stats as st
    from todoledger.ledger import Ledger

    if paths:
        _missing(paths)
        with Ledger(":memory:") as lg:
            result = _run_ingest(lg, paths)
            data = st.for_plans(lg, [s.plan for s in result.sessions])
        if result.skipped.counts:
            click.echo(_skipped_line(result.skipped.as_dict()), err=True)
    else:
        with Ledger(create=False) as lg:
            data = st.for_plans(lg, [p["plan"] for p in lg.plans()])
    if as_json:
        _emit(data)
    else:
        click.echo(st.render_text(data), nl=False)
