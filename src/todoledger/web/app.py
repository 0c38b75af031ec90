"""The board's routes: pages, the live event stream, static files, and the
one steering endpoint. Mounted by `todoledger serve` next to MCP, behind the
same Host/Origin checks and token (`mcp/http.py`'s Guard).

Writes from the page are the service's own calls, with the same merge
rules, history and undo as every writer. Who writes comes from the token
(the Guard sets it, `writer_of`): `web:<person>` under a person's token,
`<agent>@web` under an agent's, whatever the request says; only without a
token's identity (no token, or a single `--token` on loopback: the person who
started the server) does the page's "you are" field name the writer.
State-changing requests carry the page's CSRF token in a header and a JSON
body (a cross-site form can send neither).
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from todoledger.core.cycles import acyclic
from todoledger.core.model import LedgerError
from todoledger.core.schedule import Schedule, split_uses
from todoledger.core.timefmt import now
from todoledger.core.view import ItemView, PlanView, build
from todoledger.defaults import default_plan
from todoledger.ledger import Ledger
from todoledger.ledger.shared import SharedLedger
from todoledger.tokens import IDENTITY_HEADER, ROLE_HEADER, STARTER_ROLE
from todoledger.web import pages, sweeps_page
from todoledger.web.live import RETRY_SECONDS, Hub, Streams

T = TypeVar("T")
# A plan page's parts: its head, its window's rows as (id, hash, html), the view they show.
Parts = tuple[pages.Html, list[tuple[str, str, pages.Html]], PlanView]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.tokens import Holder

TOKEN_COOKIE = "todoledger_token"  # the name mcp/http.py's Guard reads
MAX_ACTION_BYTES = 64 * 1024
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,40}")
_TASK_ID = re.compile(r"[0-9a-f]{32}")
# What only a person does from the board: an agent's token is refused these at once.
# `approve_task`: the item's approval naming an agent's waiting MCP task, which lets it
# complete the item past a person's gate (`todoledger approve ID --task TASK`).
PERSON_ONLY_ACTIONS = ("approve", "approve_plan", "approve_task")
# What each of them is, in a refusal's words.
PERSON_ONLY_WHAT = {
    "approve": "approve",
    "approve_plan": "approve the plan",
    "approve_task": "let an agent's task complete an item past a person's gate",
}
STATIC = {
    "board.js": "text/javascript; charset=utf-8",
    "board.css": "text/css; charset=utf-8",
}
# Pages run our own scripts only: no inline script, no eval, nothing from elsewhere.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:;"
        " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" would send form posts with Origin: null
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def plotly_js() -> bytes:
    """Plotly's own bundle, shipped inside the `plotly` package: no CDN (found
    without importing plotly's Python side, which the board does not use)."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "package_data" / "plotly.min.js"
        if path.is_file():
            return path.read_bytes()
    raise LedgerError("the timeline needs plotly (pip install plotly)")


