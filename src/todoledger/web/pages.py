"""The board's pages as HTML text. Pure: data in, markup out.

Every text an agent (or anyone) wrote goes through `esc` (the one sanitiser,
then HTML entities): it renders as text, never as markup. No link is built
from agent text: links carry ids and plan names only, URL-quoted and escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from todoledger.core.markdown import html_text
from todoledger.core.model import STATUSES
from todoledger.core.sanitize import for_terminal
from todoledger.core.schedule import Schedule
from todoledger.core.view import ItemView, PlanView

PAGES = (("plan", "Plan"), ("timeline", "Timeline"), ("approvals", "Approvals"), ("sessions", "Sessions"))
STATUS_MARK = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "⊘"}


def esc(value: object) -> str:
    return html_text(value)


def esc_lines(value: object) -> str:
    """Multi-line text (notes, evidence): line breaks kept, shown by CSS."""
    return html.escape(for_terminal(value, newlines=True), quote=True)


def url(path: str, **query: str) -> str:
    return esc(f"{path}?{urlencode(query)}" if query else path)


def short_time(at: str | None) -> str:
    return esc((at or "")[:19].replace("T", " "))


def page(
    *,
    title: str,
    body: str,
    kind: str,
    plan: str | None,
    csrf: str,
    change: int,
    who: str,
    scripts: Sequence[str] = (),
    version: str = "",
    sweeps: bool = False,
) -> str:
    """A whole page: the fragment `body` inside the frame the live script refreshes.
    `sweeps`: the plan has sweeps, so its navigation links their page."""
    nav = ['<a href="/">Plans</a>']
    if plan is not None:
        shown = (*PAGES, ("sweeps", "Sweeps")) if sweeps or kind == "sweeps" else PAGES
        nav += [
            f'<a href="{url("/" + name, plan=plan)}" class="{"here" if name == kind else ""}">{label}</a>'
            for name, label in shown
        ]
    extra = "".join(f'<script defer src="{esc(src)}?v={esc(version)}"></script>' for src in scripts)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f'<meta name=csrf content="{esc(csrf)}"><meta name=who content="{esc(who)}">'
        f"<title>{esc(title)} · todoledger</title>"
        '<link rel=stylesheet href="/static/board.css?v={esc(version)}"></head>'
        f'<body data-page="{esc(kind)}" data-plan="{esc(plan or "")}">'
        f"<header><nav>{' '.join(nav)}</nav><span class=title>{esc(title)}</span>"
        "<label class=who>you are web:<input id=who size=10 maxlength=40 autocomplete=off></label>"
        '<span id=live title="live updates">connecting</span></header>'
        "<div id=flash role=alert hidden></div>"
        f'<main id=main data-change="{change}">{body}</main>'
        f'{extra}<script defer src="/static/board.js?v={esc(version)}"></script></body></html>'
    )


def login(error: str | None = None) -> str:
    problem = f"<p class=error role=alert>{esc(error)}</p>" if error else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>todoledger: token</title>"
        '<link rel=stylesheet href="/static/board.css"></head><body><main class=login>'
        "<h1>todoledger board</h1><p>This board needs the token it was started with"
        " (<code>todoledger serve --token</code>). It is asked once: the browser keeps it.</p>"
        f'{problem}<form method=post action="/login"><input type=password name=token autofocus'
        " required aria-label=token> <button>Open the board</button></form></main></body></html>"
    )


# plans -----------------------------------------------------------------------
def plans(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return (
            "<h1>Plans</h1><p class=empty>The ledger holds no plan yet. Agents' lists appear here as"
            " they write them; <code>todoledger demo</code> loads the demo plans.</p>"
        )
    out = ["<h1>Plans</h1><div class=plans>"]
    for r in rows:
        counts = " ".join(
            f'<span class="count st-{esc(s)}">{n} {esc(s.replace("_", " "))}</span>'
            for s, n in r["counts"].items()
        )
        ver = " ".join(f"<span class=count>{n} {esc(v)}</span>" for v, n in r["verification"].items())
        doing = "".join(
            f'<li><a href="{url("/item", plan=r["plan"], id=i["id"])}">{esc(i["content"])}</a>'
            f" <span class=writer>{esc(i['writer'])}</span></li>"
            for i in r["in_progress"]
        )
        last = r.get("last") or {}
        change = (
            f"<p class=last>last change {short_time(last.get('at'))} by <span class=writer>"
            f"{esc(last.get('writer'))}</span>: {esc(last.get('summary') or last.get('kind'))}</p>"
            if last
            else ""
        )
        out.append(
            f'<section class=plan-card data-plan="{esc(r["plan"])}"><h2><a href="{url("/plan", plan=r["plan"])}">'
            f"{esc(r['plan'])}</a></h2><p class=counts>{counts or 'empty'}</p>"
            + (f"<p class=counts>verification: {ver}</p>" if ver else "")
            + (f"<h3>in progress</h3><ul>{doing}</ul>" if doing else "")
            + change
            + "</section>"
        )
    out.append("</div>")
    return "".join(out)


# a plan ----------------------------------------------------------------------
FIRST_ROWS = 200  # rows in the page itself; the script fetches the rest after the first paint


def plan(view: PlanView, head: str, rows: Sequence[str], total: int) -> str:
    """The plan page: head (summary, what to do next), the add form, and the
    first rows; `total` says how many rows the plan has in all."""
    more = (
        f'<div class="row more" aria-live=polite>loading {total - len(rows)} more items…</div>'
        if total > len(rows)
        else ""
    )
    return (
        f"<h1>Plan {esc(view.plan)} <small>revision {view.revision}</small></h1>"
        f"<div id=plan-head>{head}</div>"
        + _add_form()
        + f'<div class="items" role=table aria-label=items data-sync data-total="{total}">'
        + '<div class="row head" role=row><span>#</span><span>status</span><span>item</span>'
        "<span>priority</span><span>verification</span><span>waits for</span><span>state</span>"
        "<span>estimate</span><span>uses</span></div>" + "".join(rows) + more + "</div>"
    )


def plan_head(view: PlanView, sched: Schedule, waiting: set[str], standing: Mapping[str, Any]) -> str:
    by_id = {it.id: it for it in view.items}
    return _plan_summary(view, sched, standing) + _next_box(view, sched, waiting, by_id)


def _plan_summary(view: PlanView, sched: Schedule, standing: Mapping[str, Any]) -> str:
    counts = " ".join(
        f'<span class="count st-{esc(s)}">{n} {esc(s.replace("_", " "))}</span>'
        for s, n in view.counts.items()
    )
    if standing.get("by") is None:
        approval = '<span class="approval none">plan never approved</span>'
    elif standing.get("approved"):
        approval = f'<span class="approval ok">approved by {esc(standing["by"])} at {short_time(standing["at"])}</span>'
    else:
        approval = (
            f'<a class="approval changed" href="{url("/approvals", plan=view.plan)}">changed since'
            f" {esc(standing['by'])} approved it ({len(standing['diff'])} changes)</a>"
        )
    return (
        f"<p class=summary>{counts or 'empty'} · {approval} "
        '<button data-act=approve_plan title="Record your approval of the plan as it stands">'
        "approve plan</button> <button data-act=undo>undo my last change</button></p>"
    )


def _next_box(view: PlanView, sched: Schedule, waiting: set[str], by_id: Mapping[str, ItemView]) -> str:
    def name(item_id: str) -> str:
        it = by_id.get(item_id)
        text = esc(it.content) if it else esc(item_id)
        return f'<a href="{url("/item", plan=view.plan, id=item_id)}">{text}</a>'

    lines = []
    if view.in_progress:
        lines.append(
            "<li><b>in progress</b>: "
            + ", ".join(
                f"{name(it.id)} <span class=writer>{esc(it.writer)}</span>" for it in view.in_progress
            )
            + "</li>"
        )
    now = sched.parallel[0] if sched.parallel else ()
    if now:
        lines.append(
            "<li><b>can start now, together</b>: "
            + ", ".join(name(i) + (" <em>(needs approval)</em>" if i in waiting else "") for i in now)
            + "</li>"
        )
    elif view.ready:
        lines.append("<li><b>ready</b> items wait for resources held by work in progress</li>")
    if len(sched.parallel) > 1:
        lines.append(
            f"<li>then {len(sched.parallel) - 1} more set(s) of ready items that share resources</li>"
        )
    open_waiting = [i for i in waiting if i in by_id and by_id[i].is_open]
    if open_waiting:
        lines.append(
            f'<li><a href="{url("/approvals", plan=view.plan)}"><b>{len(open_waiting)} wait for a person</b></a>: '
            + ", ".join(name(i) for i in open_waiting[:5])
            + "</li>"
        )
    if view.blocked:
        lines.append(f"<li>{len(view.blocked)} blocked</li>")
    if sched.critical_path:
        unknown = len([i for i in sched.critical_path if i in sched.unestimated])
        note = f", {unknown} without estimate" if unknown else ""
        from todoledger.core.schedule import format_duration

        length = format_duration(sched.length) if sched.length else "no estimates"
        lines.append(
            f"<li class=crit-line><b>critical path</b> {esc(length)} ({len(sched.critical_path)} items{note}): "
            + " → ".join(name(i) for i in sched.critical_path[:8])
            + (" …" if len(sched.critical_path) > 8 else "")
            + "</li>"
        )
    if not lines:
        lines.append("<li>nothing open</li>")
    return f'<section class=next aria-label="what to do next"><h2>What to do next</h2><ul>{"".join(lines)}</ul></section>'


def _add_form() -> str:
    return (
        '<form class=add data-form=add><input name=content placeholder="Add an item…" required maxlength=4000>'
        "<select name=priority><option>medium</option><option>high</option><option>low</option></select>"
        "<input name=estimate placeholder=estimate size=6><input name=uses placeholder=uses size=10>"
        "<label><input type=checkbox name=needs_approval> needs approval</label><button>add</button></form>"
    )


def verification_text(it: ItemView) -> str:
    # Nothing verifies it yet: a completed item is a claim, and says so.
    said = it.verification or ("claimed, not verified" if it.status == "completed" else "")
    # A status someone forced says what it overrode, beside how it is verified.
    return "; ".join([said, *it.forced] if said else it.forced)


def row(
    plan: str,
    it: ItemView,
    critical: bool,
    parallel: int | None,
    waiting: bool,
    dep_status: Mapping[str, str],
) -> str:
    """One item's row; a pure function of its arguments (the server caches it)."""
    classes = ["row", f"st-{it.status}"]
    tags = []
    if critical:
        classes.append("crit")
        tags.append('<span class="tag crit">critical path</span>')
    if parallel is not None:
        classes.append(f"par par{min(parallel, 5)}")
        tags.append(f'<span class="tag par">{"now" if parallel == 0 else f"set {parallel + 1}"}</span>')
    if waiting:
        classes.append("awaiting")
        tags.append('<span class="tag gate">needs approval</span>')
    elif it.needs_approval:
        tags.append('<span class="tag ok">approved</span>')
    flag = it.flag()
    deps = ", ".join(
        f'<a href="#{esc("i-" + d)}" class="dep st-{esc(dep_status.get(d, ""))}">{esc(d)}</a>'
        for d in it.depends_on
    )
    item_id = esc(it.id)
    return (
        f'<div class="{" ".join(classes)}" role=row id="i-{item_id}" data-id="{item_id}"'
        f' style="--depth:{it.depth}"><span class=pos></span>'
        f'<span><button class="status st-{esc(it.status)}" data-act=status data-value="{esc(it.status)}">'
        f"{STATUS_MARK.get(it.status, '')} {esc(it.status.replace('_', ' '))}</button></span>"
        f'<span class=content><a href="/item?plan={_q(plan)}&amp;id={_q(it.id)}">{esc(it.content)}</a>'
        f" <code class=id>{item_id}</code> {' '.join(tags)}</span>"
        f'<span><button class="prio p-{esc(it.priority)}" data-act=priority data-value="{esc(it.priority)}">'
        f"{esc(it.priority)}</button></span>"
        f'<span class="ver v-{esc(it.verification or "none")}">{esc(verification_text(it))}</span>'
        f"<span class=deps>{deps}</span>"
        f'<span class="flag f-{esc(flag.split(" ")[0])}">{esc(flag)}</span>'
        f"<span class=est>{esc(it.estimate or '')}</span>"
        f"<span class=uses>{esc(', '.join(it.uses))}</span></div>"
    )


