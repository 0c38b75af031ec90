"""The board in a real headless Chromium (Debian's `chromium`, driven by
Playwright's Python package), against a real `todoledger serve` process on a
real SQLite file, with the CLI and an MCP agent writing beside it.

Screenshots of every page go to tests/output/board-*.png.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import hashed_tokens, person_env, subprocess_env, todoledger_bin
from tests.test_cli import run, run_json

CHROMIUM = os.environ.get("TODOLEDGER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
OUTPUT = Path(__file__).parent / "output"
WAIT_MS = 10_000  # generous on a shared machine; timing is measured in bench/, not here

playwright_sync = pytest.importorskip("playwright.sync_api", reason="pip install playwright (.ci/run does)")
if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, db: Path, *args: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [todoledger_bin(), "serve", "--port", str(self.port), "--name", "tester", *args],
            env=person_env(db),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("serve did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def served(ledger_env: Path) -> Iterator[Served]:
    server = Served(ledger_env)
    yield server
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    tab.dialogs = []  # type: ignore[attr-defined]
    tab.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    yield tab
    context.close()


def shot(page: Any, name: str) -> None:
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / f"board-{name}.png"), full_page=False)


def items(db: Path, plan: str = "main") -> dict[str, dict[str, Any]]:
    return {r["content"]: r for r in run_json(db, "show", "--plan", plan)["items"]}


def live(page: Any) -> None:
    page.wait_for_selector("#live.on")


def demo_with_a_schedule(db: Path) -> dict[str, dict[str, Any]]:
    run(db, "demo")
    rows = items(db, "demo")
    launch = rows["Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..."]["id"]
    loads = rows["Verify SGLang loads the drafter after the key fix (layers.0.* -> midlayer.*)"]["id"]
    still_up = rows["Verify the SGLang EAGLE3 server is still up after its ~15-minute start"]["id"]
    run(db, "set", launch, "--plan", "demo", "--estimate", "20m", "--uses", "server")
    run(db, "set", loads, "--plan", "demo", "--estimate", "10m", "--uses", "server")
    run(db, "set", still_up, "--plan", "demo", "--estimate", "5m", "--uses", "server")
    run(db, "dep", "add", loads, launch, "--plan", "demo")
    return items(db, "demo")


def test_demo_plan_items_critical_path_verification_and_every_page(
    ledger_env: Path, served: Served, page: Any
) -> None:
    rows = demo_with_a_schedule(ledger_env)
    path = run_json(ledger_env, "path", "--plan", "demo")
    page.goto(f"{served.base}/")
    live(page)
    assert page.locator(".plan-card").count() == 2
    shot(page, "plans")
    page.click("text=demo >> nth=0")
    page.wait_for_selector(".items .row[data-id]")
    # What was closed undone is folded into the head's count, not rows of the table.
    closed = ("cancelled", "dropped")
    open_rows = {c: r for c, r in rows.items() if r["status"] not in closed}
    assert page.locator(".items .row[data-id]").count() == len(open_rows)
    for content, r in rows.items():
        where = ".items .content a" if r["status"] not in closed else "details.closed a"
        assert page.locator(where, has_text=content).count() >= 1
    shown_path = page.eval_on_selector_all(".row.crit", "rows => rows.map(r => r.dataset.id)")
    # Two of its items have estimates: it is shown (rows in plan order, the path in its own).
    assert sorted(shown_path) == sorted(path["critical_path"]) and len(shown_path) >= 2
    assert "30m" in page.locator(".next").inner_text()
    # The first parallel set can start now; the benchmarks that share the server wait.
    now_ids = page.eval_on_selector_all(".row.par0", "rows => rows.map(r => r.dataset.id)")
    assert sorted(now_ids) == sorted(path["parallel"][0])
    completed = [r for r in rows.values() if r["status"] == "completed"]
    for r in completed:
        assert (
            page.locator(f'.row[data-id="{r["id"]}"] .ver').inner_text() == "reported"
        )  # one name per state
    shot(page, "plan")
    first = path["critical_path"][0]
    page.click(f'.row[data-id="{first}"] .content a')
    page.wait_for_selector("article.item")
    assert "What waits for it" in page.inner_text("main")
    assert page.locator("table.history tbody tr").count() >= 2
    shot(page, "item")
    for name in ("timeline", "approvals", "sessions"):
        page.click(f"header nav >> text={name.title()}")
        page.wait_for_selector(f'body[data-page="{name}"]')
        if name == "timeline":
            page.wait_for_selector("#chart .main-svg")
            assert page.locator("#chart .bars path").count() > 0
        shot(page, name)
    assert page.dialogs == []


def test_status_change_on_the_page_shows_in_the_cli(ledger_env: Path, served: Served, page: Any) -> None:
    run(ledger_env, "add", "Write the loader")
    item = items(ledger_env)["Write the loader"]["id"]
    page.goto(f"{served.base}/plan?plan=main")
    live(page)
    page.click(f'.row[data-id="{item}"] button[data-act=status]')
    page.select_option(f'.row[data-id="{item}"] select[data-chooser=status]', "in_progress")
    page.wait_for_selector(f'.row[data-id="{item}"] button.st-in_progress')
    row = items(ledger_env)["Write the loader"]
    assert (row["status"], row["updated_by"]) == ("in_progress", "web:tester")
    (event,) = [e for e in run_json(ledger_env, "history", item) if e["field"] == "status"]
    assert (event["old"], event["new"], event["writer"]) == ("pending", "in_progress", "web:tester")
    # Undo from the page takes back the page's own change, through the same service.
    page.click("button[data-act=undo]")
    page.wait_for_selector(f'.row[data-id="{item}"] button.st-pending')
    assert items(ledger_env)["Write the loader"]["status"] == "pending"


def test_a_cli_change_appears_without_a_reload(ledger_env: Path, served: Served, page: Any) -> None:
    run(ledger_env, "add", "First")
    page.goto(f"{served.base}/plan?plan=main")
    live(page)
    page.evaluate("window.__still_this_page = true")
    run(ledger_env, "add", "Added from the CLI")
    page.wait_for_selector(".row .content a:text('Added from the CLI')")
    first = items(ledger_env)["First"]["id"]
    run(ledger_env, "done", first)
    page.wait_for_selector(f'.row[data-id="{first}"] button.st-completed')
    assert page.evaluate("window.__still_this_page") is True  # no reload


def mcp_claim(url: str) -> dict[str, Any]:
    """An agent (an MCP client over streamable HTTP on the same server) claims work."""

    async def main() -> dict[str, Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        async with (
            httpx2.AsyncClient(timeout=30) as hc,
            Client(
                streamable_http_client(url, http_client=hc),
                client_info=Implementation(name="agent", version="1"),
            ) as client,
        ):
            result = await client.call_tool("plan_next", {"claim": True})
            return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]

    import anyio

    # Its own thread: Playwright's sync API owns this thread's event loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, main).result(timeout=60)


def test_approval_on_the_page_lets_the_agent_claim(ledger_env: Path, served: Served, page: Any) -> None:
    run(ledger_env, "add", "Train on 4 GPUs with 37K samples", "--needs-approval", "--uses", "gpu:0-3")
    item = items(ledger_env)["Train on 4 GPUs with 37K samples"]["id"]
    before = mcp_claim(f"{served.base}/mcp")
    assert before["claimed"] is None and before["waiting_for_approval"] == [item]
    assert items(ledger_env)["Train on 4 GPUs with 37K samples"]["status"] == "pending"
    page.goto(f"{served.base}/approvals?plan=main")
    live(page)
    assert page.locator(f'.waiting li[data-id="{item}"]').count() == 1
    shot(page, "approvals-waiting")
    page.click(f'button[data-act=approve][data-id="{item}"]')
    page.wait_for_selector("text=No item waits for a person.")
    after = mcp_claim(f"{served.base}/mcp")
    assert after["claimed"]["id"] == item
    row = items(ledger_env)["Train on 4 GPUs with 37K samples"]
    assert row["status"] == "in_progress" and row["updated_by"].startswith("mcp:")
    approvals = [e for e in run_json(ledger_env, "history", item) if e["field"] == "approved"]
    assert [e["writer"] for e in approvals] == ["web:tester"]


HOSTILE = [
    "<script>window.__xss = 'script'; alert('script')</script>",
    "<img src=x onerror=\"window.__xss = 'img'; alert('img')\">",
    "[click me](javascript:window.__xss='md';alert('md'))",
    "javascript:alert('bare')",
    '"><svg onload=alert(1)>',
]


def test_agent_text_renders_as_text_and_nothing_runs(ledger_env: Path, served: Served, page: Any) -> None:
    payload = {"todos": [{"content": text, "status": "pending"} for text in HOSTILE]}
    run(
        ledger_env,
        "write",
        "--writer",
        "claude-code:evil",
        "--dialect",
        "claude-code",
        "-",
        stdin=json.dumps(payload),
    )
    ids = [items(ledger_env)[text]["id"] for text in HOSTILE]
    run(ledger_env, "done", ids[0], "--evidence", "<b>bold</b> <a href=\"javascript:alert('ev')\">x</a>")
    for url in (
        f"{served.base}/",
        f"{served.base}/plan?plan=main",
        *(f"{served.base}/item?plan=main&id={i}" for i in ids),
        f"{served.base}/timeline?plan=main",
        f"{served.base}/approvals?plan=main",
        f"{served.base}/sessions?plan=main",
    ):
        page.goto(url)
        live(page)
        if "timeline" in url:
            page.wait_for_selector("#chart .main-svg")
        assert page.evaluate("window.__xss") is None, url
        assert (
            page.locator(
                "main script:not([type='application/json']), main img, main svg:not(.main-svg)"
            ).count()
            == 0
            or "timeline" in url
        )
        assert page.locator("a[href^='javascript' i]").count() == 0, url
    page.goto(f"{served.base}/plan?plan=main")
    for text in HOSTILE:
        assert page.locator(".row .content a", has_text=text).count() == 1  # shown, literally
    page.goto(f"{served.base}/item?plan=main&id={ids[0]}")
    assert "<b>bold</b>" in page.inner_text("main")
    shot(page, "xss-item")
    assert page.dialogs == []


def test_csrf_and_origin_refused_and_nothing_changes(ledger_env: Path, served: Served, page: Any) -> None:
    run(ledger_env, "add", "Keep me")
    item = items(ledger_env)["Keep me"]["id"]
    before = (list(run(ledger_env, "export").stdout.splitlines()), len(run_json(ledger_env, "history")))
    page.goto(f"{served.base}/plan?plan=main")
    live(page)
    statuses = page.evaluate(
        """async (id) => {
            const post = (headers, body) => fetch('/api/action', {method: 'POST', headers, body})
                .then(r => r.status);
            const json = JSON.stringify({action: 'cancel', id, plan: 'main'});
            return [
                await post({'Content-Type': 'application/json'}, json),
                await post({'Content-Type': 'application/json', 'X-CSRF-Token': 'guess'}, json),
                await post({'Content-Type': 'application/x-www-form-urlencoded'}, 'action=cancel&id=' + id),
            ];
        }""",
        item,
    )
    assert statuses == [403, 403, 403]
    # A page on another origin is refused by the Origin check before anything else.
    import httpx2

    token = page.get_attribute("meta[name=csrf]", "content")
    hostile = httpx2.post(
        f"{served.base}/api/action",
        json={"action": "cancel", "id": item, "plan": "main"},
        headers={"X-CSRF-Token": token, "Origin": "http://evil.example"},
    )
    assert hostile.status_code == 403
    after = (list(run(ledger_env, "export").stdout.splitlines()), len(run_json(ledger_env, "history")))
    assert after == before
    # The same request with the page's token goes through.
    ok = page.evaluate(
        """async (id) => (await fetch('/api/action', {method: 'POST', headers: {'Content-Type':
            'application/json', 'X-CSRF-Token': document.querySelector('meta[name=csrf]').content},
            body: JSON.stringify({action: 'cancel', id, plan: 'main', reason: 'not needed'})})).status""",
        item,
    )
    assert ok == 200 and items(ledger_env)["Keep me"]["status"] == "cancelled"


def test_token_is_asked_once_and_remote_binds_need_one(ledger_env: Path, browser: Any) -> None:
    refused = subprocess.run(
        [todoledger_bin(), "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=subprocess_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "refusing to serve on 0.0.0.0 without a token" in refused.stderr
    assert "Traceback" not in refused.stderr
    run(ledger_env, "add", "Behind a token")
    server = Served(ledger_env, "--token", "s3cret-token-0123456789abcdef")
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        tab.goto(f"{server.base}/plan?plan=main")
        assert tab.url.endswith("/login")
        shot(tab, "login")
        tab.fill("input[name=token]", "wrong")
        tab.click("button")
        tab.wait_for_selector("text=That is not the token.")
        tab.fill("input[name=token]", "s3cret-token-0123456789abcdef")
        tab.click("button")
        tab.wait_for_selector("#live.on")
        tab.goto(f"{server.base}/plan?plan=main")  # asked once: the browser keeps it
        tab.wait_for_selector(".row .content a:text('Behind a token')")
        tab.wait_for_selector("#live.on")
    finally:
        context.close()
        server.stop()


def test_steering_from_the_item_page(ledger_env: Path, served: Served, page: Any) -> None:
    for text in ("Launch the server", "Benchmark", "Write up"):
        run(ledger_env, "add", text)
    ids = {k: v["id"] for k, v in items(ledger_env).items()}
    bench = ids["Benchmark"]
    page.goto(f"{served.base}/item?plan=main&id={bench}")
    live(page)
    page.fill("form[data-form=content] input[name=content]", "Benchmark at concurrency 1")
    page.click("form[data-form=content] button")
    page.wait_for_selector("h1:has-text('Benchmark at concurrency 1')")
    page.fill("form[data-form=fields] input[name=estimate]", "90m")
    page.fill("form[data-form=fields] input[name=uses]", "server gpu:0-1")
    page.check("form[data-form=fields] input[name=needs_approval]")
    page.click("form[data-form=fields] button")
    page.wait_for_selector("dd:has-text('1h30m')")
    page.fill("form[data-form=dep_add] input[name=blocker]", ids["Launch the server"])
    page.click("form[data-form=dep_add] button")
    page.wait_for_selector("button[data-act=dep_remove]")
    page.click("button[data-act=move][data-value=up]")
    row = items(ledger_env)["Benchmark at concurrency 1"]
    assert (row["estimate"], row["uses"], row["needs_approval"]) == ("1h30m", ["gpu:0-1", "server"], True)
    assert row["depends_on"] == [ids["Launch the server"]]
    deadline = time.monotonic() + WAIT_MS / 1000
    while run_json(ledger_env, "show")["items"][0]["content"] != "Benchmark at concurrency 1":
        assert time.monotonic() < deadline, "the move did not land"
        time.sleep(0.1)
    page.click("button[data-act=dep_remove]")
    page.wait_for_selector("text=Waits for >> xpath=.. >> text=nothing")
    page.fill("form[data-form=cancel] input[name=reason]", "the server is shared; measured elsewhere")
    page.click("form[data-form=cancel] button")
    page.wait_for_selector("button[data-act=restore]")
    row = items(ledger_env)["Benchmark at concurrency 1"]
    assert (row["status"], row["reason"], row["depends_on"]) == (
        "cancelled",
        "the server is shared; measured elsewhere",
        [],
    )
    page.click("button[data-act=restore]")
    page.wait_for_selector("form[data-form=cancel]")
    assert items(ledger_env)["Benchmark at concurrency 1"]["status"] == "pending"
    writers = {e["writer"] for e in run_json(ledger_env, "history", bench)[1:]}
    assert writers == {"web:tester"}
    assert run_json(ledger_env, "check")["ok"]


def test_a_change_arriving_while_a_button_is_pressed_does_not_lose_the_click(
    ledger_env: Path, served: Served, page: Any
) -> None:
    # A CI run lost a cancel: a live refresh swapped the page between the button's
    # press and its release, so the release landed on a new button and no click fired.
    run(ledger_env, "add", "Benchmark")
    bench = items(ledger_env)["Benchmark"]["id"]
    page.goto(f"{served.base}/item?plan=main&id={bench}")
    live(page)
    page.fill("form[data-form=cancel] input[name=reason]", "measured elsewhere")
    button = page.locator("form[data-form=cancel] button").element_handle()
    button.hover()
    before = page.evaluate("document.querySelector('main').dataset.change")
    page.mouse.down()
    run(ledger_env, "add", "Someone else's step")
    # The event reaches the page within a few hundred ms; a refresh then would swap the button.
    page.wait_for_timeout(1500)
    assert button.evaluate("el => el.isConnected")
    page.mouse.up()
    page.wait_for_selector("button[data-act=restore]")
    assert items(ledger_env)["Benchmark"]["status"] == "cancelled"
    # The refresh held back during the press runs after it.
    page.wait_for_function(f"Number(document.querySelector('main').dataset.change) > {int(before)}")


def page_order(page: Any) -> list[str]:
    return list(page.eval_on_selector_all(".items .row[data-id]", "rows => rows.map(r => r.dataset.id)"))


def test_a_long_plan_has_every_row_on_the_first_paint_and_keeps_the_order_live(
    ledger_env: Path, served: Served, page: Any
) -> None:
    lines = [
        json.dumps({"id": f"it{n:03d}", "content": f"Step {n}", "position": float(n), "status": "pending"})
        for n in range(260)
    ]
    run(ledger_env, "import", "-", stdin="\n".join(lines) + "\n")
    page.goto(f"{served.base}/plan?plan=main", wait_until="domcontentloaded")
    # In the page as it arrived, before any script asked for rows; the marks say when.
    assert page_order(page) == [f"it{n:03d}" for n in range(260)]
    page.wait_for_function("performance.getEntriesByName('board:rows-painted').length === 1")
    live(page)
    run(ledger_env, "add", "Inserted after step 3", "--after", "it003")
    run(ledger_env, "cancel", "it250", "--reason", "not needed")
    page.wait_for_selector(".row .content a:text('Inserted after step 3')")
    # A cancelled item leaves the table for the head's folded count, its reason with it.
    page.wait_for_selector('details.closed li[data-id="it250"]', state="attached")
    assert page.locator('.items .row[data-id="it250"]').count() == 0
    shown = [r["id"] for r in run_json(ledger_env, "show")["items"] if r["status"] != "cancelled"]
    assert page_order(page) == shown
    # The rows come in blocks of 50 (content-visibility boxes): after the live sync the n-th
    # row is still in block n // 50, each block counting from the rows before it.
    blocks = page.eval_on_selector_all(
        ".items > .chunk > .rows",
        "bs => bs.map(b => [b.style.counterReset, [...b.children].map(r => r.dataset.id)])",
    )
    assert [ids for _, ids in blocks] == [shown[n : n + 50] for n in range(0, len(shown), 50)]
    assert [reset for reset, _ in blocks] == [f"row {n}" for n in range(0, len(shown), 50)]


def test_sweeps_page_table_matches_results_and_charts_draw(
    ledger_env: Path, served: Served, page: Any
) -> None:
    from tests.test_sweeps import BENCH

    (Path.cwd() / "bench.py").write_text(BENCH)
    run(ledger_env, "add", "Not a sweep")
    page.goto(f"{served.base}/plan?plan=main")
    live(page)
    assert page.locator("header nav >> text=Sweeps").count() == 0  # no sweep yet, no link
    run(
        ledger_env,
        *("sweep", "add", "draft", "--template", "Benchmark {draft_tokens} draft tokens at C={concurrency}"),
        *("--param", "draft_tokens=16,10,5", "--param", "concurrency=1,4", "--baseline", "draft_tokens=0"),
        *("--run", "python3 bench.py {draft_tokens} {concurrency}", "--repeat", "3"),
        *("--metric", "tok_s=$.tok_s", "--metric", r"accept_len=accept_len: ([\d.]+)"),
        *("--keep", "tok_s>baseline*1.1"),
        person=True,  # a person's sweep runs as written (an agent's or a script's waits for `sweep trust`)
    )
    run(ledger_env, "sweep", "run", "draft")
    result = run_json(ledger_env, "sweep", "results", "draft")
    page.goto(f"{served.base}/plan?plan=main")
    page.click("header nav >> text=Sweeps")
    page.wait_for_selector('body[data-page="sweeps"]')
    live(page)
    # The table: every row of `sweep results`, its numbers exactly, its verdict and flags.
    shown = page.eval_on_selector_all(
        ".sweep[data-sweep=draft] table.sweep-table tbody tr",
        """rows => rows.map(r => ({params: JSON.parse(r.dataset.params), metric: r.dataset.metric,
            baseline: r.classList.contains('baseline'),
            values: Object.fromEntries([...r.querySelectorAll('td[data-value]')].map(
                td => [td.className, td.dataset.value === '' ? null : Number(td.dataset.value)])),
            verdict: r.querySelector('.verdict').textContent, flags: r.querySelector('.flags').textContent}))""",
    )
    assert len(shown) == len(result["rows"]) == 16  # (3 x 2 + 2 baselines) x 2 metrics
    for got, want in zip(shown, result["rows"], strict=True):
        assert (got["params"], got["metric"], got["baseline"]) == (
            want["params"],
            want["metric"],
            want["baseline"],
        )
        assert got["values"] == {k: want[k] for k in ("n", "median", "min", "max", "spread", "ratio")}
        assert (got["verdict"], got["flags"]) == (want["verdict"] or "", ", ".join(want["flags"]))
    # ...and independently: the medians are those of the runs the script logged itself.
    import statistics

    logged: dict[tuple[str, str], list[float]] = {}
    for line in (Path.cwd() / "runs.log").read_text().splitlines():
        r = json.loads(line)
        logged.setdefault((str(r["draft"]), str(r["conc"])), []).append(r["tok_s"])
    tok = [g for g in shown if g["metric"] == "tok_s"]
    assert len(tok) == len(logged) == 8
    for g in tok:
        runs = logged[(g["params"]["draft_tokens"], g["params"]["concurrency"])]
        assert (g["values"]["n"], g["values"]["median"]) == (3, statistics.median(runs))
        assert (g["values"]["min"], g["values"]["max"]) == (min(runs), max(runs))
    # The charts: one per metric, a line per concurrency and a dashed baseline per concurrency.
    for k, metric in enumerate(("tok_s", "accept_len")):
        chart = f"#sweep-0-{k}"
        page.wait_for_selector(f"{chart} .main-svg")
        assert page.locator(f"{chart} .scatterlayer .trace").count() == 4
        traces = page.evaluate(f"document.querySelector('{chart}').data.map(t => [t.name, t.line.dash])")
        assert sorted(traces) == [
            ["baseline concurrency=1", "dash"],
            ["baseline concurrency=4", "dash"],
            ["concurrency=1", "solid"],
            ["concurrency=4", "solid"],
        ]
        assert metric in (page.locator(f"{chart} .gtitle").text_content() or "")
    # Live: a sweep added from the CLI appears without a reload; its agent-written text stays text.
    page.evaluate("window.__still_this_page = true")
    run(
        ledger_env,
        *("sweep", "add", "xss", "--template", "<script>alert(1)</script> {label}"),
        *("--param", "label=<img src=x onerror=alert(2)>,plain", "--run", "python3 -c 'print(7)' {label}"),
        *("--metric", r"v=(\d+)"),
        person=True,
    )
    run(ledger_env, "sweep", "run", "xss")
    page.wait_for_selector("#sweep-1-0 .main-svg")
    assert page.evaluate("window.__still_this_page") is True
    cells = page.eval_on_selector_all(
        ".sweep[data-sweep=xss] td.params", "tds => tds.map(t => t.textContent)"
    )
    assert cells == ["label=<img src=x onerror=alert(2)>", "label=plain"]
    ticks = page.eval_on_selector_all("#sweep-1-0 .xtick text", "ts => ts.map(t => t.textContent)")
    assert "<img src=x onerror=alert(2)>" in ticks
    assert page.locator("main img").count() == 0 and page.dialogs == []
    # The live refresh may replace the section at any moment: scroll in one step, in the page.
    page.evaluate("document.querySelector('.sweep[data-sweep=draft]').scrollIntoView()")
    shot(page, "sweeps")


AGENT_TOKEN = "ci-agent-token-0123456789"
PERSON_TOKEN = "ann-person-token-0123456789"


def _login(browser: Any, base: str, token: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    tab.goto(f"{base}/approvals?plan=main")
    assert tab.url.endswith("/login")
    tab.fill("input[name=token]", token)
    tab.click("button")
    tab.wait_for_selector("#live.on")
    tab.goto(f"{base}/approvals?plan=main")
    tab.wait_for_selector("#live.on")
    return context, tab


def test_with_tokens_an_agents_page_cannot_approve_and_a_persons_approval_is_hers(
    ledger_env: Path, browser: Any, tmp_path: Path
) -> None:
    """serve --tokens: agent:ci's page cannot approve as anyone (the page says
    why, and a crafted request naming "ann" is refused too); ann's approval is
    recorded as web:ann and her history shows it."""
    tokens = tmp_path / "tokens"
    hashed_tokens(tokens, f"{AGENT_TOKEN} agent:ci agent\n{PERSON_TOKEN} ann person\n")
    run(ledger_env, "add", "Deploy to production", "--needs-approval")
    item = items(ledger_env)["Deploy to production"]["id"]
    server = Served(ledger_env, "--tokens", str(tokens))
    try:
        context, tab = _login(browser, server.base, AGENT_TOKEN)
        try:
            assert tab.inner_text("#identity") == (
                "you are agent:ci@web (an agent's token: approvals need a person's)"
            )
            assert tab.locator("#who").count() == 0  # no field to name anyone else
            tab.click(f'button[data-act=approve][data-id="{item}"]')
            tab.wait_for_selector("#flash.bad")
            assert tab.inner_text("#flash") == (
                "agent:ci@web holds an agent's token: only a person can approve;"
                " a person must do it, under a person's token (log in at /login) or from a terminal"
            )
            shot(tab, "tokens-agent-refused")
            # Scenario 2 from inside the page: the CSRF token, and "who": "ann".
            status = tab.evaluate(
                """async ([id]) => {
                    const csrf = document.querySelector('meta[name=csrf]').content;
                    const r = await fetch('/api/action', {method: 'POST', credentials: 'same-origin',
                        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
                        body: JSON.stringify({action: 'approve', id, who: 'ann', plan: 'main'})});
                    return r.status;
                }""",
                [item],
            )
            assert status == 403
        finally:
            context.close()
        assert run_json(ledger_env, "approve", "--plan", "main", "--list")["waiting"] == [item]
        context, tab = _login(browser, server.base, PERSON_TOKEN)
        try:
            assert tab.inner_text("#identity") == "you are web:ann"
            tab.click(f'button[data-act=approve][data-id="{item}"]')
            tab.wait_for_selector("text=No item waits for a person.")
            tab.goto(f"{server.base}/item?plan=main&id={item}")
            tab.wait_for_selector("table.history")
            assert "web:ann" in tab.inner_text("table.history")
            shot(tab, "tokens-person-approved")
        finally:
            context.close()
    finally:
        server.stop()
    approvals = [e for e in run_json(ledger_env, "history", item) if e["field"] == "approved"]
    assert [e["writer"] for e in approvals] == ["web:ann"]


# -- the first screen (issue 20): where are we, what is blocked, what is proven -----------------

OVERFLOW = """els => els.filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => [e.className || e.tagName, e.textContent.slice(0, 60), e.scrollWidth, e.clientWidth])"""


def boxes_meet(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_the_demo_plans_first_screen_says_where_we_are_what_is_blocked_and_proven(
    ledger_env: Path, served: Served, page: Any
) -> None:
    from todoledger.demo import AGENT, LEFT_OUT_4350, PHASE_0

    run(ledger_env, "demo")
    rows = items(ledger_env, "demo")
    page.goto(f"{served.base}/plan?plan=demo")
    live(page)
    page.wait_for_selector(".items .row[data-id]")
    # In progress, blocked, what can start now, what is proven: in that order, all on the first screen.
    sections = page.locator(".first-screen section")
    assert sections.evaluate_all("s => s.map(e => e.dataset.section)") == [
        "in-progress",
        "blocked",
        "next",
        "proven",
    ]
    places = [sections.nth(n).bounding_box() for n in range(4)]
    for before, after in itertools.pairwise(places):
        assert (after["y"], after["x"]) > (before["y"], before["x"])  # read in that order
    assert all(p["y"] < 1000 for p in places)  # inside the first viewport
    doing = page.locator("[data-section=in-progress] li")
    assert doing.count() == 1 and PHASE_0 in doing.inner_text()
    assert f"started by {AGENT}" in doing.inner_text()  # who started it, not the reviewer who noted it
    blocked = page.locator("[data-section=blocked]").inner_text()
    assert "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA..." in blocked
    assert "Verify norm_before_residual" in blocked
    now = page.locator("[data-section=next] > ul > li")
    assert 1 <= now.count() <= 5 and "more, marked" in page.locator("[data-section=next]").inner_text()
    assert "reported" in page.locator("[data-section=proven]").inner_text()
    assert page.locator(".crit-line").count() == 0 and page.locator(".row.crit").count() == 0  # no estimates
    # Cancelled and dropped: one count, the reasons on expansion, no rows in the table.
    cancelled = [r for r in rows.values() if r["status"] in ("cancelled", "dropped")]
    assert cancelled and {r["status"] for r in cancelled} == {"cancelled", "dropped"}
    assert page.locator(".items .row.st-cancelled, .items .row.st-dropped").count() == 0
    closed = page.locator("details.closed")
    assert closed.locator("summary").inner_text().startswith(f"{len(cancelled)} closed without being done")
    assert not closed.locator("li").first.is_visible()
    shot(page, "demo-first-screen")
    closed.locator("summary").click()
    assert closed.locator("li").count() == len(cancelled) and closed.locator("li").first.is_visible()
    reasons = closed.inner_text()
    assert f"dropped by {AGENT}" in reasons and LEFT_OUT_4350 in reasons
    # No text runs out of its box.
    assert (
        page.eval_on_selector_all(
            ".first-screen li, .first-screen h2, details.closed li, .row .content", OVERFLOW
        )
        == []
    )
    shot(page, "demo-closed-expanded")
    # The plans page: the navigation says Plans once; each card names who started the work.
    page.goto(f"{served.base}/")
    live(page)
    assert page.locator("header").inner_text().split().count("Plans") == 1
    card = page.locator('.plan-card[data-plan="demo"]').inner_text()
    assert f"started by {AGENT}" in card and "cli:reviewer" in card  # the reviewer made the last change
    assert "cancelled or dropped" in card
    assert page.eval_on_selector_all(".plan-card h2, .plan-card li", OVERFLOW) == []
    shot(page, "demo-plans")
    # The item page: its history in words, placed by message (no clock), no JSON.
    page.goto(f"{served.base}/item?plan=demo&id={rows[PHASE_0]['id']}")
    live(page)
    history = page.locator("table.history").inner_text()
    assert "msg 4950 (seed 001)" in history and f"added '{PHASE_0}' [in_progress]" in history
    assert "{" not in history and "Times not recorded" in page.inner_text("main")
    assert f"in progress, started by {AGENT}" in page.inner_text("article dl")
    shot(page, "demo-item")


def test_a_finished_phase_is_not_offered_as_work_to_start(
    ledger_env: Path, served: Served, page: Any
) -> None:
    phase = run_json(ledger_env, "add", "Phase 1: probe the drafter")["id"]
    kids = [run_json(ledger_env, "add", f"Phase 1.{n}: step {n}", "--parent", phase)["id"] for n in (1, 2)]
    other = run_json(ledger_env, "add", "Write the report")["id"]
    for kid in kids:
        run(ledger_env, "done", kid)
    assert phase in [r["id"] for r in run_json(ledger_env, "next")]  # ready: nothing open under it
    page.goto(f"{served.base}/plan?plan=main")
    live(page)
    offered = page.eval_on_selector_all("[data-section=next] > ul > li", "ls => ls.map(l => l.dataset.id)")
    assert offered == [other]
    assert "Phase 1: probe the drafter" in page.locator("[data-section=next] .phases").inner_text()
    assert page.locator(f'.row[data-id="{phase}"] .tag.par').count() == 0  # nor marked "now" in the table
    assert page.locator(f'.row[data-id="{other}"] .tag.par').count() == 1
    shot(page, "finished-phase")


def modebar_clear(page: Any, chart: str) -> None:
    """The chart's mode bar is drawn, and covers neither its title nor its plot."""
    bar = page.locator(f"{chart} .modebar").bounding_box()
    plot = page.locator(f"{chart} .nsewdrag").first.bounding_box()
    assert bar is not None and plot is not None and bar["width"] > 0
    assert not boxes_meet(bar, plot), (bar, plot)
    title = page.locator(f"{chart} .gtitle")
    if title.count():
        assert not boxes_meet(bar, title.bounding_box()), (bar, title.bounding_box())


