"""The board's Sweeps page: `sweeps.results` in, markup out (`templates/sweeps.html`).

Nothing is computed again here: the table shows the result rows (formatted by
`core.sweep.table`, as the CLI does, with the raw numbers in `data-value`),
and each chart only lays the same medians, minima and maxima out against the
sweep's first parameter, one line per combination of the other parameters,
the baseline dashed. Every text goes through the one sanitiser and is escaped
by the template (in the chart too: Plotly reads names as a small HTML dialect,
so its texts are escaped for Plotly before they go into the JSON).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from todoledger.core.sanitize import for_terminal
from todoledger.core.sweep import result_notes, table
from todoledger.web.pages import Html, render

NUMBERS = ("median", "min", "max", "spread", "ratio")


def page(plan: str, found: Sequence[tuple[Mapping[str, str], Mapping[str, Any]]]) -> Html:
    """`found`: each sweep's (listing entry, `sweeps.results` answer), oldest first."""
    return render("sweeps.html", plan=plan, sweeps=[_sweep(entry, result) for entry, result in found])


def _sweep(entry: Mapping[str, str], result: Mapping[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = result["rows"]
    drawn = charts_of(rows)
    cells = table(rows)
    return {
        "name": entry["name"],
        "parent": entry["parent"],
        "keep": result.get("keep"),
        "simulated": bool(result.get("simulated")),
        "head": cells[0],
        "rows": [_row(r, text) for r, text in zip(rows, cells[1:], strict=True)],
        # The chart's texts are escaped for Plotly already: its label is the text itself.
        "labels": [(len(chart["traces"]), html.unescape(chart["metric"])) for chart in drawn],
        "footer": [for_terminal(line) for line in result_notes(result)],
        "data": {"charts": drawn},
    }


def _row(r: Mapping[str, Any], text: Sequence[str]) -> dict[str, Any]:
    """One row of the table: its cells as (class, raw number or None, text)."""
    cells: list[tuple[str, str | None, str]] = [
        ("params", None, text[0]),
        ("metric", None, text[1]),
        ("n", str(r["n"]), text[2]),
    ]
    for name, shown in zip(NUMBERS, text[3:8], strict=True):
        cells.append((name, "" if r[name] is None else repr(float(r[name])), shown))
    cells.append((f"verdict v-{r['verdict'] or 'none'}", None, text[8]))
    cells.append(("flags", None, text[9]))
    return {
        "classes": "baseline" if r["baseline"] else "",
        "params": json.dumps(r["params"], sort_keys=True),
        "metric": r["metric"],
        "cells": cells,
    }


def charts_of(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per metric: its measured rows against the first parameter, one trace per
    combination of the others; a baseline group measured at one point is a
    dashed line across the chart."""
    out = []
    for metric in dict.fromkeys(r["metric"] for r in rows):
        measured = [r for r in rows if r["metric"] == metric and r["median"] is not None]
        if not measured:
            continue
        x_name = next(iter(measured[0]["params"]))
        numeric = all(_number(r["params"][x_name]) is not None for r in measured)
        groups: dict[tuple[bool, str], list[Mapping[str, Any]]] = {}
        for r in measured:
            others = " ".join(f"{k}={v}" for k, v in r["params"].items() if k != x_name)
            groups.setdefault((bool(r["baseline"]), others), []).append(r)
        traces = []
        colour = {others: k for k, others in enumerate(dict.fromkeys(o for _, o in groups))}
        for (is_base, others), members in groups.items():
            if numeric:
                members = sorted(members, key=lambda r: _number(r["params"][x_name]) or 0.0)
            name = ("baseline " if is_base else "") + (others or metric)
            traces.append(
                {
                    "name": _label(name.strip()),
                    "baseline": is_base,
                    "group": colour[others],  # a baseline is drawn in its combination's colour
                    "x": [_x(r["params"][x_name], numeric) for r in members],
                    "y": [r["median"] for r in members],
                    "lo": [r["min"] for r in members],
                    "hi": [r["max"] for r in members],
                    "n": [r["n"] for r in members],
                    "across": is_base and len(members) == 1,
                }
            )
        out.append({"metric": _label(metric), "x": _label(x_name), "numeric": numeric, "traces": traces})
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _x(text: str, numeric: bool) -> float | str:
    value = _number(text)
    return value if numeric and value is not None else _label(text)


def _label(text: str) -> str:
    """Text Plotly shows: sanitised, then escaped (Plotly renders a little HTML)."""
    return html.escape(for_terminal(text)[:80], quote=False)
