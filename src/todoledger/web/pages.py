"""The board's pages as HTML: data in, markup out, through the Jinja2
templates in `templates/`.

Escaping is the templates' default, not a discipline: the environment
autoescapes, and every value a template prints (`{{ ... }}`) first goes
through the one sanitiser (`for_terminal`: control characters marked,
invisible ones removed), so any text an agent (or anyone) wrote renders as
text, never as markup. No template marks agent text safe. No link is built
from agent text: links carry ids and plan names only, URL-quoted and escaped.

Each function returns `Html`: the output of an autoescaping template, which
a template may then hold as it is (a row inside the plan, a page's body
inside the frame).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from todoledger.core.model import STATUSES
from todoledger.core.sanitize import for_terminal
from todoledger.core.schedule import Schedule, format_duration
from todoledger.core.view import ItemView, PlanView

PAGES = (("plan", "Plan"), ("timeline", "Timeline"), ("approvals", "Approvals"), ("sessions", "Sessions"))
STATUS_MARK = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "⊘", "dropped": "⊖"}
FIRST_ROWS = 200  # rows in the page itself; the script fetches the rest after the first paint
MAX_TIMELINE_ITEMS = 400

Html = Markup  # markup a template made (its values escaped): what the functions here return


class _Lines(str):
    """Multi-line text (notes, evidence), sanitised with its line breaks kept
    (CSS shows them); still escaped like any other text."""


def _lines(value: object) -> _Lines:
    return _Lines(for_terminal(value, newlines=True))


def _shown(value: object) -> object:
    """What a template prints, before autoescape: sanitised text (None is no
    text). Markup passes as it is: only templates make it here (a macro, a
    fragment rendered before), from values that passed here themselves."""
    if isinstance(value, (Markup, _Lines)):
        return value
    return for_terminal(value)


def url(path: str, **query: str) -> str:
    """A link within the board (the template escapes it)."""
    return f"{path}?{urlencode(query)}" if query else path


def _quoted(value: str) -> str:
    return quote(value, safe="")


def _short_time(at: str | None) -> str:
    return (at or "")[:19].replace("T", " ")


def _value(value: Any) -> str:
    """A field's value in a history or a diff: text as it is, anything else as JSON."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


_env = Environment(
    loader=PackageLoader("todoledger.web", "templates"),
    autoescape=True,
    finalize=_shown,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,
)
_env.filters.update(lines=_lines, q=_quoted, short_time=_short_time, value=_value)
_env.globals.update(url=url)
# `tojson` writes JSON for a data block: "<", ">", "&" and "'" escaped (no text can close
# the block), and, with its default ASCII output, no control or invisible character raw.


def render(name: str, /, **context: Any) -> Html:
    # An autoescaping template's output is markup by construction (every value
    # in it was sanitised and escaped on the way in): it may sit in another page.
    return Markup(_env.get_template(name).render(**context))


def page(
    *,
    title: str,
    body: Html,
    kind: str,
    plan: str | None,
    csrf: str,
    change: int,
    who: str,
    identity: str | None = None,
    scripts: Sequence[str] = (),
    version: str = "",
    sweeps: bool = False,
) -> Html:
    """A whole page: the fragment `body` inside the frame the live script refreshes.
    `sweeps`: the plan has sweeps, so its navigation links their page. `identity`:
    the writer the visitor's token makes them (None: the page's field names it)."""
    nav: Sequence[tuple[str, str]] = ()
    if plan is not None:
        nav = (*PAGES, ("sweeps", "Sweeps")) if sweeps or kind == "sweeps" else PAGES
    return render(
        "page.html",
        title=title,
        body=body,
        kind=kind,
        plan=plan,
        csrf=csrf,
        change=change,
        who=who,
        identity=identity,
        agent=identity is not None and not identity.startswith("web:"),
        scripts=scripts,
        version=version,
        nav=nav,
    )


def login(error: str | None = None) -> Html:
    return render("login.html", error=error)


def not_found(error: object) -> Html:
    return render("not_found.html", error=error)


# plans -----------------------------------------------------------------------
def plans(rows: Sequence[Mapping[str, Any]]) -> Html:
    return render("plans.html", rows=rows)


# a plan ----------------------------------------------------------------------
def plan(view: PlanView, head: Html, rows: Sequence[Html], total: int) -> Html:
    """The plan page: head (summary, what to do next), the add form, and the
    first rows; `total` says how many rows the plan has in all."""
    return render("plan.html", view=view, head=head, rows=rows, total=total)


