"""The board's templates render agent text as text: every page, fragment and
row of the board, through the real app `todoledger serve` runs (the board's
routes behind MCP's Guard) on a real SQLite ledger written through
`todoledger.Ledger`, with markup and control characters in every field an
agent (or anyone) writes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from tests.conftest import subprocess_env
from tests.test_hook_claude import TODOS, post_tool
from todoledger import Ledger
from todoledger.ledger import sweeps
from todoledger.mcp.http import create_app
from todoledger.web.app import Board

pytestmark = pytest.mark.sqlite_only  # the pages, not the backend, are under test

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = "\"'><img src=x onerror=alert(1)>"
CONTROLS = ("\x1b[31m", "\x07", "\u202e")
MARKUP = SCRIPT + BREAKOUT  # printable: fields that take one line of printable text only
HOSTILE = MARKUP + "".join(CONTROLS)  # a page shows the markup as text; the controls marked or gone

PLAN = "plan " + HOSTILE
AGENT = "claude-code:" + HOSTILE
PERSON = "cli:" + HOSTILE  # a person's writer: approvals are theirs
AGENT_SHOWN, PERSON_SHOWN = "claude-code:" + MARKUP, "cli:" + MARKUP  # as pages show them (and more)


def hostile_ledger(db: Path) -> dict[str, dict[str, str]]:
    """Two plans (one named with the payload, and `main`) with the payload in
    every text an agent or a person writes; returns each plan's items by role."""
    (db.parent / "bench.py").write_text("print('v=7')\n")
    ids: dict[str, dict[str, str]] = {}
    with Ledger(db) as lg:
        for plan in (PLAN, "main"):
            kw: dict[str, Any] = {"plan": plan, "writer": AGENT}
            a = lg.add("content " + HOSTILE, notes="notes " + HOSTILE + "\n" + HOSTILE, estimate="30m", **kw)
            b = lg.add("gated " + HOSTILE, depends_on=[a["id"]], needs_approval=True, estimate="1h", **kw)
            child = lg.add("child " + HOSTILE, parent=a["id"], **kw)
            done = lg.add("done " + HOSTILE, **kw)
            lg.approve_plan(plan, writer=PERSON)
            lg.approve(b["id"], plan=plan, writer=PERSON)
            lg.update(b["id"], content="reworded " + HOSTILE, **kw)  # a diff for the approvals
            lg.add("added " + HOSTILE, **kw)  # the plan changed since it was approved
            lg.start(a["id"], **kw)
            lg.done(done["id"], evidence="evidence " + HOSTILE + "\n" + HOSTILE, **kw)
            lg.cancel(child["id"], reason="reason " + HOSTILE, **kw)
            forced = lg.add("forced " + HOSTILE, depends_on=[b["id"]], **kw)
            lg.done(forced["id"], plan=plan, writer=PERSON, force=True, force_reason="forced " + HOSTILE)
            lg.add_check(b["id"], "file:" + MARKUP, plan=plan, writer=PERSON)
            lg.add_check(
                a["id"], f"cmd:echo '{SCRIPT}' | grep -q script", role="assumption", plan=plan, writer=PERSON
            )
            lg.record_metrics(a["id"], {"tok_s": 3.0}, **kw)  # metric names are plain words
            ids[plan] = {"first": a["id"], "gated": b["id"], "child": child["id"], "done": done["id"]}
            # An agent's running task: its status message carries the sweep's own text.
            lg.create_task(
                "plan_sweep",
                {"name": "hostile"},
                principal="agent:claude-code",
                writer=AGENT,
                plan=plan,
                message=f"label={MARKUP}: repeat 1/2 holds",
            )
            lg.add_sweep(
                "hostile",
                template="sweep " + HOSTILE + " {label}",
                params=["label=" + MARKUP + ",plain"],  # a value becomes a command's argument: printable
                run="python3 bench.py {label}",
                metrics=[r"v=v=(\d+)"],
                **kw,
            )
            lg.approve_sweep(
                "hostile", plan=plan, writer=PERSON
            )  # an agent's sweep runs once a person approves it
            sweeps.run(lg, "hostile", **kw)
    return ids


