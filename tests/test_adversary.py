"""Adversarial review of issue 17: routes by which the agent under review still
makes the plan say `verified` for a check it wrote itself, or acts as a person.
Each test failed while its bypass stood, and passes now; none is marked as an
expected failure (docs/security.md lists them, closed, with what closed them).
A bypass found later gets an `xfail(strict=True)` test here naming it, so that
its fix turns the mark into a failure until the mark is removed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import hashed_tokens, person_env, subprocess_env, todoledger_bin, with_test_clock
from tests.test_mcp import call, stdio
from todoledger import Ledger

pytestmark = pytest.mark.sqlite_only

PERSON = "cli:ann"
SHELL = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}


def state(item: str) -> str | None:
    with Ledger() as lg:
        return next(i["verification"] for i in lg.show()["items"] if i["id"] == item)


def add_item(content: str) -> str:
    with Ledger() as lg:
        return str(lg.add(content, writer=PERSON)["id"])


def cli(db: Path | str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args],
        env=subprocess_env(db, **env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_mcp_writer_argument_cannot_make_the_agents_own_check_independent(ledger_env: Path) -> None:
    """Scenario 4 again, through plan_update's `writer` argument: the agent writes the
    check as `ci:bot` (principal agent:ci) and completes the item as itself."""
    item = add_item("Verify the server restarts cleanly")

    async def main() -> None:
        async with stdio(ledger_env, name="claude-code") as c:
            try:
                await call(c, "plan_update", {"id": item, "check": "cmd:test -d .", "writer": "ci:bot"})
            except AssertionError:
                return  # refused: fine
            done = await call(c, "plan_update", {"id": item, "status": "completed", "evidence": "ok"})
            assert done["item"].get("verification") != "verified", done

    anyio.run(main)
    assert state(item) != "verified"


def test_mcp_client_name_is_not_another_principal_than_the_agents_shell(ledger_env: Path) -> None:
    """The agent starts `todoledger mcp` itself with clientInfo.name "reviewer", writes a
    check there, and completes from its own shell: one agent, yet shown verified."""
    item = add_item("Verify the server restarts cleanly")

    async def main() -> None:
        async with stdio(ledger_env, name="reviewer", **SHELL) as c:
            await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

    anyio.run(main)
    done = cli(ledger_env, "done", item, "--evidence", "ok", **SHELL)
    assert done.returncode == 0, done.stderr
    assert state(item) != "verified"


@pytest.mark.parametrize("named", [[], ["--writer", "ci:bot"]])
def test_a_check_written_with_the_marker_unset_does_not_verify_the_agents_claim(
    ledger_env: Path, named: list[str]
) -> None:
    """`env -u CLAUDECODE todoledger gate add ...` (script:<user>, or any --writer it
    names) writes a check that then 'independently' proves the agent shell's claim."""
    item = add_item("Verify the server restarts cleanly")
    added = cli(ledger_env, "gate", "add", *named, item, "cmd:test -d .")  # no marker: a script
    assert added.returncode == 0, added.stderr
    done = cli(ledger_env, "done", item, "--evidence", "ok", **SHELL)
    assert done.returncode == 0, done.stderr
    assert state(item) != "verified"


@pytest.mark.parametrize(
    "claim_env",
    [
        {"CODEX_THREAD_ID": "x"},  # `env -u CLAUDECODE CODEX_THREAD_ID=x todoledger done ...`
        {"TODOLEDGER_AGENT": "reviewer"},  # an install marker it names itself
    ],
)
def test_the_agent_cannot_claim_under_another_agents_marker_to_verify_its_own_check(
    ledger_env: Path, claim_env: dict[str, str]
) -> None:
    """Claude Code writes the check over its own MCP server, then completes the item
    from its shell with its marker swapped for another agent's: shown verified."""
    item = add_item("Verify the server restarts cleanly")

    async def main() -> None:
        async with stdio(ledger_env, name="claude-code") as c:
            await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

    anyio.run(main)
    done = cli(ledger_env, "done", item, "--evidence", "ok", **claim_env)
    assert done.returncode == 0, done.stderr
    assert state(item) != "verified"


