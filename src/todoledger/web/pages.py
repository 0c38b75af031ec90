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
from collections.abc import Mapping, Sequence, Set
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from todoledger.core import refusals
from todoledger.core.describe import describe_event, when
from todoledger.core.model import ITEM_STATUSES, REPORTED
from todoledger.core.sanitize import for_terminal
from todoledger.core.schedule import Schedule, format_duration
from todoledger.core.view import SHOWN, ItemView, PlanView

PAGES = (("plan", "Plan"), ("timeline", "Timeline"), ("approvals", "Approvals"), ("sessions", "Sessions"))
STATUS_MARK = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "⊘", "dropped": "⊖"}
# A plan of up to ALL_ROWS rows has every row in the page itself, so every open row is
# there on the first paint (bench/bench_board.py). A larger one is paged: PAGE_ROWS rows
# a page, with a filter on status and text, so a 20,000-item plan stays usable.
ALL_ROWS = 5000
PAGE_ROWS = 1000
# The rows go to the page in blocks of CHUNK_ROWS, each a `content-visibility: auto` box
# (board.css): the browser lays out and paints only the blocks on screen, and tracks 40
# blocks instead of 2,000 rows (bench/bench_board.py). The live script keeps the n-th row
# of the plan in block n // CHUNK_ROWS (board.js `syncRows`), so each block's first number
# stays its own.
CHUNK_ROWS = 50
FILTERS = ("all", "open", *ITEM_STATUSES)
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
    """A time to the second; a place given instead of a time (an untimed change) as it is."""
    text = at or ""
    if len(text) >= 19 and text[4] == "-" and text[10] == "T":
        return text[:19].replace("T", " ")
    return text


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
    starter: str | None = None,
    spooled: str | None = None,
    people: Mapping[str, Any] | None = None,
) -> Html:
    """A whole page: the fragment `body` inside the frame the live script refreshes.
    `sweeps`: the plan has sweeps, so its navigation links their page. `identity`:
    the writer the visitor's token makes them (None: the page's field names it).
    `starter`: who started a server no person started (the visitor has no token).
    `spooled`: the line saying hook events wait to be written, if any do.
    `people`: the ledger's person keys (`Ledger.people`): its line heads the page,
    `person keys: ann (registered at …)` or `unsigned: …` with the command that signs it."""
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
        starter=starter,
        spooled=spooled,
        people=people,
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
REFUSED_SHOWN = 20


def plan(
    view: PlanView,
    head: Html,
    rows: Sequence[Html],
    total: int,
    win: Window | None = None,
    refused: Sequence[Mapping[str, Any]] = (),
) -> Html:
    """The plan page: head (summary, what to do next), the add form, the
    rows `win` holds (every row of a plan of up to ALL_ROWS; `total` says
    how many rows the plan has in all), and the writes its writers were
    refused (`refused` ops, latest first: they change no item, so no row shows them)."""
    win = win or Window()
    shown = [
        (
            when(o),
            o["writer"],
            refusals.line(o.get("summary"), o["at"], o.get("counted"), o.get("counted_from")),
        )
        for o in list(reversed(refused))[:REFUSED_SHOWN]
    ]
    return render(
        "plan.html",
        view=view,
        head=head,
        chunks=chunks(rows),
        chunk_rows=CHUNK_ROWS,
        total=total,
        win=win,
        filters=FILTERS,
        refused=shown,
        refused_more=max(0, len(refused) - REFUSED_SHOWN),
        refused_total=refusals.how_many([o.get("counted") for o in refused]),
    )


def chunks(rows: Sequence[Html]) -> list[tuple[int, Html]]:
    """The rows in blocks of CHUNK_ROWS: (the number of rows before the block, its rows).
    Each row is markup a template made already: joined, not passed through a template again."""
    return [(start, _joined(rows[start : start + CHUNK_ROWS])) for start in range(0, len(rows), CHUNK_ROWS)]


def _joined(parts: Sequence[Html]) -> Html:
    """Rows joined as they are: each is markup a template made (`row`, `tagged`), and only
    such markup is taken. (`Markup.join` copies each part through `escape` again: a tenth
    of the 2,000-item page's render.)"""
    if not all(type(p) is Markup for p in parts):
        raise TypeError("a row must be markup a template made")
    return Markup("".join(parts))