@pytest.fixture
def client(ledger_env: Path) -> Iterator[TestClient]:
    """The app `todoledger serve` runs: the board's routes behind MCP's Guard."""
    board = Board(name="tester")
    app, tools = create_app(routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as test_client:
            test_client.board = board  # type: ignore[attr-defined]
            yield test_client
    finally:
        tools.close()
        board.close()


class Page(HTMLParser):
    """What a browser would build from the HTML: elements, attributes, text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.data_blocks: list[Any] = []
        self._in: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag
        self.text.extend(value for _, value in attrs if value)

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            script = self.tags[-1][1]
            assert script.get("type") == "application/json", f"a script with a body: {data[:80]!r}"
            self.data_blocks.append(json.loads(data))
        else:
            self.text.append(data)


def inert(text: str, where: str) -> Page:
    """The HTML holds agent text only as text: the payloads never raw, no
    element or attribute of theirs, no control character."""
    for raw in (SCRIPT, BREAKOUT, "<img", "onerror=alert(1)>", *CONTROLS):
        assert raw not in text, f"{where}: {raw!r} unescaped"
    page = Page(text)
    for tag, attrs in page.tags:
        assert tag not in ("img", "svg", "iframe", "object"), f"{where}: <{tag}>"
        assert not [name for name in attrs if name.startswith("on")], f"{where}: <{tag} {attrs}>"
        if tag == "script":
            assert attrs.get("type") == "application/json" or (attrs.get("src") or "").startswith(
                "/static/"
            ), f"{where}: {attrs}"
        for name in ("href", "src", "action"):
            assert not (attrs.get(name) or "").lower().startswith("javascript:"), f"{where}: {attrs}"
    return page


def shown(page: Page) -> str:
    """The page's text, its attributes' and its data blocks' strings."""

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict | list):
            for inner in value.values() if isinstance(value, dict) else value:
                yield from strings(inner)

    return "\n".join([*page.text, *strings(page.data_blocks)])


def routes() -> list[str]:
    """Every page of the board for both plans, each item's page, and the pages
    of a plan and an item that do not exist."""
    out = ["/"]
    with Ledger() as lg:
        for plan in (PLAN, "main"):
            out += [f"/{kind}?{urlencode({'plan': plan})}" for kind in ("plan", "timeline", "approvals")]
            out += [f"/{kind}?{urlencode({'plan': plan})}" for kind in ("sessions", "sweeps")]
            out += [f"/item?{urlencode({'plan': plan, 'id': r['id']})}" for r in lg.items(plan)]
    out.append(f"/item?{urlencode({'plan': PLAN, 'id': HOSTILE})}")
    out.append(f"/plan?{urlencode({'plan': 'missing ' + HOSTILE})}")
    return out


def test_every_page_fragment_and_row_shows_agent_text_only_as_text(
    ledger_env: Path, client: TestClient
) -> None:
    hostile_ledger(ledger_env)
    every = routes()
    assert len(every) > 20
    for url in every:
        whole = client.get(url)
        assert whole.status_code in (200, 404), url
        assert whole.headers["content-type"].startswith("text/html")
        assert "script-src 'self';" in whole.headers["content-security-policy"]
        page = inert(whole.text, url)
        # Each page shows agent text (a plan's name, an item's, an error's): the payload as text.
        assert SCRIPT in shown(page), url
        fragment = client.get(url, headers={"x-fragment": "1"})
        assert fragment.status_code == whole.status_code
        inert(fragment.text, "fragment " + url)
    for plan in (PLAN, "main"):
        answer = client.post("/api/rows", json={"plan": plan, "known": {}})
        assert answer.status_code == 200
        data = answer.json()
        assert MARKUP in shown(inert(data["head"], "head " + plan))
        with Ledger(ledger_env) as lg:  # every row but those folded into the head (closed undone)
            assert len(data["rows"]) == len([i for i in lg.items(plan) if i["status"] != "cancelled"])
        for item_id, row in data["rows"].items():
            assert MARKUP in shown(inert(row, f"row {item_id} of {plan}"))


