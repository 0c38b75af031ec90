"""The board's Sweeps page as HTML text. Pure: `sweeps.results` in, markup out.

Nothing is computed again here: the table shows the result rows (formatted by
`core.sweep.table`, as the CLI does, with the raw numbers in `data-value`),
and each chart only lays the same medians, minima and maxima out against the
sweep's first parameter, one line per combination of the other parameters,
the baseline dashed. Every text goes through the one sanitiser and is escaped
(in the chart too: Plotly reads names as a small HTML dialect).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from todoledger.core.sanitize import for_terminal
from todoledger.core.sweep import table
from todoledger.web.pages import esc, url

NUMBERS = ("median", "min", "max", "spread", "ratio")


def page(plan: str, found: Sequence[tuple[Mapping[str, str], Mapping[str, Any]]]) -> str:
    """`found`: each sweep's (listing entry, `sweeps.results` answer), oldest first."""
    if not found:
        return (
            f"<h1>Sweeps · {esc(plan)}</h1><p class=empty>This plan has no sweep (todoledger sweep add).</p>"
        )
    parts = [f"<h1>Sweeps · {esc(plan)}</h1>"]
    for n, (entry, result) in enumerate(found):
        parts.append(_sweep(plan, n, entry, result))
    return "".join(parts)


def _sweep(plan: str, n: int, entry: Mapping[str, str], result: Mapping[str, Any]) -> str:
    rows: list[dict[str, Any]] = result["rows"]
    keep = f"<p>keep when <code>{esc(result['keep'])}</code></p>" if result.get("keep") else ""
    drawn = charts_of(rows)
    # The chart's texts are escaped for Plotly already: shown here as they are, never as markup.
    charts = "".join(
        f'<div class="chart sweep-chart" id="sweep-{n}-{k}" data-traces="{len(chart["traces"])}"'
        f' aria-label="{esc(html.unescape(chart["metric"]))}"></div>'
        for k, chart in enumerate(drawn)
    )
    data = _json({"charts": drawn})
    return (
        f'<section class=sweep data-sweep="{esc(entry["name"])}"><h2>{esc(entry["name"])}'
        f' <a href="{url("/item", plan=plan, id=entry["parent"])}"><code class=id>{esc(entry["parent"])}</code></a></h2>'
        f"{keep}{_table(rows)}<div class=sweep-charts>{charts}</div>"
        f'<script type="application/json" class=sweep-data data-for="sweep-{n}">{data}</script></section>'
    )


def _table(rows: list[dict[str, Any]]) -> str:
    cells = table(rows)
    head = "".join(f"<th>{esc(c)}</th>" for c in cells[0])
    body = []
    for r, text in zip(rows, cells[1:], strict=True):
        tds = [f"<td class=params>{esc(text[0])}</td>", f"<td class=metric>{esc(text[1])}</td>"]
        tds.append(f'<td class=n data-value="{r["n"]}">{esc(text[2])}</td>')
        for name, shown in zip(NUMBERS, text[3:8], strict=True):
            raw = "" if r[name] is None else repr(float(r[name]))
            tds.append(f'<td class={name} data-value="{raw}">{esc(shown)}</td>')
        verdict = r["verdict"] or ""
        tds.append(f'<td class="verdict v-{esc(verdict or "none")}">{esc(text[8])}</td>')
        tds.append(f"<td class=flags>{esc(text[9])}</td>")
        classes = "baseline" if r["baseline"] else ""
        body.append(
            f'<tr class="{classes}" data-params="{esc(json.dumps(r["params"], sort_keys=True))}"'
            f' data-metric="{esc(r["metric"])}">{"".join(tds)}</tr>'
        )
    return f"<table class=sweep-table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


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


def _json(data: Any) -> str:
    # JSON in a data block, never executed; "<" and "&" escaped so no text can close the block.
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace("&", "\\u0026")
