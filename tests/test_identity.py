"""Identity from where the call comes (issue 17, part 1).

Every rule runs the real `todoledger` console script in a subprocess, with the
environment an agent's shell tool gives it (its marker), without a terminal
(a pipe, as agents' shell tools run it) or with one (a real pty, as a person
types), and checks what the ledger recorded: a refusal writes nothing.

Scenario 1 of the issue (`test_scenario_1_agent_shell_cannot_remove_a_gate`): the
agent's real gate fails, it runs `todoledger gate remove <check>` in its shell,
then completes the item; before this change the history said a person removed
the gate.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.identity import os_user
from todoledger.ledger import Ledger

PERSON = "cli:ann"
CLAUDE = {"CLAUDECODE": "1"}


def cli(db: Path | str, *args: str, env: dict[str, str] | None = None, stdin: str = "") -> Any:
    """The real console script without a terminal (stdin and stdout are pipes)."""
    return subprocess.run(
        [todoledger_bin(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=route_env(db, env),
        timeout=60,
    )


def route_env(db: Path | str, env: dict[str, str] | None) -> dict[str, str]:
    """The environment of the route under test: without the tester's token (conftest)."""
    out = subprocess_env(db, **(env or {}))
    if "TODOLEDGER_TOKEN" not in (env or {}):
        out.pop("TODOLEDGER_TOKEN", None)
    return out