def test_each_field_reaches_its_page_as_text(ledger_env: Path, client: TestClient) -> None:
    ids = hostile_ledger(ledger_env)

    def text(url: str, **query: str) -> Page:
        return inert(client.get(f"{url}?{urlencode(query)}").text, url)

    for plan in (PLAN, "main"):
        first = shown(text("/item", plan=plan, id=ids[plan]["first"]))
        for field in ("content", "notes"):
            assert f"{field} {MARKUP}" in first, field
        assert f"\n{MARKUP}" in first  # notes keep their line breaks
        assert AGENT_SHOWN in first  # the writer
        assert f"echo '{SCRIPT}'" in first  # a check's text, in the history
        assert f"evidence {MARKUP}" in shown(text("/item", plan=plan, id=ids[plan]["done"]))
        assert f"reason {MARKUP}" in shown(text("/item", plan=plan, id=ids[plan]["child"]))
        gated = shown(text("/item", plan=plan, id=ids[plan]["gated"]))
        assert f"file:{SCRIPT}" in gated and f"reworded {MARKUP}" in gated and f"gated {MARKUP}" in gated
        approvals = shown(text("/approvals", plan=plan))
        assert f"added {MARKUP}" in approvals and PERSON_SHOWN in approvals
        assert "plan_sweep" in approvals and "agent:claude-code" in approvals  # the agents' tasks panel
        assert f"label={MARKUP}: repeat 1/2 holds" in approvals
        sessions = shown(text("/sessions", plan=plan))
        assert AGENT_SHOWN in sessions and f"content {MARKUP}" in sessions
        (timeline,) = text("/timeline", plan=plan).data_blocks
        assert any(
            label.startswith(f"content {MARKUP}") for label in timeline["labels"].values()
        )  # whole, as text
        plans = shown(text("/"))
        assert "last change" in plans and f"content {MARKUP}" in plans
        swept = text("/sweeps", plan=plan)
        assert f"label={MARKUP}" in shown(swept)
        (charts,) = swept.data_blocks
        # Plotly reads a label as a little HTML: the chart's texts are escaped for it, inside the JSON.
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in charts["charts"][0]["traces"][0]["x"][0]
        assert f"sweep {MARKUP}" in shown(text("/plan", plan=plan))


def test_the_login_page_and_its_error(ledger_env: Path) -> None:
    board = Board(name="tester", token="s3cret-token-0123456789abcdef")
    app, tools = create_app(token="s3cret-token-0123456789abcdef", routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            asked = client.get("/login")
            assert asked.status_code == 200 and "<form method=post" in asked.text
            inert(asked.text, "login")
            wrong = client.post("/login", data={"token": HOSTILE})
            assert wrong.status_code == 401 and "That is not the token." in wrong.text
            inert(wrong.text, "login refused")
    finally:
        tools.close()
        board.close()


def test_pages_link_their_static_files_by_this_version(ledger_env: Path, client: TestClient) -> None:
    """The stylesheet and scripts are cached for good under a name that changes
    with them: each page's links carry the version the server serves them by."""
    with Ledger(ledger_env) as lg:
        lg.add("Write the loader", writer=AGENT)
    version: str = client.board.version  # type: ignore[attr-defined]
    assert re.fullmatch(r"[0-9a-f]{12}", version)
    for url in ("/", "/plan?plan=main", "/timeline?plan=main", "/sweeps?plan=main"):
        text = client.get(url).text
        assert "{esc(" not in text and "{{" not in text and "{%" not in text, url
        links = [a for tag, a in Page(text).tags if tag == "link"]
        assert [a["href"] for a in links] == [f"/static/board.css?v={version}"], url
        scripts = [a["src"] for tag, a in Page(text).tags if tag == "script" and a.get("src")]
        assert scripts[-1] == f"/static/board.js?v={version}", url
        assert all(src and src.endswith(f"?v={version}") for src in scripts), url
        for href in [links[0]["href"], *scripts]:
            assert href is not None
            static = client.get(href)
            assert static.status_code == 200 and "immutable" in static.headers["cache-control"], href


def test_the_hook_and_show_json_load_no_template_engine(ledger_env: Path) -> None:
    """Templates are the board's alone: the agents' paths never import Jinja2."""
    probe = (
        "import json, sys\nfrom todoledger.cli.entry import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('LOADED ' + json.dumps([m for m in ('jinja2', 'markupsafe') if m in sys.modules]))\n"
    )
    event = json.dumps(post_tool("TodoWrite", {"todos": TODOS}))
    for args, stdin in ((["hook", "claude-code"], event), (["show", "--json"], None)):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=subprocess_env(ledger_env),
            cwd=os.getcwd(),
            timeout=60,
        )
        assert json.loads(done.stderr.rsplit("LOADED ", 1)[1]) == [], (args, done.stderr)
    with Ledger(ledger_env) as lg:
        assert len(lg.show()["items"]) == len(TODOS)