def _q(value: str) -> str:
    return esc(quote(value, safe=""))


# an item ---------------------------------------------------------------------
def item(
    view: PlanView,
    it: ItemView,
    history: Sequence[Mapping[str, Any]],
    approval: Mapping[str, Any] | None,
    waiting: bool,
    took: str | None,
) -> str:
    by_id = {x.id: x for x in view.items}
    waits_for = [by_id[d] for d in it.depends_on if d in by_id]
    waited_by = [x for x in view.items if it.id in x.depends_on]
    children = [x for x in view.items if x.parent == it.id]

    def link(x: ItemView) -> str:
        return (
            f'<li><a href="{url("/item", plan=view.plan, id=x.id)}">{esc(x.content)}</a>'
            f' <span class="st st-{esc(x.status)}">{esc(x.status.replace("_", " "))}</span></li>'
        )

    deps_ui = "".join(
        f'<li><a href="{url("/item", plan=view.plan, id=x.id)}">{esc(x.content)}</a>'
        f' <span class="st st-{esc(x.status)}">{esc(x.status.replace("_", " "))}</span>'
        f' <button data-act=dep_remove data-value="{esc(x.id)}">remove</button></li>'
        for x in waits_for
    )
    fields = [
        ("status", esc(it.status.replace("_", " "))),
        ("priority", esc(it.priority)),
        ("verification", esc(verification_text(it)) or "—"),
        ("estimate", esc(it.estimate or "—") + (f" (took {esc(took)})" if took else "")),
        ("uses", esc(", ".join(it.uses)) or "—"),
        ("state", esc(it.flag()) or "—"),
        ("last change", f"{short_time(it.updated_at)} by <span class=writer>{esc(it.writer)}</span>"),
        ("created", f"{short_time(it.created_at)} by <span class=writer>{esc(it.created_by)}</span>"),
    ]
    gate = ""
    if it.needs_approval or approval:
        if waiting:
            diff = _diff_table((approval or {}).get("diff") or [])
            gate = (
                "<section class=gate><h2>Needs a person's approval</h2>"
                + ("<p>Changed since it was approved:</p>" + diff if diff else "<p>Never approved.</p>")
                + "<button data-act=approve>approve</button></section>"
            )
        elif approval and approval.get("by"):
            gate = (
                f"<section class=gate-ok><p>approved by <span class=writer>{esc(approval['by'])}</span>"
                f" at {short_time(approval['at'])}</p></section>"
            )
    texts = "".join(
        f"<section><h2>{label}</h2><p class=text>{esc_lines(value)}</p></section>"
        for label, value in (("evidence", it.evidence), ("reason", it.reason), ("notes", it.notes))
        if value
    )
    return (
        f'<article class=item data-id="{esc(it.id)}"><h1>{esc(it.content)} <code class=id>{esc(it.id)}</code></h1>'
        + "<dl>"
        + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields)
        + "</dl>"
        + gate
        + texts
        + "<section class=steer><h2>Change it</h2>"
        + f'<form data-form=content><input name=content value="{esc(it.content)}" size=60 maxlength=4000>'
        "<button>save wording</button></form>"
        + '<form data-form=fields><input name=estimate placeholder="estimate (15m, 2h)"'
        f' value="{esc(it.estimate or "")}" size=10><input name=uses placeholder="uses (server gpu:0-3)"'
        f' value="{esc(" ".join(it.uses))}" size=20><label><input type=checkbox name=needs_approval'
        f"{' checked' if it.needs_approval else ''}> needs approval</label><button>save</button></form>"
        + '<form data-form=dep_add><input name=blocker placeholder="item id it waits for" size=12>'
        "<button>add dependency</button></form>"
        + (
            "<form data-form=cancel><input name=reason placeholder=reason size=30><button>cancel item</button></form>"
            if it.status != "cancelled"
            else "<button data-act=restore>restore</button>"
        )
        + "<p>order: <button data-act=move data-value=up>move up</button>"
        " <button data-act=move data-value=down>move down</button></p>"
        + "</section>"
        + f"<section><h2>Waits for</h2><ul>{deps_ui or '<li>nothing</li>'}</ul></section>"
        + f"<section><h2>What waits for it</h2><ul>{''.join(link(x) for x in waited_by) or '<li>nothing</li>'}</ul></section>"
        + (
            f"<section><h2>Items of this phase</h2><ul>{''.join(link(x) for x in children)}</ul></section>"
            if children
            else ""
        )
        + "<section><h2>History</h2>"
        + _history(history)
        + "</section></article>"
    )