class Window:
    """Which of a plan's rows a page holds: all of them, or past ALL_ROWS rows
    (or under a filter) one page of those that match `status` and `text`."""

    __slots__ = ("matched", "page", "paged", "pages", "status", "text")

    def __init__(self, status: str = "all", text: str = "", page: int = 1) -> None:
        self.status = status if status in FILTERS else "all"
        self.text = text.strip()[:200]
        self.page = max(1, page)
        self.pages = 1
        self.matched = 0
        self.paged = False

    @classmethod
    def of(cls, query: Mapping[str, Any]) -> Window:
        """From a page's query (`status`, `q`, `page`) or a sync request's `window`; bad values are the defaults."""
        page = query.get("page", 1)
        try:
            number = int(page)
        except (TypeError, ValueError):
            number = 1
        status, text = query.get("status", "all"), query.get("q", "")
        return cls(
            status if isinstance(status, str) else "all", text if isinstance(text, str) else "", number
        )

    @property
    def filtered(self) -> bool:
        return self.status != "all" or bool(self.text)

    def query(self, page: int) -> dict[str, str]:
        """The query of another page of this window (for its links)."""
        out = {"page": str(page)}
        if self.status != "all":
            out["status"] = self.status
        if self.text:
            out["q"] = self.text
        return out

    def pick(self, view: PlanView, folded: Set[str] = frozenset()) -> list[ItemView]:
        """The items this page holds, in the plan's tree order: only those are rendered.
        `folded` (the rows the head counts instead, `folded`) leave the table unless the
        filter asks for their status by name."""
        tree = view.tree()
        if folded and self.status not in CLOSED_UNDONE:
            tree = [it for it in tree if it.id not in folded]
        if len(tree) <= ALL_ROWS and not self.filtered:
            self.matched = len(tree)
            return tree
        wanted = self.status
        needle = self.text.casefold()

        def keep(it: ItemView) -> bool:
            if (wanted == "open" and not it.is_open) or (
                wanted not in ("all", "open") and it.status != wanted
            ):
                return False
            return not needle or needle in it.content.casefold() or needle in it.id.casefold()

        matching = [it for it in tree if keep(it)]
        self.matched = len(matching)
        self.paged = len(tree) > ALL_ROWS or len(matching) > PAGE_ROWS
        if not self.paged:
            return matching
        self.pages = max(1, -(-len(matching) // PAGE_ROWS))
        self.page = min(self.page, self.pages)
        start = (self.page - 1) * PAGE_ROWS
        return matching[start : start + PAGE_ROWS]


# Closed without being done: folded into one count on the plan's first screen, reasons on
# expansion: "dropped" (left out of a writer's list) and "cancelled" (someone's decision).
CLOSED_UNDONE = ("cancelled", "dropped")
NEXT_SHOWN = 5  # "can start now": a short list, the rest counted
BLOCKED_SHOWN = 8
PATH_ESTIMATES = 2  # the critical path means something once this many of its items have estimates
# What is proven of what is done, in the vocabulary of `core.verification`, strongest first.
PROOF_ORDER = (
    "verified",
    "accepted",
    "cross-checked",
    "self-checked",
    "typed",
    "stand-in",
    "stale",
    "reported",
    "claimed completed, gate failing",
    "claimed completed, gate not run",
)


def finished_phases(view: PlanView) -> set[str]:
    """Open items whose sub-items are all completed: phases to close, not work to start."""
    kids: dict[str, list[ItemView]] = {}
    for it in view.items:
        if it.parent:
            kids.setdefault(it.parent, []).append(it)
    return {
        it.id
        for it in view.items
        if it.is_open and kids.get(it.id) and all(k.status == "completed" for k in kids[it.id])
    }


def closed_undone(it: ItemView) -> str | None:
    """ "dropped" or "cancelled" for an item closed without being done, else None."""
    if it.status not in CLOSED_UNDONE:
        return None
    return "dropped" if it.status == "dropped" or (it.reason or "").startswith("dropped by ") else "cancelled"


def path_means_something(view: PlanView, sched: Schedule) -> bool:
    """A critical path says something once two of its items have estimates: before that it
    is one item, or a chain of unknowns, and the board does not mark it."""
    by_id = {it.id: it for it in view.items}
    return len([i for i in sched.critical_path if i in by_id and by_id[i].estimate]) >= PATH_ESTIMATES


def folded(view: PlanView) -> set[str]:
    """The items closed undone whose rows leave the plan's table (the head counts them,
    with their reasons): all of them but those with open work under them, and those a
    writer's latest list still says are being worked on (contested: the row says so)."""
    closed = {it.id for it in view.items if closed_undone(it) and not it.contested}
    keep: set[str] = set()
    parents = {it.id: it.parent for it in view.items}
    for it in view.items:
        if it.id in closed:
            continue
        up, seen = it.parent, 0
        while up is not None and seen < 32:  # a phase closed undone with live work under it stays
            keep.add(up)
            up, seen = parents.get(up), seen + 1
    return closed - keep


def plan_head(
    view: PlanView,
    sched: Schedule,
    waiting: set[str],
    standing: Mapping[str, Any],
    started_by: Mapping[str, str] | None = None,
) -> Html:
    """The plan's first screen: where we are (in progress, who started it), what is
    blocked and on what, what can start now (a short list), what is proven, and what
    was closed undone (a count; the reasons on expansion)."""
    by_id = {it.id: it for it in view.items}
    phases = finished_phases(view)
    now = [i for i in (sched.parallel[0] if sched.parallel else ()) if i not in phases]
    open_waiting = [i for i in waiting if i in by_id and by_id[i].is_open]
    show_path = path_means_something(view, sched)
    unknown = len([i for i in sched.critical_path if i in sched.unestimated])
    closed = [(it, closed_undone(it)) for it in view.items if closed_undone(it)]
    proof: dict[str, list[ItemView]] = {}
    for it in view.items:
        if it.status == "completed":
            proof.setdefault(verification_text(it).split("; ")[0] or "reported", []).append(it)
    refuted = [it for it in view.items if it.is_open and it.verification == "failed"]
    blocked = [
        (it, [by_id[d] for d in it.depends_on if d in by_id and by_id[d].status != "completed"])
        for it in view.blocked
    ]
    return render(
        "plan_head.html",
        view=view,
        sched=sched,
        standing=standing,
        by_id=by_id,
        doing=[(it, (started_by or {}).get(it.id) or it.writer) for it in view.in_progress],
        blocked=blocked[:BLOCKED_SHOWN],
        blocked_more=max(0, len(blocked) - BLOCKED_SHOWN),
        now=now[:NEXT_SHOWN],
        now_more=max(0, len(now) - NEXT_SHOWN),
        later_sets=max(0, len(sched.parallel) - 1),
        ready_waiting=not now and bool([r for r in view.ready if r.id not in phases]),
        phases=[by_id[i] for i in phases],
        waiting=waiting,
        open_waiting=open_waiting,
        path=sched.critical_path if show_path else (),
        unknown=unknown,
        length=format_duration(sched.length) if sched.length else "",
        proof=[(label, proof[label]) for label in dict.fromkeys([*PROOF_ORDER, *proof]) if label in proof],
        refuted=refuted,
        closed=closed,
        nothing_open=not any(it.is_open for it in view.items),
    )


def verification_text(it: ItemView) -> str:
    # Nothing verifies it yet: a completed item is a claim, and says so.
    # A completion whose gate fails is a claim apart from "completed"; a self-checked one
    # passed only the claimant's own check.
    shown = SHOWN.get(it.verification or "", it.verification)
    said = it.claimed or shown or (REPORTED if it.status == "completed" else "")
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
def inputs_text(tree: Mapping[str, Any] | None) -> str:
    """What a receipt depends on, for people: the files it read, its watched paths, or
    the tree (its commit and uncommitted work); `nothing of the tree` for a check that reads none."""
    if not tree:
        return "nothing of the tree"
    named = [*(tree.get("watch") or {}), *(tree.get("inputs") or {})]
    if named:
        return ", ".join(str(n) for n in named)
    return "the tree" + (f" at {str(tree['head'])[:10]}" if tree.get("head") else "")


def age_text(at: str, now_epoch: float) -> str:
    from todoledger.core.timefmt import epoch

    seconds = max(0.0, now_epoch - epoch(at[:19]))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 1.5 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def proof(
    checks: Sequence[Any],
    receipts: Sequence[Mapping[str, Any]],
    metrics: Sequence[Mapping[str, Any]],
    now_epoch: float,
) -> dict[str, list[dict[str, str]]]:
    """The item's proof, for the Proof section: each check and gate (its author, trust,
    last receipt and its age, its inputs) and each number (measured, typed or stand-in, as
    its provenance says: the verification words themselves come from the ledger)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for r in receipts:
        latest[str(r["check"])] = r
    rows = []
    for c in checks:
        last = latest.get(c.id)
        out = (last.get("output") or "").strip().splitlines() if last else []
        rows.append(
            {
                "id": c.id,
                "role": c.role,
                "spec": c.check.text(),
                "by": c.created_by,
                "trust": f"trusted by {c.trusted_by}"
                if c.trusted and c.trusted_by
                else ("trusted" if c.trusted else "not trusted"),
                "result": (str(last["result"]) + (f": {out[-1]}" if out else "")) if last else "never ran",
                "ran_by": str(last.get("by") or "") if last else "",
                "age": age_text(str(last["at"]), now_epoch) if last else "",
                "inputs": inputs_text(last.get("tree")) if last else "",
            }
        )
    numbers = [
        {
            "name": str(m["name"]),
            "value": f"{m['value']:,g}" if isinstance(m["value"], int | float) else str(m["value"]),
            "run": str(m.get("run") or ""),
            "provenance": str(m.get("provenance") or "typed"),
            "by": str(m.get("by") or m.get("writer") or ""),
        }
        for m in metrics
    ]
    return {"checks": rows, "metrics": numbers}


def item(
    view: PlanView,
    it: ItemView,
    history: Sequence[Mapping[str, Any]],
    approval: Mapping[str, Any] | None,
    waiting: bool,
    took: str | None,
    started_by: str | None = None,
    proven: Mapping[str, Any] | None = None,
    may_approve: bool = True,
) -> Html:
    by_id = {x.id: x for x in view.items}
    first = history[0] if history else None
    return render(
        "item.html",
        view=view,
        it=it,
        history=[(when(e), e["writer"], describe_event(dict(e))) for e in history],
        started_by=started_by,
        untimed=bool(first and first.get("untimed")),
        last_where=next((when(e) for e in reversed(history) if e.get("untimed")), None),
        first_where=when(first) if first and first.get("untimed") else None,
        approval=approval,
        waiting=waiting,
        took=took,
        proof=proven or {"checks": [], "metrics": []},
        may_approve=may_approve,
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
def approvals(
    view: PlanView,
    state: Mapping[str, Any],
    tasks: Sequence[Mapping[str, Any]] = (),
    forcing: Sequence[Mapping[str, Any]] = (),
) -> Html:
    """`tasks`: the plan's running and waiting MCP tasks (ledger/tasks.py rows), each
    with `stopped`: why its worker is gone (`ledger.tasks.lapsed`), else None. A stopped
    task is shown stopped, never running. Their status messages carry agents' text (a
    sweep's parameters, a refusal): text only. `forcing`: those that wait for a person's
    consent to complete an item past a person's gate (web/app.py `forcing_waits`), each
    shown with what it would do (the item, whose gate, its check, the agent's reason,
    what else it changes: agents' text, as text) and the button that consents to it."""
    from todoledger.ledger.tasks import stopped_line

    by_id = {x.id: x for x in view.items}
    waiting = [
        (by_id[item_id], state["items"][item_id]["diff"]) for item_id in state["waiting"] if item_id in by_id
    ]
    shown = [{**t, "stopped": stopped_line(t["stopped"]) if t.get("stopped") else None} for t in tasks]
    forces = {str(w["task"]): w for w in forcing}
    return render(
        "approvals.html", view=view, standing=state["plan"], waiting=waiting, tasks=shown, forcing=forces
    )


# sessions --------------------------------------------------------------------
def sessions(view: PlanView, writers: Sequence[Mapping[str, Any]]) -> Html:
    return render("sessions.html", view=view, writers=writers, by_id={x.id: x for x in view.items})


# timeline --------------------------------------------------------------------
def timeline(view: PlanView, spans: Sequence[Mapping[str, Any]], ticks: Sequence[str] | None = None) -> Html:
    """When each item was in each status, one row per item in plan order (phases first,
    their items under them; removed items last), with the whole text as its label. With
    `ticks` the plan has no clock: `start` and `end` are steps, each tick names its call."""
    by_id = {x.id: x for x in view.items}
    changed = list(dict.fromkeys(s["item"] for s in spans))
    keep = set(changed[-MAX_TIMELINE_ITEMS:])
    order = [it.id for it in view.tree() if it.id in keep] + [
        i for i in changed if i in keep and i not in by_id
    ]
    rank = {item: n for n, item in enumerate(order)}
    data = {
        "statuses": list(ITEM_STATUSES),  # dropped spans are drawn too
        "axis": "sequence" if ticks is not None else "time",
        "ticks": list(map(for_terminal, ticks or ())),
        "order": order,
        "labels": {i: for_terminal(by_id[i].content if i in by_id else i + " (removed)") for i in order},
        "spans": sorted(
            (
                {"item": s["item"], "status": s["status"], "start": s["start"], "end": s["end"]}
                for s in spans
                if s["item"] in keep
            ),
            key=lambda s: rank[s["item"]],
        ),
    }
    return render(
        "timeline.html",
        view=view,
        data=data,
        limit=MAX_TIMELINE_ITEMS,
        cut=len(keep) < len(changed),
        untimed=ticks is not None,
    )