def test_no_template_marks_text_safe() -> None:
    """Escaping stays the default: no template turns it off or marks a value
    safe, and the board's code makes markup only from its templates' output."""
    web = Path(__file__).resolve().parents[1] / "src" / "todoledger" / "web"
    templates = sorted((web / "templates").glob("*.html"))
    assert len(templates) >= 10
    for path in templates:
        source = path.read_text("utf-8")
        assert not re.search(r"\|\s*safe\b|autoescape\s+false|Markup|\{%\s*raw", source), path.name
    made = {p.name: p.read_text("utf-8").count("Markup(") for p in web.glob("*.py")}
    # render(), tagged() and _joined() (rows, each a template's output, joined: it takes nothing else)
    assert made == {name: 4 if name == "pages.py" else 0 for name in made}


def _row_ids(html: str) -> list[str]:
    return re.findall(r'class="row[^"]*" role=row id="i-([^"]+)"', html)


def test_a_plan_up_to_the_limit_has_every_row_in_the_page(
    ledger_env: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row is in the page itself: none is left for the script to fetch after the paint."""
    from todoledger.web import pages

    monkeypatch.setattr(pages, "ALL_ROWS", 30)
    with Ledger(ledger_env) as lg:
        lg.import_jsonl([json.dumps({"id": f"it{n:03d}", "content": f"Step {n}"}) for n in range(30)])
    html = client.get("/plan?plan=main").text
    assert _row_ids(html) == [f"it{n:03d}" for n in range(30)]
    assert "class=filter" not in html  # no pager, no filter: the page is the plan
    answer = client.post("/api/rows", json={"plan": "main", "known": {}}).json()
    assert answer["order"] == [f"it{n:03d}" for n in range(30)]


def test_past_the_limit_a_plan_is_paged_with_a_filter_and_stays_paged_live(
    ledger_env: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from todoledger.web import pages

    monkeypatch.setattr(pages, "ALL_ROWS", 20)
    monkeypatch.setattr(pages, "PAGE_ROWS", 10)
    with Ledger(ledger_env) as lg:
        lg.import_jsonl(
            [
                json.dumps(
                    {
                        "id": f"it{n:03d}",
                        "content": f"Step {n}",
                        "status": "completed" if n % 3 == 0 else "pending",
                    }
                )
                for n in range(25)
            ]
        )
    first = client.get("/plan?plan=main").text
    assert _row_ids(first) == [f"it{n:03d}" for n in range(10)]
    assert "25 of 25 items, page 1 of 3" in first and 'rel=next href="/plan?plan=main&amp;page=2"' in first
    last = client.get("/plan?plan=main&page=3").text
    assert _row_ids(last) == [f"it{n:03d}" for n in range(20, 25)] and "rel=prev" in last
    assert _row_ids(client.get("/plan?plan=main&page=99").text) == _row_ids(
        last
    )  # past the end: the last page
    open_only = client.get("/plan?plan=main&status=open").text
    assert _row_ids(open_only) == [f"it{n:03d}" for n in range(25) if n % 3][:10]
    assert "16 of 25 items, page 1 of 2" in open_only
    found = client.get("/plan?plan=main&q=step 2").text  # text, case-folded: Step 2, Step 20..24
    assert _row_ids(found) == ["it002", *(f"it{n:03d}" for n in range(20, 25))]
    assert _row_ids(client.get("/plan?plan=main&status=nonsense&page=x").text) == _row_ids(first)
    # The live sync keeps the page's window: page 2 of the open items, not the whole plan.
    answer = client.post(
        "/api/rows", json={"plan": "main", "known": {}, "window": {"status": "open", "page": 2}}
    ).json()
    assert answer["order"] == [f"it{n:03d}" for n in range(25) if n % 3][10:]
    assert sorted(answer["rows"]) == answer["order"]


@pytest.mark.parametrize("limit", [5000, 3])
def test_a_contested_closed_item_keeps_its_row_and_dropped_folds_with_cancelled(
    ledger_env: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """The head counts what was closed undone; their rows leave the table, unless a
    writer's latest list still works on the item (contested), on a plan of every row
    in the page and on a paged one alike; a filter on the status brings them back."""
    from todoledger.web import pages

    monkeypatch.setattr(pages, "ALL_ROWS", limit)
    with Ledger(ledger_env) as lg:
        listed = {"todos": [{"content": "Agent's task", "status": "in_progress"}]}
        extra = [{"content": f"Left out {k}", "status": "pending"} for k in range(2)]
        lg.write({"todos": [*listed["todos"], *extra]}, writer="agent:a")
        lg.write(listed, writer="agent:a")  # the two left out: dropped
        lg.add("Never needed", writer="cli:tester")
        lg.add("Still to do", writer="cli:tester")
        rows = {i["content"]: i["id"] for i in lg.show()["items"]}
        lg.cancel(rows["Never needed"], writer="cli:tester", reason="not needed")
        lg.cancel(rows["Agent's task"], writer="cli:tester", reason="not now")
        lg.write(listed, writer="agent:a")  # still listed as in progress: contested
    html = client.get("/plan?plan=main").text
    assert _row_ids(html) == [rows["Agent's task"], rows["Still to do"]]
    assert "listed as in progress by agent:a, but cancelled by cli:tester" in html
    answer = client.post("/api/rows", json={"plan": "main", "known": {}}).json()
    assert answer["order"] == [rows["Agent's task"], rows["Still to do"]]
    dropped = client.get("/plan?plan=main&status=dropped").text
    assert _row_ids(dropped) == [rows["Left out 0"], rows["Left out 1"]]
    cancelled = client.get("/plan?plan=main&status=cancelled").text
    assert _row_ids(cancelled) == [rows["Agent's task"], rows["Never needed"]]


def test_every_page_says_when_hook_events_wait_in_the_spool(ledger_env: Path, client: TestClient) -> None:
    """Issue 21: doctor, show and the board say when hook events wait to be
    written (the ledger was unavailable to them); before, the board did not."""
    from todoledger.store.locate import spool_dir

    with Ledger(ledger_env) as lg:
        lg.add("Train", writer=PERSON)
    assert "id=spooled" not in client.get("/plan", params={"plan": "main"}).text
    folder = Path(spool_dir(None))
    folder.mkdir(parents=True, exist_ok=True)
    waiting = [folder / f"00000{n}-event.json" for n in (1, 2)]
    try:
        for path in waiting:
            path.write_text("{}\n")
        for where in ("/", "/plan"):
            page = client.get(where, params={"plan": "main"}).text
            assert "2 hook events wait in" in page and "todoledger flush" in page, where
    finally:
        for path in waiting:
            path.unlink()


def test_rows_come_in_blocks_each_counting_from_the_rows_before_it(
    ledger_env: Path, client: TestClient
) -> None:
    """A plan's rows arrive in blocks of CHUNK_ROWS (each a content-visibility box), the n-th
    row in block n // CHUNK_ROWS, whose counter starts at the rows before it: the numbers
    the rows show run on across blocks. Only markup a template made is joined into a block."""
    from markupsafe import Markup

    from todoledger.web import pages

    with Ledger(ledger_env) as lg:
        lg.import_jsonl([json.dumps({"id": f"it{n:03d}", "content": f"Step {n}"}) for n in range(120)])
    html = client.get("/plan?plan=main").text
    blocks = re.findall(
        r'<div class=chunk role=rowgroup><div class=rows style="counter-reset:row (\d+)">(.*?)</div></div>\n',
        html,
    )
    assert [int(start) for start, _ in blocks] == [0, 50, 100]
    assert [_row_ids(rows) for _, rows in blocks] == [
        [f"it{n:03d}" for n in range(start, min(start + 50, 120))] for start in (0, 50, 100)
    ]
    assert 'data-chunk="50"' in html  # the live script keeps the same blocks
    with pytest.raises(TypeError):
        pages.chunks([Markup("<div>a row</div>"), "<script>text, not markup</script>"])  # type: ignore[list-item]


def test_a_plan_page_reuses_its_parts_only_while_what_they_are_made_of_is_the_same(
    ledger_env: Path, client: TestClient
) -> None:
    """The head and rows of the last page are reused only where the items (their verification
    included), the approvals, who started what and the window are all equal: an approval that
    changes no item, and a change to one item, each show on the next page."""
    with Ledger(ledger_env) as lg:
        lg.import_jsonl([json.dumps({"id": f"it{n:03d}", "content": f"Step {n}"}) for n in range(3)])
    first = client.get("/plan?plan=main").text
    assert "plan never approved" in first
    board = client.board  # type: ignore[attr-defined]
    made = board.parts["main"]
    assert client.get("/plan?plan=main").text == first
    assert board.parts["main"] is made  # the same parts: nothing they are made of changed
    with Ledger(ledger_env) as lg:
        lg.approve_plan("main", writer=PERSON)
    approved = client.get("/plan?plan=main").text
    assert "plan never approved" not in approved and "approved by " in approved
    assert board.parts["main"] is not made
    with Ledger(ledger_env) as lg:
        lg.update("it001", status="in_progress", writer="cli:tester")
    started = client.get("/plan?plan=main").text
    assert 'button class="status st-in_progress"' in started and "started by" in started


def test_a_task_whose_worker_is_gone_is_shown_stopped_with_its_reason_as_text(
    ledger_env: Path, client: TestClient
) -> None:
    """The Approvals page's task panel says what `todoledger tasks` says: a task whose worker
    was killed (a dead pid on this host), or whose host stopped beating, is stopped, never
    running, its reason and its worker's last message shown as text; a live worker's task is
    running, and a wait for a person (no worker, by design) waits, however old."""
    import signal
    import sqlite3
    import time

    from todoledger.checks import lifecycle

    here = lifecycle.host()
    doomed = subprocess.Popen(["sleep", "60"])  # the worker that is SIGKILLed
    task: dict[str, str] = {}
    with Ledger(ledger_env) as lg:
        gated = lg.add("Deploy the draft model", needs_approval=True, plan="main", writer=PERSON)["id"]

        def made(tool: str, message: str) -> str:
            row = lg.create_task(
                tool, {}, principal="agent:claude-code", writer=AGENT, plan="main", message=message
            )
            return str(row["id"])

        task["killed"] = made("plan_sweep", f"k={MARKUP}: repeat 2/5 holds")
        task["far"] = made("plan_verify", "verifying: 1 check (cmd:) running")
        task["running"] = made("plan_verify", "verifying: 2 checks (cmd:) running")
        task["wait"] = made("plan_update", f"waiting for a person: todoledger approve {gated}")
        assert lg.take_task_lease(
            task["killed"], (None, None), here, doomed.pid, lifecycle.start_ticks(doomed.pid)
        )
        assert lg.take_task_lease(task["far"], (None, None), "gpu-" + HOSTILE, 4242, None)
        assert lg.take_task_lease(
            task["running"], (None, None), here, os.getpid(), lifecycle.start_ticks(os.getpid())
        )
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    # The far host's last heartbeat, and the wait's start, ten minutes ago (past every grace).
    with sqlite3.connect(ledger_env) as db:
        db.execute("UPDATE tasks SET beat = ? WHERE id = ?", (time.time() - 600, task["far"]))
        db.execute("UPDATE tasks SET updated_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (task["wait"],))

    html = client.get("/approvals?plan=main").text
    inert(html, "/approvals")

    def entry(name: str) -> tuple[dict[str, str | None], str]:
        (found,) = re.findall(rf'<li data-task="{task[name]}"([^>]*)>(.*?)</li>', html, re.S)
        attrs = Page(f"<li{found[0]}>").tags[0][1]
        # What a person reads (the page is inert: its tags are the board's own).
        return attrs, " ".join(unescape(re.sub(r"<[^>]*>", "", found[1])).split())

    gone = "the agent's next tasks/get resumes it or ends it"
    attrs, killed = entry("killed")
    assert attrs.get("class") == "stopped"
    assert killed.startswith(f"{task['killed'][:8]} stopped plan_sweep by agent:claude-code since ")
    assert f"(stopped: its worker (pid {doomed.pid}) is gone; {gone})" in killed
    assert f"its worker last said: k={MARKUP}: repeat 2/5 holds" in killed
    assert "working" not in killed and f"pid {doomed.pid} on" not in killed  # never running
    attrs, far = entry("far")
    assert attrs.get("class") == "stopped" and "working" not in far
    said = re.search(r"\(stopped: no heartbeat from its worker on gpu-(.*) for (\d+) s; ", far)
    assert said is not None and said[1].startswith(MARKUP) and int(said[2]) >= 600, far
    assert "its worker last said: verifying: 1 check (cmd:) running" in far
    attrs, running = entry("running")
    assert attrs.get("class") is None and "stopped" not in running
    assert "working" in running and f"(pid {os.getpid()} on {here})" in running
    attrs, wait = entry("wait")
    assert attrs.get("class") is None and "stopped" not in wait
    assert "working" in wait and f"waiting for a person: todoledger approve {gated}" in wait
    # `todoledger tasks` says the same of each.
    listed = subprocess.run(
        [sys.executable, "-m", "todoledger", "tasks", "--json"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    stopped = {r["id"]: r["stopped"] for r in json.loads(listed.stdout)}
    assert stopped[task["killed"]] == f"its worker (pid {doomed.pid}) is gone"
    assert stopped[task["far"]] is not None and stopped[task["far"]].startswith(
        "no heartbeat from its worker on gpu-"
    )
    assert stopped[task["running"]] is None and stopped[task["wait"]] is None