class Board:
    def __init__(
        self,
        *,
        plan: str | None = None,
        token: str | None = None,
        name: str | None = None,
        cwd: Path | None = None,
        allow_checks: bool = False,
        shared: SharedLedger | None = None,
        identities: dict[str, Holder] | None = None,
        starter: str | None = None,
    ) -> None:
        self.plan = plan
        # Who started the server when no person did: then no one on the page is a person
        # but the holder of a person's token (the Guard sets the role `starter` otherwise).
        self.starter = starter
        # serve --tokens (SHA-256 -> holder): /login takes any of their tokens (the Guard then
        # reads the cookie's holder).
        self.identities = identities or {}
        # A button is no way to run a command on this machine: checks run only
        # where `serve --allow-checks` says so (a gate of `done` included).
        self.allow_checks = allow_checks
        self.token = token
        self.cwd = cwd
        self.name = name if name and _NAME.fullmatch(name) else _user()
        self.csrf = secrets.token_urlsafe(32)
        self.shared = shared if shared is not None else SharedLedger(cwd)
        self.rows = RowCache()
        # Per plan, the last page's parts with everything they were made from (`_plan_parts`).
        self.parts: dict[str, tuple[tuple[Any, ...], Parts, tuple[int, int, int, bool]]] = {}
        # Static files are cached for good under a name that changes with them.
        self.version = hashlib.blake2b(
            b"".join(_static(name) for name in sorted(STATIC)), digest_size=6
        ).hexdigest()
        self.hub = Hub(lambda: self.locked(lambda lg: int(lg.last_change())))
        self.streams = Streams()

    # the ledger ----------------------------------------------------------------
    def locked(self, fn: Callable[[Ledger], T], *, write: bool = False) -> T:
        """Run `fn` on the ledger (a pooled connection of its own on PostgreSQL;
        SQLite's one connection, one call at a time). Until the ledger exists,
        reads see it empty and create nothing; the first write creates it."""
        with self.shared.session(run_checks=self.allow_checks, route="web") as ledger:
            out = fn(ledger(write))
            if write:
                _panel(ledger(write), self.cwd)
            return out

    def close(self) -> None:
        self.shared.close()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.page_plans, name="board_plans"),
            Route("/plan", self.page_plan, name="board_plan"),
            Route("/item", self.page_item, name="board_item"),
            Route("/timeline", self.page_timeline, name="board_timeline"),
            Route("/approvals", self.page_approvals, name="board_approvals"),
            Route("/sessions", self.page_sessions, name="board_sessions"),
            Route("/sweeps", self.page_sweeps, name="board_sweeps"),
            Route("/events", self.events, name="board_events"),
            Route("/static/{name}", self.static, name="board_static"),
            Route("/api/action", self.action, methods=["POST"], name="board_action"),
            Route("/api/rows", self.sync_rows, methods=["POST"], name="board_rows"),
            Route("/login", self.login, methods=["GET", "POST"], name="board_login"),
        ]

    # pages -----------------------------------------------------------------------
    async def _page(
        self,
        request: Request,
        kind: str,
        build_body: Callable[[Ledger, str], tuple[str, pages.Html]],
        scripts: tuple[str, ...] = (),
    ) -> Response:
        plan = request.query_params.get("plan") or self.plan or default_plan()

        def render(lg: Ledger) -> tuple[str, pages.Html, int, bool, dict[str, Any] | None]:
            # The change number is read before what it stamps: a change that lands in
            # between is then newer than the page says, and its event brings it in.
            change = int(lg.last_change())
            title, body = build_body(lg, plan)
            has_sweeps = kind != "plans" and lg.exists and bool(lg.sweeps(plan=plan))
            # Who can sign here, as show, doctor and the report say it (`Ledger.people`).
            people = lg.people() if lg.exists else None
            return title, body, change, has_sweeps, people

        status, people = 200, None
        try:
            title, body, change, has_sweeps, people = await run_in_threadpool(self.locked, render)
        except LedgerError as exc:
            title, body, change = "not found", pages.not_found(exc), 0
            status, has_sweeps = 404, False
        if request.headers.get("x-fragment") == "1":  # the live script swaps the content only
            return HTMLResponse(
                body, status_code=status, headers=SECURITY_HEADERS | {"x-change": str(change)}
            )
        html = pages.page(
            title=title,
            body=body,
            kind=kind,
            plan=None if kind == "plans" else plan,
            csrf=self.csrf,
            change=change,
            who=self.name,
            identity=token_identity(request),
            starter=self.starter if request.headers.get(ROLE_HEADER) == STARTER_ROLE else None,
            scripts=scripts,
            version=self.version,
            sweeps=has_sweeps,
            spooled=self.spooled(),
            people=people,
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def may_approve(self, request: Request) -> bool:
        """Whether this viewer is a person who may approve: not an agent's token, and not on a
        server no person started (then no one here is a person). No button for those who cannot."""
        identity = token_identity(request)
        if identity is not None and request.headers.get(ROLE_HEADER) in ("agent", STARTER_ROLE):
            return False
        return not (self.starter and request.headers.get(ROLE_HEADER) == STARTER_ROLE)

    def spooled(self) -> str | None:
        """The line saying hook events wait in the spool (the ledger was unavailable
        to them), so that a person sees the plan may be behind its agents."""
        from todoledger.store.locate import spooled_line

        try:
            return spooled_line(str(self.cwd) if self.cwd is not None else None)
        except LedgerError:  # a setting the server could not read: its own start said so
            return None

    async def page_plans(self, request: Request) -> Response:
        def body(lg: Ledger, _plan: str) -> tuple[str, pages.Html]:
            last = lg.last_changes()
            rows = []
            for p in lg.plans():
                view = lg.view(p["plan"])
                verification: dict[str, int] = {}
                for it in view.items:
                    text = pages.verification_text(it)
                    if text:
                        verification[text] = verification.get(text, 0) + 1
                started = lg.started_by(p["plan"]) if view.in_progress else {}
                rows.append(
                    {
                        "plan": p["plan"],
                        "counts": view.counts,
                        "verification": verification,
                        # who does it: the writer who started it, not the last to touch it
                        "in_progress": [
                            {"id": it.id, "content": it.content, "writer": started.get(it.id) or it.writer}
                            for it in view.in_progress
                        ],
                        "last": last.get(p["plan"]),
                    }
                )
            return "Plans", pages.plans(rows)

        return await self._page(request, "plans", body)

    async def page_plan(self, request: Request) -> Response:
        win = pages.Window.of(request.query_params)

        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            head, rows, view = self._plan_parts(lg, plan, win)
            refused = [o for o in lg.ops(plan) if o["kind"] == "refused"]
            return f"Plan {plan}", pages.plan(
                view, head, [html for _, _, html in rows], len(view.items), win, refused
            )

        return await self._page(request, "plan", body)

    @acyclic
    def _plan_parts(self, lg: Ledger, plan: str, win: pages.Window) -> Parts:
        """The plan's head and the rows `win` holds as (id, hash, html), in tree
        order: a paged plan renders only its page's rows.

        What they are made of is read every time (the items as `show` gives them, their
        verification included, the approvals, who started what); the rest is a pure
        function of that and of the window. Where all of it equals the last page's, its
        parts are that page's (the schedule and the head of a 2,000-item plan cost a
        third of its server time): nothing that could differ is ever reused."""
        doc = lg.show(plan)
        state = lg.approvals(plan, rows=doc["items"])
        doing = [r["id"] for r in doc["items"] if r["status"] == "in_progress"]
        started = lg.started_by(plan, ids=doing) if doing else {}
        made_of = (doc, state, started, win.status, win.text, win.page)
        last = self.parts.get(plan)
        if last is not None and last[0] == made_of:
            win.matched, win.page, win.pages, win.paged = last[2]
            return last[1]
        parts = self._made_parts(doc, state, started, win)
        self.parts[plan] = (made_of, parts, (win.matched, win.page, win.pages, win.paged))
        return parts

    def _made_parts(
        self, doc: dict[str, Any], state: dict[str, Any], started: dict[str, str], win: pages.Window
    ) -> Parts:
        view = build(doc)
        sched = view.schedule()
        waiting = set(state["waiting"])
        head = pages.plan_head(view, sched, waiting, state["plan"], started)
        # What was closed undone is folded into the head (a count, its reasons on expansion):
        # its rows leave the table, unless open work sits under them (or a filter asks for them).
        folded = pages.folded(view)
        # No row is marked on a path that says nothing, nor a finished phase as work to start now.
        phases = pages.finished_phases(view)
        path = sched.critical_path if pages.path_means_something(view, sched) else ()
        sets = tuple(s for s in (tuple(i for i in group if i not in phases) for group in sched.parallel) if s)
        sched = Schedule(path, sched.length, sched.unestimated, sets, sched.held)
        return head, self.rows.render(view, sched, waiting, win.pick(view, folded)), view

    async def sync_rows(self, request: Request) -> Response:
        """The plan page's rows the page lacks or holds in an older form, the
        order of all of them (of its window, for a paged plan), and the head:
        how a large plan stays live."""
        if not request.headers.get("content-type", "").startswith("application/json"):
            return JSONResponse({"error": "send JSON (application/json)"}, status_code=415)
        raw = await request.body()
        try:
            body = json.loads(raw) if len(raw) <= 2 * 1024 * 1024 else None
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("known"), dict):
            return JSONResponse({"error": 'send {"plan": ..., "known": {id: hash}}'}, status_code=400)
        known: dict[str, Any] = body["known"]
        plan = body.get("plan")
        name = plan if isinstance(plan, str) and plan else self.plan or default_plan()

        asked = body.get("window")
        win = pages.Window.of(asked if isinstance(asked, dict) else {})

        def collect(lg: Ledger) -> dict[str, Any]:
            change = int(lg.last_change())  # first, as in `_page`: never newer than the rows
            head, rows, _ = self._plan_parts(lg, name, win)  # the page's own window: a paged plan stays paged
            return {
                "change": change,
                "head": head,
                "order": [item_id for item_id, _, _ in rows],
                "rows": {item_id: html for item_id, h, html in rows if known.get(item_id) != h},
            }

        return JSONResponse(await run_in_threadpool(self.locked, collect))

    async def page_item(self, request: Request) -> Response:
        ref = request.query_params.get("id", "")

        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            item_id = lg.get(ref, plan)["id"]
            view = _view(lg, plan)
            it = next(x for x in view.items if x.id == item_id)
            state = lg.approvals(plan)
            from todoledger.core.timefmt import epoch, now

            proven = pages.proof(
                [c for c in lg.checks(plan=plan) if c.item == item_id],
                lg.receipts(item_id, plan=plan),
                lg.metrics(item_id, plan=plan),
                float(epoch(now()[:19])),
            )
            html = pages.item(
                view,
                it,
                lg.history(plan, item_id),
                state["items"].get(item_id),
                item_id in state["waiting"],
                lg.durations(plan).get(item_id),
                lg.started_by(plan).get(item_id) if it.status == "in_progress" else None,
                proven,
                self.may_approve(request),
            )
            return it.content[:80], html

        return await self._page(request, "item", body)

    async def page_timeline(self, request: Request) -> Response:
        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            from todoledger.core.timeline import by_sequence, spans

            events = lg.history(plan)
            if any(e.get("untimed") for e in events):  # no clock: the calls in order, no durations
                ordered, ticks = by_sequence(events)
                return f"Timeline {plan}", pages.timeline(_view(lg, plan), ordered, ticks)
            # Spans run to the plan's last change: an old plan's chart is not stretched to today.
            until = events[-1]["at"] if events else now()
            return f"Timeline {plan}", pages.timeline(_view(lg, plan), spans(events, until))

        return await self._page(request, "timeline", body, scripts=("/static/plotly.min.js",))

    async def page_approvals(self, request: Request) -> Response:
        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            from todoledger.ledger.tasks import lapsed

            # A task whose worker is gone is stopped, as `todoledger tasks` says: never running.
            tasks = [t | {"stopped": lapsed(t)} for t in lg.tasks() if t["plan"] == plan] if lg.exists else []
            forcing = forcing_waits(lg, plan) if tasks else []
            return f"Approvals {plan}", pages.approvals(_view(lg, plan), lg.approvals(plan), tasks, forcing)

        return await self._page(request, "approvals", body)

    async def page_sessions(self, request: Request) -> Response:
        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            return f"Sessions {plan}", pages.sessions(_view(lg, plan), lg.writers(plan))

        return await self._page(request, "sessions", body)

    async def page_sweeps(self, request: Request) -> Response:
        def body(lg: Ledger, plan: str) -> tuple[str, pages.Html]:
            listed = lg.sweeps(plan=plan) if lg.exists else []
            found = [(entry, lg.sweep_results(entry["name"], plan=plan)) for entry in listed]
            return f"Sweeps {plan}", sweeps_page.page(plan, found)

        return await self._page(request, "sweeps", body, scripts=("/static/plotly.min.js",))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        cache = "max-age=31536000, immutable" if request.query_params.get("v") == self.version else "no-cache"
        headers = {"cache-control": cache, "x-content-type-options": "nosniff"}
        if name == "plotly.min.js":
            data = await run_in_threadpool(plotly_js)
            return Response(data, media_type="text/javascript; charset=utf-8", headers=headers)
        if name not in STATIC:
            return Response("not found", status_code=404)
        return Response(_static(name), media_type=STATIC[name], headers=headers)

    async def events(self, request: Request) -> Response:
        client = request.client.host if request.client else ""
        refused = self.streams.open(client)
        if refused is not None:
            status, why = refused
            headers = {"retry-after": str(RETRY_SECONDS), **SECURITY_HEADERS}
            return Response(why + "\n", status_code=status, media_type="text/plain", headers=headers)
        return _Counted(
            self.hub.stream(),
            lambda: self.streams.close(client),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    # the token, asked once -------------------------------------------------------
    async def login(self, request: Request) -> Response:
        if self.token is None and not self.identities and self.starter is None:
            return RedirectResponse("/", status_code=303)
        if request.method == "GET":
            return HTMLResponse(pages.login(), headers=SECURITY_HEADERS)
        body = (await request.body())[:4096].decode("utf-8", "replace")
        given = (parse_qs(body).get("token") or [""])[0].strip()
        match = bool(self.token) and hmac.compare_digest(given.encode(), str(self.token).encode())
        if self.identities:  # serve --tokens keeps hashes: the given token's, against every one
            from todoledger.tokens import token_digest

            hexed = token_digest(given).encode()
            for known in self.identities:  # every one compared, in constant time
                match = hmac.compare_digest(hexed, known.encode()) or match
        if given and not match:  # a token a person registered in the ledger
            match = await run_in_threadpool(lambda: self.shared.token_holder(given)) is not None
        if not given or not match:
            return HTMLResponse(
                pages.login("That is not the token."), status_code=401, headers=SECURITY_HEADERS
            )
        answer = RedirectResponse("/", status_code=303)
        answer.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict", path="/")
        return answer

    # steering --------------------------------------------------------------------
    async def action(self, request: Request) -> Response:
        given = request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(given.encode(), self.csrf.encode()):
            return JSONResponse({"error": "missing or wrong CSRF token: reload the page"}, status_code=403)
        if not request.headers.get("content-type", "").startswith("application/json"):
            return JSONResponse({"error": "send JSON (application/json)"}, status_code=415)
        raw = await request.body()
        if len(raw) > MAX_ACTION_BYTES:
            return JSONResponse({"error": f"request over {MAX_ACTION_BYTES} bytes"}, status_code=413)
        try:
            body = json.loads(raw)
        except ValueError:
            return JSONResponse({"error": "the request is not JSON"}, status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("action"), str):
            return JSONResponse({"error": 'the request needs an "action"'}, status_code=400)
        writer, person = writer_of(request, body.get("who"), self.name)
        if not person and body["action"] in PERSON_ONLY_ACTIONS:
            what = PERSON_ONLY_WHAT[body["action"]]
            who = (
                f"{writer}: this server was started by {self.starter}, not a person"
                if request.headers.get(ROLE_HEADER) == STARTER_ROLE
                else f"{writer} holds an agent's token"
            )
            return await self._refused(
                body,
                writer,
                f"{who}: only a person can {what}; a person must do it, under a person's"
                " token (log in at /login) or from a terminal",
                403,
            )
        passphrase = body.pop("passphrase", None)
        signer = None
        if body["action"] in PERSON_ONLY_ACTIONS and isinstance(passphrase, str) and passphrase:
            identity = request.headers.get(IDENTITY_HEADER)
            if not identity:  # no token showed who types: a signature is a token's person's, or none
                return await self._refused(
                    body,
                    writer,
                    "a signed approval on the board needs a person's token (log in at /login)",
                    403,
                )
            from todoledger.personkeys import unlock_named

            try:  # decrypted in this server's memory, for this one signature
                signer = await run_in_threadpool(unlock_named, identity, passphrase, "web")
            except LedgerError as exc:
                return await self._refused(body, writer, str(exc), 400)
        try:
            result = await run_in_threadpool(
                lambda: self.locked(lambda lg: steer(lg, body, writer, signer), write=True)
            )
        except NeedsSignature as exc:  # the page asks for the passphrase and sends it again: no refusal yet
            return JSONResponse({"error": str(exc), "sign": True}, status_code=400)
        except LedgerError as exc:
            return await self._refused(body, writer, str(exc), 400)
        return JSONResponse({"ok": True, "writer": writer, **result})

    async def _refused(self, body: dict[str, Any], writer: str, reason: str, status: int) -> Response:
        """A board action refused (a non-person's approval, a lease fence, lint...): recorded in
        its plan's story with its writer and reason, as on every route (issue 31); nothing else
        changes, and the page reads the same one line. A plan that does not exist gets none
        (`record_refusal` creates no plan); a failure to record never changes the answer."""
        plan = body.get("plan") if isinstance(body.get("plan"), str) and body.get("plan") else None
        line = f"board {body['action']}: {reason}"

        def note() -> None:  # not through `locked`: a refusal changes no item, so no panel to sync
            with self.shared.session(run_checks=False, route="web") as ledger:
                target = plan or default_plan()
                if any(p["plan"] == target for p in ledger(False).plans()):  # else no ledger is made for it
                    ledger(True).record_refusal(line, plan=target, writer=writer)

        with contextlib.suppress(
            Exception
        ):  # an unreadable plan name, a read-only ledger: the answer still goes out
            await run_in_threadpool(note)
        return JSONResponse({"error": reason}, status_code=status)


class _Counted(StreamingResponse):
    """An event stream that gives its place back (`Streams.close`) however it ends."""

    def __init__(self, content: Any, release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _static(name: str) -> bytes:
    return resources.files("todoledger.web").joinpath("static", name).read_bytes()


class RowCache:
    """Each plan's rows as rendered last: a row is rendered again only when
    what it shows changed, so a 2,000-item plan refreshes in milliseconds."""

    def __init__(self) -> None:
        self.plans: dict[str, dict[str, tuple[Any, str, pages.Html]]] = {}

    def render(
        self, view: PlanView, sched: Any, waiting: set[str], items: Sequence[ItemView]
    ) -> list[tuple[str, str, pages.Html]]:
        """The rows of `items` (the page's, in tree order), each rendered again only when it changed."""
        crit = set(sched.critical_path)
        set_of = {item_id: n for n, members in enumerate(sched.parallel) for item_id in members}
        status = {it.id: it.status for it in view.items}
        old = self.plans.get(view.plan, {})
        new: dict[str, tuple[Any, str, pages.Html]] = {}
        out = []
        for it in items:
            deps = {d: status.get(d, "") for d in it.depends_on}
            key = (it, it.id in crit, set_of.get(it.id), it.id in waiting, tuple(deps.items()))
            cached = old.get(it.id)
            if cached is None or cached[0] != key:
                html = pages.row(view.plan, it, key[1], key[2], key[3], deps)
                h = hashlib.blake2b(html.encode(), digest_size=8).hexdigest()
                # The page tells the server which form of each row it holds.
                cached = (key, h, pages.tagged(html, h))
            new[it.id] = cached
            out.append((it.id, cached[1], cached[2]))
        self.plans[view.plan] = new
        return out


def token_identity(request: Request) -> str | None:
    """The writer the request's token makes it (see `writer_of`), or None: the page's field names it."""
    identity = request.headers.get(IDENTITY_HEADER)
    if not identity:
        return None
    return f"web:{identity}" if request.headers.get(ROLE_HEADER) == "person" else f"{identity}@web"
    # (role `starter`: no person started the server, and the writer is the starter's, `<starter>@web`)


def writer_of(request: Request, who: Any, name: str) -> tuple[str, bool]:
    """Who writes this request, and whether that is a person. Under a token's
    identity (set by the Guard, never by the client) the token decides and
    `who` is ignored: `web:<person>` for a person's token, `<agent>@web` for an
    agent's. Without one (no token; a single --token on loopback) the page's
    `who` names the person, `web:<who>`, as before."""
    identity = request.headers.get(IDENTITY_HEADER)
    if identity:
        person = request.headers.get(ROLE_HEADER) == "person"
        return (f"web:{identity}" if person else f"{identity}@web"), person
    return "web:" + (who if isinstance(who, str) and _NAME.fullmatch(who) else name), True


def _user() -> str:
    try:
        name = getpass.getuser()
    except Exception:  # no passwd entry (a container): a plain name still says it is a person
        name = "user"
    return name if _NAME.fullmatch(name) else "user"


def _view(lg: Ledger, plan: str) -> PlanView:
    return build(lg.show(plan))


def _text(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise LedgerError(f'"{name}" must be text')
    return value


class NeedsSignature(LedgerError):
    """A person-only action on a signed ledger, asked without a passphrase."""


def steer(lg: Ledger, body: dict[str, Any], writer: str, signer: Any = None) -> dict[str, Any]:
    """One change from the page, through the service as `writer`; `signer`: the
    person's key, unlocked with the passphrase typed in the page for this action only."""
    if body["action"] in PERSON_ONLY_ACTIONS and lg.signed():
        if signer is None:
            ref = body.get("id") if isinstance(body.get("id"), str) else ""
            plan = (
                body.get("plan") if isinstance(body.get("plan"), str) and body.get("plan") else default_plan()
            )
            command = (
                f"todoledger approve {ref} --plan {plan}" if ref else f"todoledger approve --plan {plan}"
            )
            task = body.get("task")
            if body["action"] == "approve_task" and isinstance(task, str) and _TASK_ID.fullmatch(task):
                command += f" --task {task}"
            # A bearer token is no signature.
            raise NeedsSignature(
                "this ledger is signed: an approval is a person's signature, and a board's token makes none;"
                f" type your passphrase (a board you serve holds your key), or sign it at your own terminal: {command}"
            )
        lg.sign_with(signer)
        try:
            done = _steer(lg, body, str(signer.writer))
            lg.remember_head()
            return done
        finally:
            lg.sign_with(None)  # the key leaves this server's memory with the request
    return _steer(lg, body, writer)


def _steer(lg: Ledger, body: dict[str, Any], writer: str) -> dict[str, Any]:
    """One change from the page, through the service as `writer`."""
    action = body["action"]
    plan = body.get("plan") if isinstance(body.get("plan"), str) and body.get("plan") else default_plan()
    assert isinstance(plan, str)
    kw: dict[str, Any] = {"plan": plan, "writer": writer}
    ref = body.get("id") if isinstance(body.get("id"), str) else ""
    if action == "add":
        row = lg.add(
            _text(body, "content"),
            priority=body.get("priority") or None,
            estimate=_text(body, "estimate", required=False).strip() or None,
            uses=split_uses(_text(body, "uses", required=False)),
            needs_approval=body.get("needs_approval") is True,
            **kw,
        )
        return {"item": row["id"]}
    if action == "undo":
        done = lg.undo(plan, writer=writer)
        return {"undone_op": done["undone_op"]}
    if action == "approve_plan":
        return {"hash": lg.approve_plan(plan, writer=writer)["hash"]}
    if not ref:
        raise LedgerError(f'"{action}" needs the item\'s "id"')
    value = body.get("value")
    if action == "status":
        if value == "cancelled":
            lg.cancel(ref, reason=_text(body, "reason", required=False) or "cancelled from the board", **kw)
        else:
            lg.update(ref, status=value, kind="update", **kw)
    elif action == "priority":
        lg.update(ref, priority=value, kind="update", **kw)
    elif action == "content":
        lg.update(ref, content=_text(body, "value"), kind="update", **kw)
    elif action == "move":
        lg.update(ref, position=_moved(lg, plan, ref, value == "up"), kind="reorder", **kw)
    elif action == "fields":
        lg.update(
            ref,
            estimate=_text(body, "estimate", required=False).strip(),
            uses=split_uses(_text(body, "uses", required=False)),
            needs_approval=body.get("needs_approval") is True,
            kind="set",
            **kw,
        )
    elif action == "dep_add":
        lg.dep_add(ref, _text(body, "value"), **kw)
    elif action == "dep_remove":
        lg.dep_remove(ref, _text(body, "value"), **kw)
    elif action == "cancel":
        lg.cancel(ref, reason=_text(body, "reason", required=False) or "cancelled from the board", **kw)
    elif action == "restore":
        lg.restore(ref, **kw)
    elif action == "approve":
        lg.approve(ref, **kw)  # names no task: lets no forced completion through
    elif action == "approve_task":
        task = _text(body, "task")
        _as_shown(lg, plan, ref, task, body.get("shown"))
        row = lg.approve(ref, tasks=[task], **kw)  # as `todoledger approve ID --task TASK`
        return {"item": row["id"], "lets_through": [e["task"] for e in row["lets_through"]]}
    else:
        raise LedgerError(f"unknown action {action!r}")
    return {"item": ref}


def forcing_waits(lg: Ledger, plan: str) -> list[dict[str, Any]]:
    """The agents' MCP tasks of `plan` that wait for a person's consent to complete an
    item past a person's gate, as `todoledger approve` lists them (`Ledger.gate_waits`),
    each with what the Approvals page shows beside it: the item's wording, the gate's
    check text and last result, the consent a person already gave (`Ledger.gate_consent`;
    the task completes at its client's next `tasks/get`), and `shown`, a digest of what
    the page shows, which the consent button sends back (`_as_shown`)."""
    waits = lg.gate_waits(plan)
    if not waits:
        return []
    rows = {r["id"]: r for r in lg.items(plan)}
    checks = {c.id: c for c in lg.checks(plan=plan)}
    out = []
    for w in waits:
        check = checks.get(w["gate"])
        last = [r for r in lg.receipts(w["item"], plan=plan) if r["check"] == w["gate"]]
        item = rows.get(w["item"])
        out.append(
            w
            | {
                "content": item["content"] if item else "",
                "spec": check.check.text() if check else "",
                "result": str(last[-1]["result"]) if last else "never ran",
                "consent": lg.gate_consent(w["task"], w["item"], plan=plan, writer=w["writer"]),
                "shown": _digest(w),
            }
        )
    return out


def _digest(wait: dict[str, Any]) -> str:
    """What the page showed of a waiting forced completion, as one short digest."""
    facts = {k: wait[k] for k in ("task", "item", "writer", "reason", "changes", "gate", "gate_by")}
    text = json.dumps(facts, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _as_shown(lg: Ledger, plan: str, ref: str, task: str, shown: Any) -> None:
    """The consent button gives the person's consent to the task as the page showed it:
    one line refuses it where the task waits on that item no longer, or now says
    otherwise (its reason, what else it changes, whose gate), and nothing is done. That
    the task may complete the item is still the ledger's rule alone (`Ledger.approve`)."""
    waits = [w for w in lg.gate_waits(plan, ref) if w["task"] == task]
    if not waits:
        return  # `approve` refuses it in its own words: no such wait on this item
    if not isinstance(shown, str) or not hmac.compare_digest(shown.encode(), _digest(waits[0]).encode()):
        raise LedgerError(
            f"task {task[:8]} is not as the page showed it (reload the page and read it again);"
            " nothing was done"
        )


def _moved(lg: Ledger, plan: str, ref: str, up: bool) -> float:
    """A position one step up or down among the item's siblings (same phase)."""
    item = lg.get(ref, plan)
    siblings = [r for r in lg.items(plan) if r["parent"] == item["parent"]]
    index = next(n for n, r in enumerate(siblings) if r["id"] == item["id"])
    if up:
        if index == 0:
            raise LedgerError("it is first already")
        before = siblings[index - 1]["position"]
        further = siblings[index - 2]["position"] if index >= 2 else before - 2.0
        return float((before + further) / 2)
    if index == len(siblings) - 1:
        raise LedgerError("it is last already")
    after = siblings[index + 1]["position"]
    further = siblings[index + 2]["position"] if index + 2 < len(siblings) else after + 2.0
    return float((after + further) / 2)


def _panel(lg: Ledger, cwd: Path | str | None) -> None:
    """Claude Code's task panel, where `install claude-code --panel` set one up (todoledger.panel)."""
    from todoledger.panel import any_installed

    if any_installed():
        from todoledger.panel.sync import after_write

        after_write(lg, str(cwd) if cwd is not None else None)
