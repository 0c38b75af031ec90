"""The HTML report: one self-contained file, the timeline drawn by Plotly.

plotly.js is inlined from the installed `plotly` package (no CDN: the file
must open offline and years later). Every text from the agent is escaped;
the figure's JSON is embedded with `<`, `>` and `&` as \\u escapes so no
content can close the script element.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from todoledger.core.cycles import acyclic
from todoledger.core.markdown import html_text
from todoledger.core.model import LedgerError
from todoledger.ingest.claims import COLUMNS as CLAIM_COLUMNS
from todoledger.ingest.findings import duration, short
from todoledger.ingest.report import (
    TITLES,
    Report,
    _phase_title,
    _where,
    headline,
    item_row,
    proof_cells,
    proof_rows,
)

COLOURS = {
    "pending": "#9aa5b1",
    "in_progress": "#2f80ed",
    "completed": "#27ae60",
    "cancelled": "#eb5757",
    "dropped": "#95a5a6",
}
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #ddd;
padding:4px 6px;text-align:left;vertical-align:top}th{background:#f5f5f5}code{color:#555}
.f{margin:.2em 0}.where{color:#777;font-family:monospace}h2{margin-top:1.6em}
"""


def plotly_js() -> str:
    spec = importlib.util.find_spec("plotly")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / "package_data" / "plotly.min.js"
        if path.is_file():
            # No "</script" may appear inside an inline script; "<\/" means the same in JS.
            return path.read_text(encoding="utf-8").replace("</script", "<\\/script")
    raise LedgerError("the HTML report needs plotly (pip install plotly) for its chart")


def _esc(text: Any) -> str:
    return html_text(text)