def test_a_pseudo_terminal_made_in_the_agents_shell_is_not_a_person(ledger_env: Path) -> None:
    """`env -u CLAUDECODE script -qc "todoledger approve ID"`: a terminal, no marker in
    the process, so the command line took it for a person at a terminal. The agent's
    shell is still above it in the process tree."""
    import sys

    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]
    spawn = "import pty, sys; pty.spawn(sys.argv[1:])"
    ran = subprocess.run(
        [
            "bash",
            "-c",
            'env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID "$0" -c "$1" "$2" approve "$3" && pwd -P >/dev/null',
            sys.executable,
            spawn,
            todoledger_bin(),
            item,
        ],
        env=subprocess_env(ledger_env, **SHELL),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "approve: a person must run it, not agent-shell:claude-code:s1" in ran.stdout, ran.stdout
    from todoledger.core.approval import is_person

    with Ledger() as lg:
        approvers = [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]
    assert not any(is_person(w) for w in approvers), approvers


CI_TOKEN = "ci-token-0123456789abcdef"


def test_an_agent_token_without_the_agent_prefix_is_not_a_person_principal(
    ledger_env: Path, tmp_path: Path
) -> None:
    """tokens file `TOKEN ci agent` (the documented TOKEN IDENTITY ROLE form): over HTTP MCP
    its writer is `ci@mcp:...`, which `principal()` reads as `person:ci`: the agent's own
    check is recorded as arriving from a person (route "person", person_backed), and the
    report's proof section says a person wrote it."""
    import httpx2

    from tests.test_mcp import free_port, http

    item = add_item("Verify the server restarts cleanly")
    tokens = tmp_path / "tokens"
    hashed_tokens(tokens, f"{CI_TOKEN} ci agent\n")
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens), "--allow-checks"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=person_env(ledger_env),
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.TransportError:
                import time

                time.sleep(0.05)

        async def main() -> None:
            async with http(url, name="ci-runner", token=CI_TOKEN) as c:
                await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(10)
    with Ledger() as lg:
        (row,) = lg.checks([item])
        assert row.created_by.startswith(("ci@", "agent:ci@")), row.created_by
        assert not row.person_backed, row.as_dict()
        assert row.as_dict()["route"] != "person", row.as_dict()
        assert not row.principal.startswith("person:"), row.as_dict()