def test_the_timeline_is_in_plan_order_with_whole_labels_and_no_overlap(
    ledger_env: Path, served: Served, page: Any
) -> None:
    run(ledger_env, "demo")
    order = [r["content"] for r in run_json(ledger_env, "show", "--plan", "demo")["items"]]
    page.goto(f"{served.base}/timeline?plan=demo")
    live(page)
    page.wait_for_selector("#chart .main-svg")
    ticks = page.eval_on_selector_all(
        "#chart .yaxislayer-above .ytick text",
        """ts => ts.map(t => ({text: [...t.querySelectorAll('tspan.line')].map(s => s.textContent),
            box: t.getBoundingClientRect().toJSON()}))""",
    )
    ticks.sort(key=lambda t: t["box"]["y"])  # top to bottom, as a person reads them
    labels = [" ".join(t["text"][:-1]) for t in ticks]  # the last line is the id
    tree = [r["content"] for r in sorted_tree(run_json(ledger_env, "show", "--plan", "demo")["items"])]
    assert labels == tree and sorted(labels) == sorted(order)  # plan order, whole texts
    svg = page.locator("#chart .main-svg").first.bounding_box()
    for n, t in enumerate(ticks):
        assert t["box"]["x"] >= svg["x"], t  # not cut at the left edge
        for other in ticks[n + 1 :]:
            assert not boxes_meet(t["box"], other["box"]), (t["text"], other["text"])
    steps = page.eval_on_selector_all("#chart .xtick text", "ts => ts.map(t => t.textContent)")
    assert steps[0].startswith("msg 2871") and any(s.startswith("msg 4950") for s in steps)
    assert "times were not recorded" in page.inner_text("main").lower()
    modebar_clear(page, "#chart")
    shot(page, "demo-timeline")