def _script_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure(r: Report) -> dict[str, Any]:
    """A Gantt chart: one row per item, one bar per stretch in a status."""
    s = r.story
    labels = {it.id: f"{html_text(it.id)} {html_text(short(it.content, 48))}" for it in r.items()}
    traces: dict[str, dict[str, Any]] = {}
    from todoledger.ingest.story import parse_time

    steps = {c.op: k for k, c in enumerate(s.calls)}  # untimed: each call is one step of the x axis
    for it in r.items():
        for n, sp in enumerate(it.spans):
            t = traces.setdefault(
                sp.status,
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": sp.status,
                    "marker": {"color": COLOURS.get(sp.status, "#999")},
                    "y": [],
                    "x": [],
                    "base": [],
                    "text": [],
                    "textposition": "none",  # the text is for hovering; inside bars it is unreadable
                    "hovertemplate": "%{text}<extra></extra>",
                },
            )
            t["y"].append(labels[it.id])
            if s.untimed:  # by sequence: from the call that set the status to the one that changed it
                first = steps.get(sp.op, 0)
                later = it.spans[n + 1].op if n + 1 < len(it.spans) else None
                t["base"].append(first)
                t["x"].append(max((steps.get(later, len(steps)) if later else len(steps)) - first, 0.2))
                t["text"].append(
                    f"{html_text(short(it.content, 90))}<br>{sp.status} from {html_text(s.place(sp.op))}"
                )
                continue
            ms = max((parse_time(sp.end) - parse_time(sp.start)).total_seconds() * 1000, 400.0)
            t["x"].append(ms)
            t["base"].append(sp.start)
            t["text"].append(
                f"{html_text(short(it.content, 90))}<br>{sp.status} for {duration(sp.seconds)}<br>from {html_text(sp.start)}"
            )
    order = list(labels.values())
    if s.untimed:
        xaxis: dict[str, Any] = {
            "type": "linear",
            "title": {"text": "calls in order (times not recorded)"},
            "tickvals": list(range(len(s.calls))),
            "ticktext": [html_text(c.place) for c in s.calls],
        }
    else:
        xaxis = {"type": "date", "title": {"text": "time (UTC)"}}
    layout = {
        "barmode": "overlay",
        "height": 160 + 24 * max(len(order), 1),
        "margin": {"l": 340, "r": 20, "t": 30, "b": 40},
        "xaxis": xaxis,
        "yaxis": {"categoryorder": "array", "categoryarray": order[::-1], "automargin": True},
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        "shapes": [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": steps.get(p.first_op, 0) if s.untimed else p.start,
                "x1": steps.get(p.first_op, 0) if s.untimed else p.start,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": "#888", "width": 1},
            }
            for p in s.phases
        ],
    }
    return {"data": [traces[k] for k in COLOURS if k in traces], "layout": layout}


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{_esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


@acyclic
def render_html(r: Report, people: str | None = None) -> str:
    """The report as one page; `people`: who can sign on this ledger (person keys, or
    unsigned), the line every header carries."""
    s = r.story
    parts = [f"<h1>Plan {_esc(s.plan)}</h1>"]
    parts += [f"<p>{_esc(line)}</p>" for line in headline(r)]
    if people:
        parts.append(f'<p class="people">{_esc(people)}</p>')
    parts.append('<div id="timeline"></div>')
    parts.append("<h2>What went wrong</h2>")
    if not r.findings:
        parts.append("<p>Nothing: no item skipped progress, went backwards, was dropped or stuck.</p>")
    for code, title in TITLES.items():
        group = [f for f in r.findings if f.code == code]
        if group:
            parts.append(f"<h3>{_esc(title)} ({len(group)})</h3>")
            parts += [
                f'<div class="f">{"" if s.untimed else _esc(f.at)}'
                f' <span class="where">{_esc(_where(f.where) or (s.place(f.op) if s.untimed else ""))}</span>'
                f" {_esc(f.message)}</div>"
                for f in group
            ]
    proven = proof_rows(r)
    if proven:
        parts.append("<h2>Proof</h2>")
        parts.append(
            _table(
                ["item", "status", "verification", "evidence", "metrics", "receipts"],
                [
                    [
                        f"<code>{_esc(it.id)}</code> {_esc(it.content)}",
                        _esc(it.status),
                        _esc(p.verification or ""),
                        *(_esc(cell) for cell in proof_cells(p)),
                    ]
                    for it, p in proven
                ],
            )
        )
    if r.claims.writers:
        parts.append("<h2>Proof of completions</h2>")
        parts.append(
            _table(
                ["item", "claimed by", "at", "proven"],
                [
                    [
                        f"<code>{_esc(c.item)}</code> {_esc(c.content)}",
                        _esc(c.claimed_by),
                        _esc(c.at),
                        _esc(c.how()),
                    ]
                    for c in r.claims.items
                ],
            )
        )
        parts.append("<h2>Claims by writer</h2>")
        parts.append(
            _table(["writer", *CLAIM_COLUMNS], [[_esc(cell) for cell in row] for row in r.claims.rows()])
        )
    parts.append("<h2>Phases</h2>")
    if s.untimed:
        parts.append("<p>Times not recorded: in the order of the calls, with no durations.</p>")
        parts.append(
            _table(
                ["#", "from", "items", "first item"],
                [
                    [
                        str(p.index),
                        _esc(s.place(p.first_op)),
                        str(len(p.items)),
                        _esc(_phase_title(s, p.items)),
                    ]
                    for p in s.phases
                ],
            )
        )
    else:
        parts.append(
            _table(
                ["#", "from", "to", "took", "items", "first item"],
                [
                    [
                        str(p.index),
                        _esc(p.start),
                        _esc(p.end),
                        duration(p.seconds),
                        str(len(p.items)),
                        _esc(_phase_title(s, p.items)),
                    ]
                    for p in s.phases
                ],
            )
        )
    parts.append("<h2>Items</h2>")
    rows = []
    for it in r.items():
        row = item_row(it, s)
        if s.untimed:
            rows.append(
                [
                    f"<code>{_esc(it.id)}</code> {_esc(it.content)}",
                    _esc(it.status + (" (left out)" if row["dropped"] else "")),
                    _esc(row["added"]),
                    _esc(row["started"] or ""),
                    _esc(row["completed"] or row["cancelled"] or ""),
                ]
            )
            continue
        secs = row["seconds"]
        rows.append(
            [
                f"<code>{_esc(it.id)}</code> {_esc(it.content)}",
                _esc(it.status + (" (dropped)" if row["dropped"] and it.status != "dropped" else "")),
                _esc(row["added"]),
                _esc(row["started"] or ""),
                _esc(row["completed"] or row["cancelled"] or row["dropped_at"] or ""),
                duration(secs.get("pending", 0)),
                duration(secs.get("in_progress", 0)),
            ]
        )
    head = ["item", "status", "added", "started", "finished"]
    parts.append(_table(head if s.untimed else [*head, "pending", "in progress"], rows))
    parts.append("<h2>Calls</h2>")
    parts.append(
        _table(
            ["op", "at", "where", "writer", "change", "warnings"],
            [
                [
                    str(c.op),
                    "not recorded" if c.untimed else _esc(c.at),
                    _esc(_where(c.where)),
                    _esc(c.writer),
                    _esc(c.summary or "no change"),
                    _esc("; ".join(w.get("message", "") for w in c.warnings)),
                ]
                for c in s.calls
            ],
        )
    )
    fig = _script_json(figure(r))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>todoledger report: {_esc(s.plan)}</title><style>{STYLE}</style>"
        f"<script>{plotly_js()}</script></head><body>{''.join(parts)}"
        f"<script>const fig={fig};Plotly.newPlot('timeline',fig.data,fig.layout,"
        "{responsive:true,displaylogo:false});</script></body></html>\n"
    )