def test_a_persons_gate_does_not_pass_in_a_directory_the_agent_chose(
    ledger_env: Path, tmp_path: Path
) -> None:
    """A person's `cmd:test -f ok.txt`, written in the project, fails there; the agent
    `cd`s to a folder it made with an ok.txt and completes: the person's gate 'passes'
    and the item shows verified. A check runs in whatever directory the claimant runs in."""
    from tests.conftest import person_env

    project = tmp_path / "project"
    decoy = tmp_path / "decoy"
    project.mkdir()
    decoy.mkdir()
    (decoy / "ok.txt").write_text("built\n")
    item = add_item("The build writes ok.txt")
    added = subprocess.run(
        [todoledger_bin(), "gate", "add", item, "cmd:test -f ok.txt"],
        env=person_env(ledger_env),
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    run = dict(
        env=subprocess_env(ledger_env, **SHELL), stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    there = subprocess.run([todoledger_bin(), "done", item, "--evidence", "built"], cwd=project, **run)  # type: ignore[call-overload]
    assert there.returncode != 0  # the person's gate fails in the project
    subprocess.run([todoledger_bin(), "done", item, "--evidence", "built"], cwd=decoy, **run)  # type: ignore[call-overload]
    assert state(item) != "verified"


def test_a_persons_gate_does_not_pass_with_a_path_the_agent_chose(ledger_env: Path, tmp_path: Path) -> None:
    """The same gate steered by PATH: the agent puts a `grep` of its own that always
    exits 0 first on PATH and completes from the project. The check runs with the
    PATH its writer had, and without the variables that make a command load other
    code (LD_PRELOAD, BASH_ENV, PYTHONPATH, exported shell functions, ...)."""
    from tests.conftest import person_env

    project, decoy = tmp_path / "project", tmp_path / "bin"
    project.mkdir()
    decoy.mkdir()
    fake = decoy / "grep"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    item = add_item("The build writes out.txt")
    added = subprocess.run(
        [todoledger_bin(), "gate", "add", item, "cmd:grep -q built out.txt"],
        env=person_env(ledger_env),
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    steered = subprocess_env(ledger_env, **SHELL)
    steered["PATH"] = f"{decoy}:{steered['PATH']}"
    done = subprocess.run(
        [todoledger_bin(), "done", item, "--evidence", "built"],
        env=steered,
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0, done.stdout  # the person's grep finds no out.txt
    assert state(item) != "verified"


def test_a_check_runs_without_what_steers_a_command() -> None:
    import os

    from todoledger.checks.run import check_env

    saved = dict(os.environ)
    try:
        os.environ.update(
            {
                "LD_PRELOAD": "/tmp/x.so",
                "BASH_ENV": "/tmp/rc",
                "BASH_FUNC_grep%%": "() { true; }",
                "KEEP": "1",
            }
        )
        env = check_env("/usr/bin:/bin")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert env["PATH"] == "/usr/bin:/bin" and env["KEEP"] == "1"
    assert not {"LD_PRELOAD", "BASH_ENV", "BASH_FUNC_grep%%"} & set(env)


def test_the_agent_cannot_date_its_liveness_receipt_in_the_future(
    ledger_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 6 again: `TODOLEDGER_NOW=<next year> todoledger done ...` from the agent's
    shell writes the receipt (and the history) at that time, so the person's liveness
    gate never ages: an hour after the server stopped the item still shows verified."""
    from tests.test_proof import serving
    from todoledger.core.timefmt import now, shift

    with_test_clock(ledger_env)  # the test ages the receipt by TODOLEDGER_NOW; the agent's shell may not
    item = add_item("Server is up")
    with serving(b"ready") as port:
        with Ledger() as lg:
            lg.add_check(item, f"http://127.0.0.1:{port}/health", writer=PERSON)
        future = shift(now(), 365 * 86400)
        done = cli(ledger_env, "done", item, "--evidence", "up", TODOLEDGER_NOW=future, **SHELL)
        assert done.returncode == 0, done.stderr
    monkeypatch.setenv("TODOLEDGER_NOW", shift(now(), 3600))  # an hour on, the server long gone
    assert state(item) != "verified"


# The agent's own MCP client: started from its shell, it starts `todoledger mcp` and
# says yes to the approval prompt. (The SDK gives the server only a default
# environment, so the markers reach it only through the processes above it.)
OWN_CLIENT = """
import sys
sys.path.insert(0, sys.argv[2])
import anyio
from mcp import Client
from mcp_types import Implementation
from tests.test_mcp import stdio_params
from tests.test_mcp_approval_prompt import Person
from pathlib import Path

async def main() -> None:
    async with Client(
        stdio_params(Path(sys.argv[1])),
        client_info=Implementation(name="claude-code", version="1"),
        elicitation_callback=Person("accept"),
    ) as c:
        result = await c.call_tool("plan_next", {"claim": True})
        print(result.content[0].text)

anyio.run(main)
"""


@pytest.mark.parametrize("unset", [False, True], ids=["marker-inherited", "marker-unset"])
def test_an_agent_cannot_answer_its_own_approval_prompt_on_a_stdio_server_it_started(
    ledger_env: Path, tmp_path: Path, unset: bool
) -> None:
    """The agent runs its own client from its shell (marker set), which starts
    `todoledger mcp` and answers yes to the approval prompt: before, the approval was
    recorded as `mcp-user:...`, a person. Its shell is above the server in the process
    tree, even with the client's markers unset (`env -u CLAUDECODE ...`)."""
    import sys

    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]
    script = tmp_path / "client.py"
    script.write_text(OWN_CLIENT)
    root = str(Path(__file__).resolve().parents[1])
    strip = "env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID " if unset else ""
    # As an agent's shell tool runs a command: a shell that outlives it (Claude Code's
    # runs `eval '<command>' && pwd -P >| <file>`), so the shell stays above the client.
    ran = subprocess.run(
        [
            "bash",
            "-c",
            f'{strip}"$0" "$1" "$2" "$3" && pwd -P >/dev/null',
            sys.executable,
            str(script),
            str(ledger_env),
            root,
        ],
        env=subprocess_env(ledger_env, **SHELL),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "started from inside claude-code's shell" in ran.stdout, ran.stdout
    from todoledger.core.approval import is_person

    with Ledger() as lg:
        approvers = [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]
    assert not any(is_person(w) for w in approvers), approvers


def test_a_stdio_server_its_harness_starts_still_asks_the_harness_user(ledger_env: Path) -> None:
    """The control: a harness starts its MCP servers itself, with its marker in their
    environment (Claude Code sets CLAUDECODE=1 on them, Gemini CLI GEMINI_CLI=1), but
    not in its own. There the prompt reaches the harness's user, a person, as before."""
    from mcp import Client
    from mcp_types import Implementation

    from tests.test_mcp import stdio_params
    from tests.test_mcp_approval_prompt import Person

    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]

    async def main() -> None:
        async with Client(
            stdio_params(ledger_env, **SHELL),
            client_info=Implementation(name="claude-code", version="1"),
            elicitation_callback=Person("accept"),
        ) as c:
            await c.call_tool("plan_next", {"claim": True})

    anyio.run(main)
    with Ledger() as lg:
        approvers = [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]
    assert [w.split(":")[0] for w in approvers] == ["mcp-user"], approvers


def test_import_from_the_agents_shell_cannot_lift_a_persons_approval_gate(
    ledger_env: Path, tmp_path: Path
) -> None:
    """`todoledger export`, drop `needs_approval` and set `completed`, `todoledger import`:
    the person's approval gate is lifted (a person-only action, refused by `set` and
    `plan_update`) and the item is completed without anyone's approval."""
    import json

    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]
    exported = cli(ledger_env, "export")
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    for row in rows:
        row["needs_approval"] = False
        row["status"] = "completed"
    doctored = tmp_path / "plan.jsonl"
    doctored.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refused = cli(ledger_env, "import", str(doctored), **SHELL)
    assert refused.returncode == 1 and "only a person can lift" in refused.stderr, refused.stderr
    with Ledger() as lg:
        (shown,) = [i for i in lg.show()["items"] if i["id"] == item]
    assert shown["needs_approval"], shown
    assert shown["status"] != "completed", shown


@pytest.mark.parametrize("where", ["TODOLEDGER_TOKENS", "XDG_CONFIG_HOME"])
def test_an_agent_cannot_mint_a_persons_token_with_a_tokens_file_of_its_own(
    ledger_env: Path, tmp_path: Path, where: str
) -> None:
    """From its marked shell the agent writes `MYTOKEN boss person` to a file of its own,
    points TODOLEDGER_TOKENS (or XDG_CONFIG_HOME) at it and sets TODOLEDGER_TOKEN: the CLI
    takes it for a person's token and records `approved ... by cli:boss`. (On PostgreSQL,
    the 'real enforcement' route, the agent holds the DB URL too, so the same holds.)"""
    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]
    mine = "mine-0123456789abcdef-mine"
    if where == "TODOLEDGER_TOKENS":
        tokens = tmp_path / "my-tokens"
        extra = {"TODOLEDGER_TOKENS": str(tokens)}
    else:
        tokens = tmp_path / "cfg" / "todoledger" / "tokens"
        extra = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "TODOLEDGER_TOKENS": ""}
    tokens.parent.mkdir(parents=True, exist_ok=True)
    tokens.write_text(f"{mine} boss person\n")
    tokens.chmod(0o600)
    cli(ledger_env, "approve", item, TODOLEDGER_TOKEN=mine, **extra, **SHELL)
    from todoledger.core.approval import is_person

    with Ledger() as lg:
        approvers = [e["writer"] for e in lg.history() if e["field"] == "approved"]
    assert not any(is_person(w) for w in approvers), approvers


def test_a_forged_hook_event_of_another_agent_kind_does_not_make_the_claim_independent(
    ledger_env: Path,
) -> None:
    """Claude Code writes the check over its MCP server, then pipes a made-up Gemini
    AfterTool write_todos event into `todoledger hook gemini` from its own shell (writer
    gemini:g1, principal agent:gemini) and runs `verify`: shown verified."""
    import json

    item = add_item("Server restarts cleanly")

    async def main() -> None:
        async with stdio(ledger_env, name="claude-code") as c:
            await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

    anyio.run(main)
    event = {
        "hook_event_name": "AfterTool",
        "session_id": "g1",
        "tool_name": "write_todos",
        "tool_input": {"todos": [{"description": "Server restarts cleanly", "status": "completed"}]},
    }
    subprocess.run(
        [todoledger_bin(), "hook", "gemini"],
        input=json.dumps(event),
        env=subprocess_env(ledger_env, **SHELL),
        capture_output=True,
        text=True,
        timeout=60,
    )
    cli(ledger_env, "verify", **SHELL)
    with Ledger() as lg:
        (shown,) = [i for i in lg.show()["items"] if i["id"] == item]
    assert shown["status"] == "completed", shown  # the forged event went through
    assert shown["verification"] != "verified", shown


def test_a_hook_session_id_with_an_at_sign_is_not_a_persons_principal(ledger_env: Path) -> None:
    """`todoledger hook claude-code` takes session_id from the event as is: `ann@board`
    makes the writer `claude-code:ann@board`, which `principal()` reads as a token's
    person (`person:claude-code:ann`). The agent's own MCP check then 'independently'
    proves its forged completion, and `verify` shows it verified."""
    import json

    from todoledger.core.approval import principal

    item = add_item("Server restarts cleanly")

    async def main() -> None:
        async with stdio(ledger_env, name="claude-code") as c:
            await call(c, "plan_update", {"id": item, "check": "cmd:test -d ."})

    anyio.run(main)
    event = {
        "hook_event_name": "PostToolUse",
        "session_id": "ann@board",
        "tool_name": "TodoWrite",
        "tool_input": {
            "todos": [{"content": "Server restarts cleanly", "status": "completed", "activeForm": "x"}]
        },
    }
    subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(event),
        env=subprocess_env(ledger_env, **SHELL),
        capture_output=True,
        text=True,
        timeout=60,
    )
    cli(ledger_env, "verify", **SHELL)
    with Ledger() as lg:
        writers = {e["writer"] for e in lg.history(item=item)} - {PERSON}
        (shown,) = [i for i in lg.show()["items"] if i["id"] == item]
    assert not any(principal(w).startswith("person:") for w in writers), writers
    assert shown["verification"] != "verified", shown