def at_terminal(db: Path | str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The real console script on a pty: stdin, stdout and stderr are a terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(todoledger_bin(), [todoledger_bin(), *args], route_env(db, env))
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def writers(field: str) -> list[str]:
    """Who wrote each event of that field (for `check`: each removal)."""
    with Ledger(create=False) as lg:
        return [
            ev["writer"]
            for ev in lg.history()
            if ev["field"] == field and (field != "check" or ev["new"] is None)
        ]


def gated(check: str = "cmd:false") -> tuple[str, str]:
    """An item with a gate a person wrote, which fails."""
    with Ledger() as lg:
        item = lg.add("Verify the server restarts cleanly", writer=PERSON)["id"]
        row = lg.add_check(item, check, writer=PERSON)
        lg.start(item, writer=PERSON)
    return item, row["id"]


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# -- who writes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("marker", "writer"),
    [
        ({"CLAUDECODE": "1"}, "agent-shell:claude-code"),
        ({"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}, "agent-shell:claude-code:s1"),
        ({"GEMINI_CLI": "1"}, "agent-shell:gemini"),
        ({"CODEX_THREAD_ID": "t9"}, "agent-shell:codex:t9"),
        ({"CODEX_SANDBOX": "seatbelt"}, "agent-shell:codex"),
        ({"OPENCODE": "1"}, "agent-shell:opencode"),
        ({"TODOLEDGER_AGENT": "claude-code"}, "agent-shell:claude-code"),  # what install adds
        ({}, "script:"),  # no terminal, no marker: not a person
    ],
)
def test_the_route_names_the_writer(ledger_env: Path, marker: dict[str, str], writer: str) -> None:
    for verb in (("add", "Fix the race", "--json"), ("add", "Fix the race")):  # the lean path and click
        assert cli(ledger_env, *verb, env=marker).returncode == 0
    got = writers("created")
    assert len(got) == 2 and all(w.startswith(writer) for w in got), got
    if writer == "script:":
        assert all(w == f"script:{os_user()}" for w in got)


def test_a_terminal_without_a_marker_is_a_person(ledger_env: Path) -> None:
    code, out = at_terminal(ledger_env, "add", "Write the note")
    assert code == 0, out
    assert writers("created") == [f"cli:{os_user()}"]


@pytest.mark.parametrize("args", [("--writer", "cli:ann"), ("--writer=web:boss",), ("--writer", "cli")])
@pytest.mark.parametrize("verb", [("add", "Ship it", "--json"), ("add", "Ship it"), ("approve", "--plan")])
def test_writer_never_names_a_person(ledger_env: Path, verb: tuple[str, ...], args: tuple[str, ...]) -> None:
    refused = cli(ledger_env, *verb, *args)
    assert refused.returncode != 0
    line = one_line(refused.stderr)
    assert "names a person" in line and "nothing was done" in line
    assert not Path(ledger_env).exists() or writers("created") == []


@pytest.mark.parametrize("name", ["cli:ann", "mcp-user:x:1", "web:ann"])
def test_todoledger_writer_never_names_a_person(ledger_env: Path, name: str) -> None:
    refused = cli(ledger_env, "add", "Ship it", "--json", env={"TODOLEDGER_WRITER": name})
    assert refused.returncode == 1
    assert "TODOLEDGER_WRITER" in one_line(refused.stderr)
    assert cli(ledger_env, "add", "Ship it", env={"TODOLEDGER_WRITER": "ci-bot"}).returncode == 0
    assert writers("created") == ["ci-bot"]


@pytest.mark.parametrize("args", [("--writer", "boss@mcp:x:1"), ("--writer", "agent:ci@web")])
def test_a_named_writer_never_poses_as_a_tokens_holder(ledger_env: Path, args: tuple[str, ...]) -> None:
    # `<identity>@…` leads a token holder's writes (principal reads it so): a script
    # naming it would pass for that person or agent when independence is judged.
    refused = cli(ledger_env, "add", "Ship it", "--json", *args)
    assert refused.returncode == 1
    assert "comes only from a token" in one_line(refused.stderr)
    refused = cli(ledger_env, "add", "Ship it", "--json", env={"TODOLEDGER_WRITER": args[1]})
    assert refused.returncode == 1 and "TODOLEDGER_WRITER" in one_line(refused.stderr)
    assert not Path(ledger_env).exists() or writers("created") == []


def test_an_agent_shell_names_only_its_own_writers(ledger_env: Path) -> None:
    refused = cli(ledger_env, "add", "x", "--json", "--writer", "codex:s1", env=CLAUDE)
    assert refused.returncode == 1 and "claude-code's shell" in one_line(refused.stderr)
    ok = cli(ledger_env, "add", "x", "--json", "--writer", "claude-code:s2", env=CLAUDE)
    assert ok.returncode == 0, ok.stderr
    assert writers("created") == ["claude-code:s2"]


# -- person-only actions from an agent's shell -----------------------------------


def test_scenario_1_agent_shell_cannot_remove_a_gate(ledger_env: Path) -> None:
    item, check = gated()
    refused = cli(ledger_env, "gate", "remove", check, env=CLAUDE)
    assert refused.returncode == 1
    line = one_line(refused.stderr)
    assert "gate remove: a person must run it" in line and "agent-shell:claude-code" in line
    assert "plain terminal" in line and "TODOLEDGER_TOKEN" in line
    forced = cli(ledger_env, "gate", "remove", check, "--force", env=CLAUDE)
    assert forced.returncode == 1 and "gate remove" in forced.stderr
    with Ledger(create=False) as lg:
        assert [r.id for r in lg.checks([item])] == [check]  # still there
    assert writers("check") == []  # nothing removed, in the history either
    # ... and the item stays uncompleted: its gate fails.
    done = cli(ledger_env, "done", item, "--json", env=CLAUDE)
    assert done.returncode == 1 and "not completed" in done.stderr


def test_agent_shell_cannot_approve_trust_or_force(ledger_env: Path) -> None:
    item, _ = gated()
    with Ledger() as lg:
        other = lg.add("Ship the release", writer=PERSON)["id"]
        lg.update(other, needs_approval=True, writer=PERSON)
        lg.add_check(other, "cmd:test -d .", writer="import:seed", trusted=False)
    before = len(Ledger(create=False).history())
    for args, verb in (
        (("approve", other), "approve"),
        (("approve", "--plan"), "approve --plan"),
        (("trust", "--yes"), "trust"),
        (("done", item, "--force", "--reason", "flaky", "--json"), "--force past cli:ann's gate"),
        (("done", item, "--force", "--reason", "flaky"), "--force past cli:ann's gate"),
    ):
        refused = cli(ledger_env, *args, env=CLAUDE)
        assert refused.returncode == 1, (args, refused.stdout)
        line = one_line(refused.stderr)
        assert f"{verb}" in line and "a person must run it" in line, line
    with Ledger(create=False) as lg:
        assert len(lg.history()) == before  # nothing written
        assert not [r for r in lg.checks() if r.trusted and r.created_by == "import:seed"]


def test_undo_any_of_another_writers_change_is_a_persons(ledger_env: Path) -> None:
    with Ledger() as lg:
        lg.add("A person's item", writer=PERSON)
    refused = cli(ledger_env, "undo", "--any", env=CLAUDE)
    assert refused.returncode == 1
    assert "undo --any of cli:ann's change" in one_line(refused.stderr)
    # Its own change it may undo, from any of its routes (one principal).
    with Ledger() as lg:
        lg.add("The agent's item", writer="claude-code:s1")
    assert cli(ledger_env, "undo", "--any", "--json", env=CLAUDE).returncode == 0
    assert [i["content"] for i in Ledger(create=False).items()] == ["A person's item"]


def test_without_a_terminal_a_person_only_verb_asks_for_a_token(ledger_env: Path, tmp_path: Path) -> None:
    item, check = gated()
    refused = cli(ledger_env, "gate", "remove", check)  # no marker, but no terminal either
    assert refused.returncode == 1
    line = one_line(refused.stderr)
    assert "no terminal" in line and "TODOLEDGER_TOKEN" in line
    # A person's token, registered in the ledger by a person, is that person: the removal is theirs.
    with Ledger() as lg:
        lg.add_token("ann", token="ann-token-0123456789", writer=PERSON)
        lg.add_token("ci", agent=True, token="ci-token-0123456789ab", writer=PERSON)
    as_ann = {"TODOLEDGER_TOKEN": "ann-token-0123456789"}
    removed = cli(ledger_env, "gate", "remove", check, "--json", env=as_ann | CLAUDE)
    assert removed.returncode == 0, removed.stderr
    assert writers("check") == ["cli:ann"]
    # An agent's token is that agent (shown by its token: agent:ci@cli): refused.
    with Ledger() as lg:
        again = lg.add_check(item, "cmd:false", writer=PERSON)["id"]
    as_ci = {"TODOLEDGER_TOKEN": "ci-token-0123456789ab"}
    refused = cli(ledger_env, "gate", "remove", again, env=as_ci)
    assert refused.returncode == 1 and "not agent:ci@cli" in one_line(refused.stderr)
    wrong = cli(ledger_env, "add", "y", "--json", env={"TODOLEDGER_TOKEN": "not-a-token-at-all-x"})
    assert wrong.returncode == 1 and "not a token registered in this ledger" in one_line(wrong.stderr)
    # A tokens file, wherever the environment points, is no route to a person on the command line.
    tokens = tmp_path / "tokens"
    tokens.write_text("mine-token-0123456789 boss person\n", "utf-8")
    mine = {"TODOLEDGER_TOKENS": str(tokens), "TODOLEDGER_TOKEN": "mine-token-0123456789"}
    refused = cli(ledger_env, "gate", "remove", again, env=mine)
    assert refused.returncode == 1 and "not a token registered" in one_line(refused.stderr)


def test_a_person_at_a_terminal_approves(ledger_env: Path) -> None:
    with Ledger() as lg:
        item = lg.add("Ship the release", writer=PERSON)["id"]
        lg.update(item, needs_approval=True, writer=PERSON)
    code, out = at_terminal(ledger_env, "approve", item)
    assert code == 0, out
    assert writers("approved") == [f"cli:{os_user()}"]


def test_a_terminal_that_inherits_the_marker_is_the_agent(ledger_env: Path) -> None:
    """An IDE terminal, or Claude Code's `!`: the refusal says where a person goes."""
    with Ledger() as lg:
        item = lg.add("Ship the release", writer=PERSON)["id"]
        lg.update(item, needs_approval=True, writer=PERSON)
    code, out = at_terminal(ledger_env, "approve", item, env=CLAUDE)
    assert code == 1
    assert "approve: a person must run it" in out and "plain terminal" in out
    assert writers("approved") == []


def test_the_ledger_refuses_an_agent_whatever_the_route() -> None:
    """The rules live in the ledger: the Python API with an agent's writer is refused too."""
    with Ledger() as lg:
        item = lg.add("x", writer=PERSON)["id"]
        check = lg.add_check(item, "cmd:false", writer=PERSON)["id"]
        for call, verb in (
            (lambda: lg.remove_check(check, writer="mcp:claude-code:s1"), "gate remove"),
            (lambda: lg.trust(writer="codex:t1"), "trust"),
            (lambda: lg.approve(item, writer="agent:ci"), "approve"),
            (lambda: lg.undo(writer="gemini:s1", any_writer=True), "undo --any"),
        ):
            with pytest.raises(Exception, match=f"{verb}.*a person must run it"):
                call()
        # A person's own Python API call (an explicit person identity) goes through.
        assert lg.remove_check(check, writer=PERSON)["id"] == check


# -- the pre-tool shell screen ----------------------------------------------------

DENIED = [
    "todoledger approve abc",
    "todoledger approve --plan",
    "python -m todoledger approve abc",
    "/home/u/.venv/bin/todoledger trust --yes",
    "env -u CLAUDECODE todoledger gate remove c1",
    'sh -c "todoledger approve abc"',
    "bash -lc 'todoledger gate remove c1'",
    "echo $(todoledger undo --any)",
    "x=`todoledger approve abc`",
    "cd /tmp && TODOLEDGER_WRITER=x todoledger done abc --force --reason flaky",
    "todo'ledger' approve abc",
    "t\\odoledger trust",
    "todoledger token add boss",
    "todoledger token remove ann",
    # Read as the command line reads them (issue 29: `--plan=main` and accept-metric went through).
    "todoledger approve --plan=main",
    "todoledger approve --plan main",
    "todoledger --plan main approve",
    "todoledger approve --writer x abc",
    "todoledger approve -- abc",
    "exec env -u CLAUDECODE script -qc 'todoledger approve --plan=main' /dev/null",
    "todoledger accept-metric abc tok_s",
    "todoledger done abc --force=yes",
]
ALLOWED = [
    "todoledger show --json",
    "todoledger approve --list",
    "todoledger start abc --force",
    "todoledger gate add abc cmd:pytest",
    "todoledger token list",
    "grep -rn approve src/todoledger",
    "ls ~/.cache/todoledger-e2e && echo trust",
    "git commit -m 'approve the plan'",
    "todoledger approve --list --plan=main",
    "todoledger approve --plan main --list",
    "todoledger approve --writer x",
    "todoledger add 'approve the deploy'",
    "todoledger metrics abc",
]


@pytest.mark.parametrize("command", DENIED)
@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("claude-code", lambda c: {"tool_name": "Bash", "tool_input": {"command": c}}),
        ("codex", lambda c: {"tool_name": "Bash", "tool_input": {"command": c}}),
        ("gemini", lambda c: {"tool_name": "run_shell_command", "tool_input": {"command": c}}),
        ("opencode", lambda c: {"tool_input": {"command": c}}),  # what the plugin sends
    ],
)
def test_the_screen_denies_person_only_verbs(ledger_env: Path, agent: str, event: Any, command: str) -> None:
    ran = cli(ledger_env, "hook", agent, "--screen", stdin=json.dumps(event(command)))
    assert ran.returncode == 2, command  # Claude Code, Codex and Gemini deny on exit 2
    assert "is a person's to run, not an agent's" in one_line(ran.stderr)
    assert ran.stdout == ""