def sorted_tree(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The plan's items depth first (each phase followed by its items), as the board shows them."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    known = {r["id"] for r in rows}
    for r in rows:
        children.setdefault(r["parent"] if r["parent"] in known else None, []).append(r)
    out: list[dict[str, Any]] = []

    def walk(parent: str | None) -> None:
        for r in children.get(parent, []):
            out.append(r)
            walk(r["id"])

    walk(None)
    return out


def test_the_demo_sweep_chart_holds_its_baseline_and_its_mode_bar_is_out_of_the_way(
    ledger_env: Path, served: Served, page: Any
) -> None:
    run(ledger_env, "demo", "--checks")
    results = run_json(ledger_env, "sweep", "results", "draft_tokens_standin", "--plan", "demo")
    base = next(r for r in results["rows"] if r["baseline"])
    sixteen = next(r for r in results["rows"] if not r["baseline"])
    page.goto(f"{served.base}/sweeps?plan=demo")
    live(page)
    section = ".sweep[data-sweep=draft_tokens_standin]"
    page.evaluate(f"document.querySelector('{section}').scrollIntoView()")
    chart = f"{section} .sweep-chart"
    page.wait_for_selector(f"{chart} .main-svg")
    low, high = page.evaluate(f"document.querySelector('{chart}')._fullLayout.yaxis.range")
    for value in (base["median"], base["max"], sixteen["min"], sixteen["max"]):
        assert low <= value <= high, (value, low, high)
    assert low <= 0  # a throughput from zero
    assert page.locator(f"{chart} .shapelayer path").count() >= 1  # the baseline drawn across the chart
    modebar_clear(page, chart)
    # The planned sweep of the seeds (never run) is listed with no runs, and no chart.
    planned = page.locator(".sweep[data-sweep=draft_tokens]")
    assert planned.locator("td.n").evaluate_all("ns => ns.map(n => n.textContent)") == ["0"] * 4
    page.evaluate(f"document.querySelector('{section}').scrollIntoView()")
    shot(page, "demo-sweep-chart")


def test_on_a_signed_ledger_the_passphrase_typed_in_the_page_signs_the_approval(
    ledger_env: Path, browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: the person's token alone gets a dialog that asks the passphrase; typed
    there, the `serve` the person runs opens their key for that one signature, and
    `todoledger check` verifies it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # The person who starts `serve` (Served: person_env) registers their token before the
    # ledger is signed: afterwards `token add` needs their signature too.
    person_env(ledger_env)
    passphrase = "correct horse battery"
    typed = tmp_path / "typed"
    typed.write_text(passphrase + "\n")
    with open(typed, "rb") as fh:
        made = subprocess.run(
            [todoledger_bin(), "person", "init", "ann", "--passphrase-fd", str(fh.fileno())],
            env=person_env(ledger_env),  # only a person registers the first key
            pass_fds=(fh.fileno(),),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert made.returncode == 0, made.stderr
    tokens = tmp_path / "tokens"
    hashed_tokens(tokens, f"{PERSON_TOKEN} ann person\n")
    run(ledger_env, "add", "Deploy to production", "--needs-approval")
    item = items(ledger_env)["Deploy to production"]["id"]
    server = Served(ledger_env, "--tokens", str(tokens))
    try:
        context, tab = _login(browser, server.base, PERSON_TOKEN)
        try:
            tab.click(f'button[data-act=approve][data-id="{item}"]')
            tab.wait_for_selector("dialog.sign input[type=password]")
            assert "this ledger is signed" in tab.inner_text("dialog.sign")
            tab.fill("dialog.sign input[type=password]", passphrase)
            shot(tab, "signed-passphrase")
            tab.click("dialog.sign button[value=sign]")
            tab.wait_for_selector("text=No item waits for a person.")
        finally:
            context.close()
    finally:
        server.stop()
    approvals = [e for e in run_json(ledger_env, "history", item) if e["field"] == "approved"]
    assert [e["writer"] for e in approvals] == ["web:ann"]
    checked = subprocess.run(
        [todoledger_bin(), "check"],
        env=subprocess_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout


def test_a_task_whose_worker_was_killed_is_shown_stopped_not_running(
    ledger_env: Path, served: Served, page: Any
) -> None:
    """An agent's plan_verify runs as an MCP task in its detached worker; the worker is
    SIGKILLed and its client is gone, so nothing looks at the task: the board's panel
    says it stopped and why (as `todoledger tasks` does), never that it runs."""
    import signal

    from tests.test_mcp_tasks import Stdio, gated_item, processes_with, result, wait_until
    from todoledger import Ledger

    marker = f"sleep 4{os.getpid() % 1000}.25"  # this test's own check, found by its text
    gated_item(ledger_env, f"cmd:{marker}")
    client = Stdio(ledger_env)
    try:
        created = result(client.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
    finally:
        client.close()
    assert created["resultType"] == "task", created
    wait_until(lambda: processes_with(marker), "the worker's check never started")
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
    assert row is not None and row["pid"] is not None
    pid = int(row["pid"])
    task = page.locator(f'ul.tasks li[data-task="{created["taskId"]}"]')
    page.goto(f"{served.base}/approvals?plan=main")
    live(page)
    assert task.locator(".st").inner_text() == "working"  # while its worker runs
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not processes_with(f"taskworker {created['taskId']}"), "the killed worker lingers")
    wait_until(lambda: not processes_with(marker), "the killed worker's check lingers")
    page.reload()
    live(page)
    assert task.get_attribute("class") == "stopped"
    assert task.locator(".st").inner_text() == "stopped"
    assert task.locator(".task-stopped").inner_text() == (
        f"(stopped: its worker (pid {pid}) is gone; the agent's next tasks/get resumes it or ends it)"
    )
    assert (
        task.locator(".task-message").inner_text()
        == "its worker last said: verifying: 1 check (cmd:) running"
    )
    assert f"pid {pid} on" not in task.inner_text() and "working" not in task.inner_text()
    shot(page, "task-stopped")