def test_a_board_the_agent_serves_from_its_own_shell_does_not_make_it_a_person(ledger_env: Path) -> None:
    """From its marked shell the agent runs `todoledger serve` (loopback, no token),
    reads the CSRF token from GET / and posts approve with who=boss: `web:boss`."""
    import re
    import time

    import httpx2

    from tests.test_mcp import free_port
    from todoledger.core.approval import is_person

    with Ledger() as lg:
        item = lg.add("Deploy to production", needs_approval=True, writer=PERSON)["id"]
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=subprocess_env(ledger_env, **SHELL),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        page = None
        for _ in range(200):
            try:
                page = httpx2.get(base + "/", timeout=2)
                break
            except httpx2.TransportError:
                if proc.poll() is not None:
                    return  # refused to serve from an agent's shell: fine
                time.sleep(0.05)
        assert page is not None
        found = re.search(r'csrf content="([^"]+)"', page.text)
        if found is not None:
            httpx2.post(
                base + "/api/action",
                json={"action": "approve", "id": item, "who": "boss"},
                headers={"x-csrf-token": found.group(1), "Origin": base},
                timeout=10,
            )
    finally:
        proc.terminate()
        proc.wait(10)
    with Ledger() as lg:
        approvers = [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]
    assert not any(is_person(w) for w in approvers), approvers


