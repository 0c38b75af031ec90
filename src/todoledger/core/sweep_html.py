"""`sweep results --format html`: one self-contained page, an SVG chart per metric
(median per combination, a whisker from min to max, the baseline in grey), and
the table. No script, no external file; every text is escaped."""

from __future__ import annotations

from html import escape

from todoledger.core.sweep import table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BAR, _GAP, _LEFT, _HEIGHT = 28, 8, 260, 12


def page(result: dict[str, Any]) -> str:
    rows: list[dict[str, Any]] = result["rows"]
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    charts = "\n".join(_chart(m, [r for r in rows if r["metric"] == m]) for m in metrics)
    cells = table(rows)
    head = "".join(f"<th>{escape(c)}</th>" for c in cells[0])
    body = "\n".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
    title = escape(f"Sweep {result['sweep']} (plan {result['plan']})")
    keep = f"<p>keep when {escape(result['keep'])}</p>" if result.get("keep") else ""
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font:14px sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "td:first-child{text-align:left}</style></head><body>"
        f"<h1>{title}</h1>{keep}\n{charts}\n<table><tr>{head}</tr>\n{body}</table></body></html>\n"
    )


def _chart(metric: str, rows: list[dict[str, Any]]) -> str:
    measured = [r for r in rows if r["median"] is not None]
    top = max((r["max"] for r in measured), default=1.0) or 1.0
    width = 420
    height = len(rows) * (_BAR + _GAP) + 30
    parts = [
        f"<h2>{escape(metric)}</h2>",
        f"<svg width='{_LEFT + width + 120}' height='{height}' role='img'>",
    ]
    for n, r in enumerate(rows):
        y = n * (_BAR + _GAP) + 10
        label = " ".join(f"{k}={v}" for k, v in r["params"].items()) + (
            " (baseline)" if r["baseline"] else ""
        )
        parts.append(f"<text x='0' y='{y + _BAR * 0.65:.0f}'>{escape(label)}</text>")
        if r["median"] is None:
            parts.append(f"<text x='{_LEFT}' y='{y + _BAR * 0.65:.0f}' fill='#a00'>not run</text>")
            continue
        colour = (
            "#999" if r["baseline"] else {"keep": "#2a7", "discard": "#c55"}.get(r["verdict"] or "", "#47c")
        )
        w = max(1.0, r["median"] / top * width)
        lo, hi = r["min"] / top * width, r["max"] / top * width
        mid = y + _BAR / 2
        ratio = f" ({r['ratio']:.2f}x)" if r["ratio"] is not None and not r["baseline"] else ""
        tip = f"median {r['median']:g}, min {r['min']:g}, max {r['max']:g}, n {r['n']}"
        parts += [
            f"<rect x='{_LEFT}' y='{y}' width='{w:.1f}' height='{_BAR}' fill='{colour}'>"
            f"<title>{escape(tip)}</title></rect>",
            f"<line x1='{_LEFT + lo:.1f}' x2='{_LEFT + hi:.1f}' y1='{mid}' y2='{mid}' stroke='#000'/>",
            f"<text x='{_LEFT + w + 6:.1f}' y='{y + _BAR * 0.65:.0f}'>{r['median']:.4g}{escape(ratio)}</text>",
        ]
    parts.append("</svg>")
    return "\n".join(parts)
