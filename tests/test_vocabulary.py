"""One vocabulary of verification states (issue 29 part 5), and the attack that
made it needed: "the agent's own agent token is a second principal"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from todoledger import Ledger, LedgerError
from todoledger.core import verification as v

from .conftest import subprocess_env, todoledger_bin

PERSON = "cli:ann"
SHELL = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}
AGENT_TOKEN = "agent-token-7f3a9c2e51d84b06"


def state(lg: Ledger, item: str) -> str | None:
    return next(i["verification"] for i in lg.show()["items"] if i["id"] == item)


def ready(lg: Ledger, item: str) -> bool:
    return item in [i["id"] for i in lg.next(limit=50)]


def test_the_precedence_weakest_first_and_what_counts_as_proof() -> None:
    assert v.PRECEDENCE == (
        "failed",
        "stale",
        "unverified",
        "reported",
        "stand-in",
        "typed",
        "self-checked",
        "cross-checked",
        "accepted by",
        "verified",
    )
    ladder = ["verified", v.accepted_by("cli:ann"), "cross-checked", "self-checked", "typed", "stand-in"]
    for n, stronger in enumerate(ladder[:-1]):
        assert v.weakest([stronger, ladder[n + 1]]) == ladder[n + 1]
    assert v.weakest(["verified", "failed", "stale"]) == "failed"
    assert [s for s in (*v.PRECEDENCE, v.accepted_by("cli:ann")) if v.proven(s)] == ["verified"]
    assert v.opens("verified") and not v.opens(v.accepted_by("cli:ann"))
    assert v.opens(v.accepted_by("cli:ann"), metric=True) and not v.opens("typed", metric=True)
    assert not v.opens("cross-checked") and v.opens("cross-checked", accept="cross-checked")


def test_an_agents_own_agent_token_is_no_second_principal_that_verifies(ledger_env: Path | str) -> None:
    """Before: from its shell the agent added a gate under TODOLEDGER_TOKEN=<its own agent
    token> (`cmd:grep -q ok built.txt`, a file it wrote), then ran `done` without the
    token: the item read `verified`, and what waited on it started. No person saw the check."""
    with Ledger() as lg:
        lg.add_token("bot", agent=True, token=AGENT_TOKEN, writer=PERSON)
        item = lg.add("Build the release", writer=PERSON)["id"]
        after = lg.add("Ship it", depends_on=[item], writer=PERSON)["id"]
    Path("built.txt").write_text("ok\n")

    def shell(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [todoledger_bin(), *args],
            env=subprocess_env(ledger_env, **SHELL, **env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )

    added = shell("gate", "add", item, "cmd:grep -q ok built.txt", TODOLEDGER_TOKEN=AGENT_TOKEN)
    assert added.returncode == 0, added.stderr
    done = shell("done", item, "--evidence", "built")
    assert done.returncode == 0, done.stderr
    with Ledger() as lg:
        assert state(lg, item) == "cross-checked"
        assert not ready(lg, after)
        # An agent's token never trusts a check, and only a person's trust makes it proof.
        (row,) = lg.checks([item])
        assert not row.person_backed


def test_an_item_shows_its_weakest_gate_and_readiness_opens_on_verified(ledger_env: Path | str) -> None:
    with Ledger() as lg:
        item = lg.add("Two gates", writer=PERSON)["id"]
        after = lg.add("After it", depends_on=[item], writer=PERSON)["id"]
        lg.add_check(item, "cmd:test -d .", writer=PERSON)
        lg.add_check(item, "cmd:test -e .", writer="mcp:claude-code:s1")
        lg.done(item, evidence="ok", writer="mcp:claude-code:s1")
        assert state(lg, item) == "self-checked" and not ready(lg, after)  # one gate is the claimant's own
        (own,) = [r for r in lg.checks([item]) if r.created_by != PERSON]
        lg.trust([own.id], writer=PERSON)
        lg.verify([item])
        assert state(lg, item) == "verified" and ready(lg, after)


def test_the_report_counts_only_verified_as_proven(ledger_env: Path | str) -> None:
    from todoledger.ingest.report import load

    with Ledger() as lg:
        cross = lg.add("Cross-checked", writer=PERSON)["id"]
        lg.add_check(cross, "cmd:test -d .", writer="mcp:codex:c1")
        lg.done(cross, evidence="ok", writer="mcp:claude-code:s1")
        proven = lg.add("Verified", writer=PERSON)["id"]
        lg.add_check(proven, "cmd:test -d .", writer=PERSON)
        lg.done(proven, evidence="ok", writer="mcp:claude-code:s1")
        report = load(lg, "main")
    rows = {r[0]: r for r in report.claims.rows()}
    # writer, claimed, proven independently, checked not proven, ...
    assert rows["mcp:claude-code:s1"][1:4] == ("2", "1", "1")


@pytest.mark.parametrize("word", ["cross-checked", "stand-in", "typed", "accepted by cli:ann", "verified"])
def test_each_word_has_its_own_colour_on_the_terminal_and_the_board(word: str) -> None:
    from todoledger.cli import render_term

    styles = render_term.VERIFICATION_STYLE
    assert len(set(styles.values())) == len(styles)  # no two words share a colour
    assert render_term._word_style(word)
    css = (Path(render_term.__file__).parent.parent / "web" / "static" / "board.css").read_text()
    assert f".v-{word.split(' ')[0]} {{" in css


def test_a_gate_that_accepts_cross_checked_opens_on_it_and_still_says_cross_checked(
    ledger_env: Path | str,
) -> None:
    """Gates requiring proof accept only verified, unless the gate says `--accept cross-checked`."""
    with Ledger() as lg:
        strict = lg.add("Strict", writer=PERSON)["id"]
        lenient = lg.add("Lenient", writer=PERSON)["id"]
        after_strict = lg.add("After strict", depends_on=[strict], writer=PERSON)["id"]
        after_lenient = lg.add("After lenient", depends_on=[lenient], writer=PERSON)["id"]
        lg.add_check(strict, "cmd:test -d .", writer="mcp:codex:c1")
        lg.add_check(lenient, "cmd:test -d .", {"accept": "cross-checked"}, writer="mcp:codex:c1")
        for item in (strict, lenient):
            lg.done(item, evidence="ok", writer="mcp:claude-code:s1")
            assert state(lg, item) == "cross-checked"
        assert not ready(lg, after_strict) and ready(lg, after_lenient)
    with Ledger() as lg, pytest.raises(LedgerError, match="accept is cross-checked"):
        lg.add_check(strict, "cmd:test -e .", {"accept": "self-checked"}, writer=PERSON)
    ran = subprocess.run(
        [todoledger_bin(), "gate", "add", strict, "cmd:test -e .", "--accept", "cross-checked", "--json"],
        env=subprocess_env(ledger_env),
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0 and '"accept": "cross-checked"' in ran.stdout.replace('":"', '": "'), (
        ran.stdout
    )