def test_every_reader_tells_a_local_agents_check_from_proof(ledger_env: Path) -> None:
    """A check written under a local agent name (an MCP client called "reviewer"), the
    claim from Claude Code's shell: show, next, prime, todoread, the board's row and
    the report's proof section all say cross-checked (another agent principal's check,
    no person behind it: issue 29), and what waits on it is not ready."""
    import json

    from tests.test_mcp import call, stdio
    from todoledger.ingest.report import load, render_md
    from todoledger.web import pages

    with Ledger() as lg:
        item = lg.add("Verify the server restarts cleanly", writer=PERSON)["id"]
        after = lg.add("Announce the release", depends_on=[item], writer=PERSON)["id"]
        lg.add_check(item, "cmd:test -d .", writer="mcp:reviewer:r1")
        lg.done(item, evidence="ok", writer="agent-shell:claude-code:s1")
        shown = {i["id"]: i for i in lg.show()["items"]}
        assert shown[item]["verification"] == "cross-checked" and shown[after]["ready"] is False
        assert after not in [i["id"] for i in lg.next()]
        assert "cross-checked (another agent's check: no person behind it)" in lg.prime()
        (row,) = [it for it in lg.view("main").items if it.id == item]
        assert "cross-checked (another agent's check: no person behind it)" in pages.verification_text(row)
        report = render_md(load(lg, "main"))
    assert "cross-checked" in report and "verified by" not in report, report

    async def main() -> dict[str, object]:
        async with stdio(ledger_env, name="claude-code") as c:
            return dict(await call(c, "todoread", {"all": True}))

    read = anyio.run(main)
    assert "cross-checked" in json.dumps(read), read