def plan_head(view: PlanView, sched: Schedule, waiting: set[str], standing: Mapping[str, Any]) -> Html:
    by_id = {it.id: it for it in view.items}
    now = sched.parallel[0] if sched.parallel else ()
    open_waiting = [i for i in waiting if i in by_id and by_id[i].is_open]
    unknown = len([i for i in sched.critical_path if i in sched.unestimated])
    length = format_duration(sched.length) if sched.length else "no estimates"
    anything = bool(
        view.in_progress
        or now
        or view.ready
        or len(sched.parallel) > 1
        or open_waiting
        or view.blocked
        or sched.critical_path
    )
    return render(
        "plan_head.html",
        view=view,
        sched=sched,
        standing=standing,
        by_id=by_id,
        now=now,
        waiting=waiting,
        open_waiting=open_waiting,
        unknown=unknown,
        length=length,
        anything=anything,
    )


def verification_text(it: ItemView) -> str:
    # Nothing verifies it yet: a completed item is a claim, and says so.
    # A completion whose gate fails is a claim apart from "completed"; a self-checked one
    # passed only the claimant's own check.
    said = it.claimed or it.verification or ("claimed, not verified" if it.status == "completed" else "")
    # A status someone forced says what it overrode, beside how it is verified.
    return "; ".join([said, *it.forced] if said else it.forced)


def row(
    plan: str,
    it: ItemView,
    critical: bool,
    parallel: int | None,
    waiting: bool,
    dep_status: Mapping[str, str],
) -> Html:
    """One item's row; a pure function of its arguments (the server caches it)."""
    classes = ["row", f"st-{it.status}"]
    # Closed here while an agent's latest list works on it: said on its row, never hidden.
    tags = [("contested", label) for label in it.contested]
    if it.contested:
        classes.append("contested")
    if critical:
        classes.append("crit")
        tags.append(("crit", "critical path"))
    if parallel is not None:
        classes.append(f"par par{min(parallel, 5)}")
        tags.append(("par", "now" if parallel == 0 else f"set {parallel + 1}"))
    if waiting:
        classes.append("awaiting")
        tags.append(("gate", "needs approval"))
    elif it.needs_approval:
        tags.append(("ok", "approved"))
    return render(
        "row.html",
        plan=plan,
        it=it,
        classes=" ".join(classes),
        tags=tags,
        mark=STATUS_MARK.get(it.status, ""),
        deps=[(d, dep_status.get(d, "")) for d in it.depends_on],
        verification=verification_text(it),
        flag=it.flag(),
    )


def tagged(row_html: Html, h: str) -> Html:
    """The row as the page holds it: `data-h` names the form of the row (a hash of it)."""
    return row_html.replace(Markup(" data-id="), Markup(' data-h="%s" data-id=') % h, 1)


# an item ---------------------------------------------------------------------
def item(
    view: PlanView,
    it: ItemView,
    history: Sequence[Mapping[str, Any]],
    approval: Mapping[str, Any] | None,
    waiting: bool,
    took: str | None,
) -> Html:
    by_id = {x.id: x for x in view.items}
    return render(
        "item.html",
        view=view,
        it=it,
        history=history,
        approval=approval,
        waiting=waiting,
        took=took,
        verification=verification_text(it),
        waits_for=[by_id[d] for d in it.depends_on if d in by_id],
        waited_by=[x for x in view.items if it.id in x.depends_on],
        children=[x for x in view.items if x.parent == it.id],
        texts=[
            (label, value)
            for label, value in (("evidence", it.evidence), ("reason", it.reason), ("notes", it.notes))
            if value
        ],
    )


# approvals -------------------------------------------------------------------
def approvals(view: PlanView, state: Mapping[str, Any]) -> Html:
    by_id = {x.id: x for x in view.items}
    waiting = [
        (by_id[item_id], state["items"][item_id]["diff"]) for item_id in state["waiting"] if item_id in by_id
    ]
    return render("approvals.html", view=view, standing=state["plan"], waiting=waiting)


# sessions --------------------------------------------------------------------
def sessions(view: PlanView, writers: Sequence[Mapping[str, Any]]) -> Html:
    return render("sessions.html", view=view, writers=writers, by_id={x.id: x for x in view.items})


# timeline --------------------------------------------------------------------
def timeline(view: PlanView, spans: Sequence[Mapping[str, Any]]) -> Html:
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
    return render(
        "timeline.html",
        view=view,
        data=data,
        limit=MAX_TIMELINE_ITEMS,
        cut=len(keep) < len({s["item"] for s in spans}),
    )