@pytest.mark.parametrize("command", ALLOWED)
def test_the_screen_lets_the_rest_through(ledger_env: Path, command: str) -> None:
    event = {"tool_name": "Bash", "tool_input": {"command": command}}
    ran = cli(ledger_env, "hook", "claude-code", "--screen", stdin=json.dumps(event))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", ""), command


def test_every_person_only_action_of_the_table_is_screened_and_refused_by_that_name() -> None:
    """One table (core/person_actions.py): the screen denies each action's command
    line, and every name the ledger refuses a non-person with is in the table."""
    import re

    from todoledger.core.person_actions import PERSON_ACTIONS
    from todoledger.screen import person_only_verb

    for action in PERSON_ACTIONS:
        line = action.usage.split(" (")[0].replace("[NAME]", "main").replace("|", " ").replace("...", "x")
        assert person_only_verb(line) == action.verb, (line, action.verb)
    source = Path(__file__).resolve().parent.parent / "src" / "todoledger"
    refused = {
        m.group(1)
        for path in source.rglob("*.py")
        for m in re.finditer(r'require_person\(\s*"([^"]+)"', path.read_text(encoding="utf-8"))
    }
    assert refused and refused <= {a.verb for a in PERSON_ACTIONS}, refused


def test_the_screen_never_breaks_the_agent(ledger_env: Path) -> None:
    for stdin in ("", "not json todoledger", "[]", '{"tool_input": {"command": 3}}'):
        ran = cli(ledger_env, "hook", "claude-code", "--screen", stdin=stdin)
        assert (ran.returncode, ran.stderr) == (0, ""), stdin