def _value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return esc(value)
    return esc(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _history(events: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{short_time(e['at'])}</td><td class=writer>{esc(e['writer'])}</td><td>{esc(e['field'])}</td>"
        f"<td>{_value(e['old'])}</td><td>{_value(e['new'])}</td></tr>"
        for e in events
    )
    return (
        "<table class=history><thead><tr><th>when</th><th>who</th><th>what</th><th>was</th><th>became</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _diff_table(diff: Sequence[Mapping[str, Any]]) -> str:
    if not diff:
        return ""
    rows = "".join(
        f"<tr><td>{esc(d['field'])}</td><td class=old>{_value(d['approved'])}</td><td class=new>{_value(d['now'])}</td></tr>"
        for d in diff
    )
    return f"<table class=diff><thead><tr><th>field</th><th>approved</th><th>now</th></tr></thead><tbody>{rows}</tbody></table>"


# approvals -------------------------------------------------------------------
def approvals(view: PlanView, state: Mapping[str, Any]) -> str:
    by_id = {x.id: x for x in view.items}
    standing = state["plan"]
    if standing["by"] is None:
        head = "<p>The plan was never approved.</p>"
    elif standing["approved"]:
        head = (
            f"<p class=ok>The plan is approved as it stands: by <span class=writer>{esc(standing['by'])}</span>"
            f" at {short_time(standing['at'])} (<code>{esc(standing['hash'][:12])}</code>).</p>"
        )
    else:
        head = (
            f"<p class=changed>The plan changed since <span class=writer>{esc(standing['by'])}</span> approved it"
            f" at {short_time(standing['at'])}:</p>" + _plan_diff(standing["diff"], by_id)
        )
    head += "<p><button data-act=approve_plan>approve the plan as it stands</button></p>"
    rows = []
    for item_id in state["waiting"]:
        it = by_id.get(item_id)
        if it is None:
            continue
        diff = _diff_table(state["items"][item_id]["diff"])
        rows.append(
            f'<li data-id="{esc(item_id)}"><a href="{url("/item", plan=view.plan, id=item_id)}">{esc(it.content)}</a>'
            f' <code class=id>{esc(item_id)}</code> <span class="st st-{esc(it.status)}">{esc(it.status)}</span>'
            f' <button data-act=approve data-id="{esc(item_id)}">approve</button>'
            + (f"<p>changed since approved:</p>{diff}" if diff else "<p>never approved</p>")
            + "</li>"
        )
    waiting = f"<ul class=waiting>{''.join(rows)}</ul>" if rows else "<p>No item waits for a person.</p>"
    return f"<h1>Approvals · {esc(view.plan)}</h1><section><h2>The plan</h2>{head}</section><section><h2>Items that wait for a person</h2>{waiting}</section>"


def _plan_diff(diff: Sequence[Mapping[str, Any]], by_id: Mapping[str, ItemView]) -> str:
    out = []
    for d in diff:
        if d["change"] == "reordered":
            out.append("<li>the order changed</li>")
        elif d["change"] == "changed":
            out.append(f"<li>changed <b>{esc(d['content'])}</b> {_diff_table(d['fields'])}</li>")
        else:
            out.append(
                f"<li>{esc(d['change'])} <b>{esc(d['content'])}</b> <code>{esc(d['item'])}</code></li>"
            )
    return f"<ul class=plan-diff>{''.join(out)}</ul>"


# sessions --------------------------------------------------------------------
def sessions(view: PlanView, writers: Sequence[Mapping[str, Any]]) -> str:
    by_id = {x.id: x for x in view.items}
    rows = "".join(
        f"<tr><td class=writer>{esc(w['writer'])}</td><td>{'person' if w['person'] else 'agent'}</td>"
        f"<td>{short_time(w['last_write'])}</td><td>{w['changes']}</td><td>"
        + ", ".join(
            f'<a href="{url("/item", plan=view.plan, id=i)}">{esc(by_id[i].content)}</a>'
            for i in w["in_progress"]
            if i in by_id
        )
        + "</td></tr>"
        for w in writers
    )
    return (
        f"<h1>Sessions · {esc(view.plan)}</h1><table class=sessions><thead><tr><th>writer</th><th>kind</th>"
        f"<th>last write</th><th>changes</th><th>in progress</th></tr></thead><tbody>{rows}</tbody></table>"
    )


# timeline --------------------------------------------------------------------
MAX_TIMELINE_ITEMS = 400


def timeline(view: PlanView, spans: Sequence[Mapping[str, Any]]) -> str:
    by_id = {x.id: x for x in view.items}
    shown = list(dict.fromkeys(s["item"] for s in spans))[-MAX_TIMELINE_ITEMS:]
    keep = set(shown)
    data = {
        "statuses": list(STATUSES),
        "spans": [
            {
                "item": s["item"],
                "label": for_terminal(
                    by_id[s["item"]].content if s["item"] in by_id else s["item"] + " (removed)"
                )[:60],
                "status": s["status"],
                "start": s["start"],
                "end": s["end"],
            }
            for s in spans
            if s["item"] in keep
        ],
    }
    # JSON in a data block, never executed; "<" escaped so no text can close the block.
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace("&", "\\u0026")
    note = (
        f"<p>The {MAX_TIMELINE_ITEMS} items changed last.</p>"
        if len(keep) < len({s["item"] for s in spans})
        else ""
    )
    return (
        f"<h1>Timeline · {esc(view.plan)}</h1><p>When each item was in each status.</p>{note}"
        f'<div id=chart class=chart aria-label="status spans"></div>'
        f'<script type="application/json" id=timeline-data>{payload}</script>'
    )
