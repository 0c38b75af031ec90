"""A signed ledger (issue 29): a person's word is a signature only the person can make.

Real processes, a real key made here with a known passphrase handed over through
`--passphrase-fd` (never the environment), real pseudo-terminals (`script`), the
real SQLite file and PostgreSQL (tests/conftest.py runs these on both backends)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from todoledger import Ledger

from .conftest import TESTER_TOKEN, hashed_tokens, person_env, register_tester, subprocess_env, todoledger_bin
from .test_mcp import free_port

PASSPHRASE = "correct horse battery"
SHELL = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}  # Claude Code's Bash tool
AGENT = "claude-code:s1"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's own config folder (their key lives here), for this test only."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def secret_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / f"typed-{len(list(tmp_path.glob('typed-*')))}"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def tl(db: Path | str, *args: str, typed: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """`todoledger ARGS`, with `--passphrase-fd` reading `typed` when given."""
    fds: tuple[int, ...] = ()
    argv = [todoledger_bin(), *args]
    handle = None
    if typed is not None:
        handle = open(typed, "rb")  # noqa: SIM115 (closed below, after the child has it)
        fds = (handle.fileno(),)
        argv += ["--passphrase-fd", str(handle.fileno())]
    try:
        return subprocess.run(
            argv,
            env=subprocess_env(db, **env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            pass_fds=fds,
        )
    finally:
        if handle is not None:
            handle.close()


def as_person(db: Path | str) -> dict[str, str]:
    """The route a script has to a person's identity (a person's registered token):
    only a person registers a ledger's first key."""
    register_tester(db)
    return {"TODOLEDGER_TOKEN": TESTER_TOKEN}


def sign_ledger(db: Path | str, tmp_path: Path, name: str = "ann") -> None:
    done = tl(db, "person", "init", name, typed=secret_file(tmp_path, PASSPHRASE), **as_person(db))
    assert done.returncode == 0, done.stderr
    assert "this ledger is signed" in done.stdout


def gated(content: str = "Deploy to production") -> str:
    with Ledger() as lg:
        return str(lg.add(content, needs_approval=True, writer=AGENT)["id"])


def approvers(item: str) -> list[str]:
    with Ledger() as lg:
        return [e["writer"] for e in lg.history(item=item) if e["field"] == "approved"]


def check(db: Path | str) -> subprocess.CompletedProcess[str]:
    return tl(db, "check")


def test_person_init_registers_a_key_that_signs_its_own_registration(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    sign_ledger(ledger_env, tmp_path)
    key = config / "todoledger" / "keys" / "ann.key"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    stored = json.loads(key.read_text())
    assert PASSPHRASE not in key.read_text() and stored["kdf"]["name"] == "scrypt"
    listed = tl(ledger_env, "person", "list")
    assert "person keys: ann (trusted on first use, registered at" in listed.stdout
    assert check(ledger_env).returncode == 0, check(ledger_env).stdout
    # A second first key is not registered: later keys are signed in by a registered one.
    again = tl(ledger_env, "person", "init", "mallory", typed=secret_file(tmp_path, "another passphrase"))
    assert again.returncode == 0 and "mallory's key is not registered in it" in again.stdout
    assert "mallory" not in tl(ledger_env, "person", "list").stdout


def test_a_person_token_alone_approves_nothing_on_a_signed_ledger(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """A person's token, a terminal route, the environment: none of them is a signature."""
    with Ledger() as lg:
        lg.add_token("ann", token="ann-token-0123456789abcdef", writer="cli:ann")
    sign_ledger(ledger_env, tmp_path)
    item = gated()
    refused = tl(ledger_env, "approve", item, TODOLEDGER_TOKEN="ann-token-0123456789abcdef")
    assert refused.returncode == 1
    assert "needs a person's signature" in refused.stderr or "/dev/tty" in refused.stderr, refused.stderr
    assert approvers(item) == []
    wrong = tl(ledger_env, "approve", item, typed=secret_file(tmp_path, "not the passphrase"))
    assert wrong.returncode == 1 and "wrong passphrase" in wrong.stderr
    signed = tl(ledger_env, "approve", item, typed=secret_file(tmp_path, PASSPHRASE))
    assert signed.returncode == 0, signed.stderr
    assert approvers(item) == ["cli:ann"]
    assert check(ledger_env).returncode == 0


# How an agent's shell reaches a terminal of its own (the Why of issue 29): a
# pseudo-terminal under its marked shell, one detached from it (setsid -f), and
# one that replaced the marked shell (exec). Each types a guess at the prompt.
ROUTES = {
    "script": 'env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID script -qc "$0" /dev/null',
    "setsid": 'env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID setsid -f script -qc "$0" /dev/null',
    "exec": 'exec env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID script -qc "$0" /dev/null',
}


def from_agents_shell(db: Path | str, route: str, command: str, out: Path) -> str:
    """Run `command` from a marked agent shell by `route`; what it printed."""
    done = out.with_suffix(".rc")
    inner = f"{command} >{out} 2>&1; echo $? >{done}"
    subprocess.run(
        ["bash", "-c", ROUTES[route], inner],
        env=subprocess_env(db, **SHELL),
        input="letmein-guess\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    for _ in range(600):  # setsid -f returns at once: its child goes on alone
        if done.exists() and done.read_text().strip():
            break
        time.sleep(0.05)
    return out.read_text() if out.exists() else ""


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_approve_from_an_agents_own_terminal_needs_the_passphrase(
    ledger_env: Path | str, tmp_path: Path, config: Path, route: str
) -> None:
    sign_ledger(ledger_env, tmp_path)
    item = gated()
    said = from_agents_shell(ledger_env, route, f"{todoledger_bin()} approve {item}", tmp_path / "a.out")
    assert "nothing was done" in said, said
    assert approvers(item) == []
    typed = secret_file(tmp_path, PASSPHRASE)
    command = f"{todoledger_bin()} approve {item} --passphrase-fd 3 3<{typed}"
    said = from_agents_shell(ledger_env, route, command, tmp_path / "b.out")
    assert f"approved {item}" in said, said
    assert approvers(item) == ["cli:ann"]
    assert check(ledger_env).returncode == 0


@pytest.mark.sqlite_only
def test_a_rolled_back_ledger_is_refused_at_the_next_signed_action(
    ledger_env: Path, tmp_path: Path, config: Path
) -> None:
    sign_ledger(ledger_env, tmp_path)
    first, second = gated("Deploy"), gated("Announce")
    copy = tmp_path / "before.db"
    with Ledger() as lg:
        lg.ops()  # the WAL checkpointed into the file on close
    shutil.copy(ledger_env, copy)
    assert tl(ledger_env, "approve", first, typed=secret_file(tmp_path, PASSPHRASE)).returncode == 0
    for suffix in ("-wal", "-shm"):
        Path(f"{ledger_env}{suffix}").unlink(missing_ok=True)
    shutil.copy(copy, ledger_env)  # the approval is gone, and so is the event the key remembers
    refused = tl(ledger_env, "approve", second, typed=secret_file(tmp_path, PASSPHRASE))
    assert refused.returncode == 1
    assert "rolled back or replaced" in refused.stderr and "the last change ann signed" in refused.stderr
    assert approvers(second) == []


def sql(db: Path | str, *statements: tuple[str, tuple[Any, ...]]) -> list[Any]:
    """Edit the ledger around todoledger, as an agent with a database client would."""
    rows: list[Any] = []
    if isinstance(db, Path):
        import sqlite3

        conn = sqlite3.connect(db)
        with conn:
            for text, params in statements:
                rows = conn.execute(text, params).fetchall()
        conn.close()
        return rows
    import psycopg

    with psycopg.connect(db, autocommit=True) as pg:
        for text, params in statements:
            cur = pg.execute(text.replace("?", "%s"), params)
            rows = cur.fetchall() if cur.description else []
    return rows


def test_check_reports_a_receipt_and_a_check_author_edited_in_the_database(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """The Why: two SQL updates turned a failing completion into `verified`, and check said ok.
    The columns are cross-checked against their events on any ledger, signed or not."""
    with Ledger() as lg:
        item = lg.add("Beat 3x catid", writer=AGENT)["id"]
        row = lg.add_check(item, "cmd:test -f built.txt", writer=AGENT)
        lg.verify(plan="main")
    assert check(ledger_env).returncode == 0, check(ledger_env).stdout
    sql(
        ledger_env,
        ("UPDATE receipts SET result = 'pass' WHERE check_id = ?", (row["id"],)),
        ("UPDATE checks SET created_by = 'cli:ann', trusted_by = 'cli:ann' WHERE id = ?", (row["id"],)),
    )
    found = check(ledger_env)
    assert found.returncode == 1
    assert f"the receipts of check {row['id']} read pass; its events say fail" in found.stdout, found.stdout
    assert f"check {row['id']} names cli:ann as its author; its event says {AGENT}" in found.stdout
    assert f"check {row['id']} reads trusted by cli:ann; no event records that trust" in found.stdout


def _link(prev: str, fields: list[Any]) -> str:
    """The event chain's rule, written out as a forger would (no todoledger import)."""
    parts = [prev, "\n"]
    for value in fields:
        parts.append("~" if value is None else f"{len(str(value))}:{value}")
    return hashlib.sha256("".join(parts).encode()).hexdigest()


def test_check_reports_a_person_token_forged_with_a_hand_written_chain(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    sign_ledger(ledger_env, tmp_path)
    item = gated()
    secret = "forged-token-0123456789abcdef"
    hashed = hashlib.sha256(secret.encode()).hexdigest()
    at = "2026-12-06T12:00:00.000Z"
    op = sql(
        ledger_env,
        (
            "INSERT INTO tokens (hash, name, role, created_by, at) VALUES (?, 'mallory', 'person', 'cli:ann', ?)",
            (hashed, at),
        ),
        (
            "INSERT INTO ops (plan, writer, at, kind, untimed) VALUES ('(tokens)', 'cli:ann', ?, 'token', 0)"
            " RETURNING op",
            (at,),
        ),
    )[0][0]
    prev = sql(ledger_env, ("SELECT chain FROM events ORDER BY seq DESC LIMIT 1", ()))[0][0]
    new = json.dumps({"hash": hashed, "name": "mallory", "role": "person"}, separators=(",", ":"))
    fields = [op, "(tokens)", None, "token", None, new, "cli:ann", at]
    sql(
        ledger_env,
        (
            "INSERT INTO events (op, plan, item, field, old, new, writer, at, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, _link(prev, fields)),
        ),
    )
    refused = tl(ledger_env, "approve", item, TODOLEDGER_TOKEN=secret)
    assert refused.returncode == 1 and approvers(item) == []
    found = check(ledger_env)
    assert found.returncode == 1
    assert "(tokens)/-: event" in found.stdout and "(token, op" in found.stdout, found.stdout
    assert "a person-only action without a person's signature on a signed ledger" in found.stdout


def test_a_second_key_is_signed_in_by_a_registered_key(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    sign_ledger(ledger_env, tmp_path)
    bob_home = tmp_path / "bob-config"
    made = tl(
        ledger_env,
        "person",
        "init",
        "bob",
        typed=secret_file(tmp_path, "bob's passphrase"),
        XDG_CONFIG_HOME=str(bob_home),
    )
    assert made.returncode == 0 and "not registered" in made.stdout  # made on bob's machine, not registered
    line = tl(ledger_env, "person", "export", "bob", XDG_CONFIG_HOME=str(bob_home)).stdout.strip()
    assert line.startswith("todoledger-person-key bob ")
    unsigned = tl(
        ledger_env,
        "person",
        "add",
        line,
        XDG_CONFIG_HOME=str(bob_home),
        typed=secret_file(tmp_path, "bob's passphrase"),
    )
    assert unsigned.returncode == 1  # bob's own key is not registered: it cannot sign itself in
    added = tl(ledger_env, "person", "add", line, typed=secret_file(tmp_path, PASSPHRASE))
    assert added.returncode == 0, added.stderr
    item = gated()
    by_bob = tl(
        ledger_env,
        "approve",
        item,
        XDG_CONFIG_HOME=str(bob_home),
        typed=secret_file(tmp_path, "bob's passphrase"),
    )
    assert by_bob.returncode == 0, by_bob.stderr
    assert approvers(item) == ["cli:bob"]
    removed = tl(ledger_env, "person", "remove", "bob", typed=secret_file(tmp_path, PASSPHRASE))
    assert removed.returncode == 0, removed.stderr
    assert "bob" not in tl(ledger_env, "person", "list").stdout
    assert check(ledger_env).returncode == 0, check(ledger_env).stdout


@pytest.mark.sqlite_only
def test_person_reset_at_the_owners_terminal_removes_the_keys_and_is_flagged(
    ledger_env: Path, tmp_path: Path, config: Path
) -> None:
    sign_ledger(ledger_env, tmp_path)
    without_terminal = tl(ledger_env, "person", "reset", typed=secret_file(tmp_path, ledger_env.name))
    assert without_terminal.returncode == 1 and "terminal" in without_terminal.stderr
    typed = secret_file(tmp_path, ledger_env.name)
    ran = subprocess.run(
        ["script", "-qc", f"{todoledger_bin()} person reset --passphrase-fd 3 3<{typed}", "/dev/null"],
        env=subprocess_env(ledger_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "removed 1 person keys" in ran.stdout, ran.stdout
    listed = tl(ledger_env, "person", "list").stdout
    assert listed.startswith("unsigned: an agent running as you could act as you")
    assert "WARNING: person keys were reset at" in listed
    # Unsigned again: a person's approval now needs no signature, and check does not list it.
    item = gated()
    with Ledger() as lg:
        lg.approve(item, writer="cli:ann")
    assert check(ledger_env).returncode == 0, check(ledger_env).stdout


@pytest.fixture
def board(ledger_env: Path | str, tmp_path: Path, config: Path) -> Iterator[tuple[str, str]]:
    """`serve --tokens` started by the person, their token in the file, on a signed ledger."""
    token = "ann-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    hashed_tokens(tokens, f"{token} ann\n")
    with Ledger() as lg:
        lg.add_token("ann", token=token, writer="cli:ann")
    sign_ledger(ledger_env, tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=subprocess_env(ledger_env, TODOLEDGER_TOKEN=token),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                httpx2.get(base + "/mcp", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.05)
        yield base, token
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_process_holding_the_persons_token_gets_no_signed_approval_from_the_board(
    board: tuple[str, str], ledger_env: Path | str
) -> None:
    import re

    base, token = board
    item = gated()
    auth = {"Authorization": f"Bearer {token}", "Accept": "text/html"}
    page = httpx2.get(f"{base}/", headers=auth)
    csrf = re.search(r'<meta name=csrf content="([^"]+)">', page.text)
    assert csrf is not None, page.text[:500]
    for body in ({"action": "approve", "id": item}, {"action": "approve_plan"}):
        answer = httpx2.post(
            f"{base}/api/action",
            json=body,
            headers={"Authorization": f"Bearer {token}", "X-CSRF-Token": csrf.group(1)},
        )
        assert answer.status_code == 400, answer.text
        assert "sign it at your own terminal: todoledger approve" in answer.json()["error"]
        assert answer.json()["sign"] is True  # the page asks the passphrase
    guess = httpx2.post(
        f"{base}/api/action",
        json={"action": "approve", "id": item, "passphrase": "letmein-guess"},
        headers={"Authorization": f"Bearer {token}", "X-CSRF-Token": csrf.group(1)},
    )
    assert guess.status_code == 400 and "wrong passphrase" in guess.json()["error"]
    assert approvers(item) == []
    with Ledger() as lg:
        assert lg.approvals("main")["plan"]["by"] is None
    assert os.path.exists(str(ledger_env)) or "://" in str(ledger_env)


def test_the_persons_passphrase_typed_in_the_page_signs_one_approval(
    board: tuple[str, str], ledger_env: Path | str
) -> None:
    """`serve` run by the person can read their sealed key: the passphrase sent with the
    approval opens it in the server's memory for that signature, and check verifies it."""
    import re

    base, token = board
    item = gated()
    page = httpx2.get(f"{base}/", headers={"Authorization": f"Bearer {token}", "Accept": "text/html"})
    csrf = re.search(r'<meta name=csrf content="([^"]+)">', page.text)
    assert csrf is not None
    answer = httpx2.post(
        f"{base}/api/action",
        json={"action": "approve", "id": item, "passphrase": PASSPHRASE},
        headers={"Authorization": f"Bearer {token}", "X-CSRF-Token": csrf.group(1)},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert approvers(item) == ["web:ann"]
    found = check(ledger_env)
    assert found.returncode == 0, found.stdout


def test_an_answer_through_the_agents_client_approves_nothing_on_a_signed_ledger(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """The stdio approval prompt (elicitation): on an unsigned ledger a yes there is the
    client's user's (tests/test_mcp_approval_prompt.py); on a signed one it is never asked."""
    import anyio

    from tests.test_mcp_approval_prompt import Person, client

    sign_ledger(ledger_env, tmp_path)
    item = gated()
    person = Person("accept")

    async def main() -> Any:
        async with client(ledger_env, person) as c:  # type: ignore[arg-type]
            return await c.call_tool("plan_next", {"claim": True})

    result = anyio.run(main)
    assert person.asked == []
    assert approvers(item) == []
    with Ledger() as lg:
        assert lg.get(item)["status"] == "pending"
    assert result is not None


# Every other person-only verb: refused under a person's token alone, signed with the passphrase.
def _setup_trust(lg: Ledger) -> list[str]:
    item = lg.add("Check the build", writer=AGENT)["id"]
    check_id = lg.add_check(item, "cmd:test -d .", writer=AGENT)["id"]
    return ["trust", check_id, "--yes"]


def _setup_token(lg: Ledger) -> list[str]:
    return ["token", "add", "carol"]


def _setup_undo_any(lg: Ledger) -> list[str]:
    lg.add("An agent's item", writer=AGENT)
    return ["undo", "--any"]


def _setup_accept_metric(lg: Ledger) -> list[str]:
    item = lg.add("Beat 3x catid", writer=AGENT)["id"]
    lg.record_metrics(item, {"speedup": 3.2}, writer=AGENT)
    return ["accept-metric", item, "speedup"]


def _setup_gate_remove(lg: Ledger) -> list[str]:
    item = lg.add("Check the build", writer=AGENT)["id"]
    return ["gate", "remove", lg.add_check(item, "cmd:test -d .", writer=AGENT)["id"]]


def _setup_force(lg: Ledger) -> list[str]:
    """A person's gate (signed in, with the key) that the item fails: only a person forces past it."""
    from todoledger.personkeys import read_key, unlock

    data = read_key("ann")
    assert data is not None
    lg.sign_with(unlock(data, PASSPHRASE))
    item = lg.add("Ship it", writer=AGENT)["id"]
    lg.add_check(item, "cmd:test -f shipped.txt", writer="cli:ann")
    lg.sign_with(None)
    return ["done", item, "--force", "--reason", "shipping without it"]


def _setup_sweep_trust(lg: Ledger) -> list[str]:
    lg.add_sweep(
        "draft",
        template="Benchmark {n} draft tokens",
        params=["n=16,5"],
        run="python3 bench.py {n}",
        metrics=["tok_s=$.tok_s"],
        writer=AGENT,
    )
    return ["sweep", "trust", "draft", "--yes"]


VERBS = {
    "sweep trust": _setup_sweep_trust,
    "gate remove": _setup_gate_remove,
    "--force past": _setup_force,
    "trust": _setup_trust,
    "token add": _setup_token,
    "undo --any": _setup_undo_any,
    "accept-metric": _setup_accept_metric,
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_each_person_only_verb_needs_a_signature_on_a_signed_ledger(
    ledger_env: Path | str, tmp_path: Path, config: Path, verb: str
) -> None:
    with Ledger() as lg:
        lg.add_token("ann", token="ann-token-0123456789abcdef", writer="cli:ann")
    sign_ledger(ledger_env, tmp_path)
    with Ledger() as lg:
        args = VERBS[verb](lg)
    refused = tl(ledger_env, *args, TODOLEDGER_TOKEN="ann-token-0123456789abcdef")
    assert refused.returncode == 1 and "nothing was done" in refused.stderr, refused.stderr
    assert check(ledger_env).returncode == 0
    signed = tl(ledger_env, *args, typed=secret_file(tmp_path, PASSPHRASE))
    assert signed.returncode == 0, signed.stderr
    found = check(ledger_env)
    assert found.returncode == 0, found.stdout
    with Ledger() as lg:
        ops = [e for p in ("main", "(tokens)") for e in lg.history(p) if e["field"] == "signed"]
    assert ops and ops[-1]["new"]["statement"]["action"].startswith(verb)


@pytest.mark.sqlite_only
def test_person_init_on_a_ledger_with_agents_history_asks_for_its_name(
    ledger_env: Path, tmp_path: Path, config: Path
) -> None:
    gated()  # an agent wrote here first
    wrong = tl(
        ledger_env,
        "person",
        "init",
        "ann",
        typed=secret_file(tmp_path, PASSPHRASE, "other.db"),
        **as_person(ledger_env),
    )
    assert wrong.returncode == 1 and "the ledger's name was not typed as shown (ledger.db)" in wrong.stderr
    assert not (config / "todoledger" / "keys" / "ann.key").exists()
    assert tl(ledger_env, "person", "list").stdout.startswith("unsigned:")
    right = tl(
        ledger_env,
        "person",
        "init",
        "ann",
        typed=secret_file(tmp_path, PASSPHRASE, ledger_env.name),
        **as_person(ledger_env),
    )
    assert right.returncode == 0, right.stderr
    assert "person keys: ann" in tl(ledger_env, "person", "list").stdout


def test_install_prints_person_init_while_no_key_signs_the_ledger(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    args = ["install", "claude-code", "--project", str(project), "--home", str(home)]
    before = tl(ledger_env, *args)
    assert before.returncode == 0, before.stderr
    assert "Sign it before any agent runs: todoledger person init" in before.stdout
    sign_ledger(ledger_env, tmp_path)
    after = tl(ledger_env, *args)
    assert after.returncode == 0 and "person init" not in after.stdout


def test_a_signer_that_only_names_a_registered_key_signs_nothing(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """The Python API takes any signer object: one that names ann's key id (read from the
    ledger) and makes up signatures is refused, and nothing is approved."""
    from todoledger.personkeys import read_key

    sign_ledger(ledger_env, tmp_path)
    item = gated()
    data = read_key("ann")
    assert data is not None

    class Impostor:
        name, route, public = "ann", "cli", str(data["public"])
        writer = "cli:ann"
        id = __import__("todoledger.personkeys", fromlist=["key_id"]).key_id(public)

        def sign(self, message: bytes) -> str:
            import base64

            return base64.b64encode(b"\0" * 64).decode()

    from todoledger.core.model import LedgerError

    with Ledger() as lg:
        lg.sign_with(Impostor())
        with pytest.raises(LedgerError, match="does not hold the private key"):
            lg.approve(item)
    assert approvers(item) == []


def test_check_reports_a_persons_signature_copied_onto_a_forged_trust(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """Adversarial review: a valid `signed` event of one trust, copied (bytes unchanged)
    into a hand-written op that trusts the agent's own check, made that check
    `verified`, and `check` said ok: any valid signature in an op vouched for every
    person-only event of the op, whatever its statement covered."""
    sign_ledger(ledger_env, tmp_path)
    with Ledger() as lg:
        first = lg.add("Check the build", writer=AGENT)["id"]
        theirs = lg.add_check(first, "cmd:test -d .", writer=AGENT)["id"]
        mine = lg.add("Beat 3x catid", writer=AGENT)["id"]
        own = lg.add_check(mine, "cmd:test -f built.txt", writer=AGENT)["id"]
    trusted = tl(ledger_env, "trust", theirs, "--yes", typed=secret_file(tmp_path, PASSPHRASE))
    assert trusted.returncode == 0, trusted.stderr
    assert check(ledger_env).returncode == 0
    # The forger: copy the person's signature, trust the agent's own check with it.
    signature = sql(ledger_env, ("SELECT new FROM events WHERE field = 'signed' AND plan = 'main'", ()))[-1][
        0
    ]
    at = "2026-12-06T12:00:00.000Z"
    op = sql(
        ledger_env,
        ("UPDATE checks SET trusted_by = 'cli:ann' WHERE id = ?", (own,)),
        (
            "INSERT INTO ops (plan, writer, at, kind, summary, untimed) VALUES ('main', 'cli:ann', ?, 'trust',"
            " 'trusted 1 checks', 0) RETURNING op",
            (at,),
        ),
    )[0][0]
    trust = json.dumps({"id": own, "spec": "cmd:test -f built.txt\n{}"}, separators=(",", ":"))
    for item, field, new in ((mine, "trust", trust), (None, "signed", signature)):
        prev = sql(ledger_env, ("SELECT chain FROM events ORDER BY seq DESC LIMIT 1", ()))[0][0]
        fields = [op, "main", item, field, None, new, "cli:ann", at]
        sql(
            ledger_env,
            (
                "INSERT INTO events (op, plan, item, field, old, new, writer, at, chain)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*fields, _link(prev, fields)),
            ),
        )
    found = check(ledger_env)
    assert found.returncode == 1, found.stdout
    assert f"main/{mine}: event" in found.stdout and "(trust, op" in found.stdout, found.stdout


@pytest.mark.parametrize("route", ["agent's shell", "script"])
def test_an_agent_cannot_register_the_first_person_key(
    ledger_env: Path | str, tmp_path: Path, config: Path, route: str
) -> None:
    """Adversarial review: from its shell (marker set, no terminal), an agent ran
    `person init mallory --passphrase-fd 3` on an unsigned ledger. Its key was trusted on
    first use, and it then approved as `cli:mallory` ("approved by a person"), with
    `check` saying ok. The first key is a person's word: only a person's route registers it."""
    item = gated()
    env = SHELL if route == "agent's shell" else {}
    made = tl(ledger_env, "person", "init", "mallory", typed=secret_file(tmp_path, "agent's"), **env)
    assert made.returncode == 1 and "person init: a person must run it" in made.stderr, made.stderr
    assert len(made.stderr.strip().splitlines()) == 1 and "Traceback" not in made.stderr
    assert not (config / "todoledger" / "keys" / "mallory.key").exists()  # nothing made either
    listed = tl(ledger_env, "person", "list")
    assert "mallory" not in listed.stdout
    refused = tl(ledger_env, "approve", item, typed=secret_file(tmp_path, "agent's"), **env)
    assert refused.returncode == 1 and approvers(item) == []


def test_the_boards_header_says_who_can_sign(ledger_env: Path | str, tmp_path: Path, config: Path) -> None:
    """The board heads every page with the line show, doctor and the report give:
    unsigned, with the one command that signs it; then, once ann's key signs the
    ledger, `person keys: ann (... registered at ...)`."""
    import html

    with Ledger() as lg:  # a person's item: no agent has written here yet (person init asks no name)
        item = str(lg.add("Deploy to production", needs_approval=True, writer="cli:ann")["id"])
    port = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=person_env(ledger_env),
    )
    base = f"http://127.0.0.1:{port}"

    def header(path: str) -> str:
        page = httpx2.get(f"{base}{path}", headers={"Accept": "text/html"})
        assert page.status_code == 200, page.text[:500]
        found = re.search(r'<div id=people role=status class="([^"]*)">([^<]*)</div>', page.text)
        assert found is not None, page.text[:1500]
        return found.group(1) + ": " + html.unescape(found.group(2))

    try:
        for _ in range(400):
            try:
                httpx2.get(base + "/mcp", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.05)
        unsigned = "unsigned: an agent running as you could act as you (sign it: todoledger person init)"
        assert header("/") == f"unsigned: {unsigned}"
        sign_ledger(ledger_env, tmp_path)
        with Ledger() as lg:
            line = lg.people()["line"]
        assert line.startswith("person keys: ann (trusted on first use, registered at "), line
        for path in ("/", "/plan?plan=main", f"/item?id={item}&plan=main", "/approvals?plan=main"):
            assert header(path) == f"signed: {line}", path
    finally:
        proc.terminate()
        proc.wait(10)


def test_every_report_format_says_who_can_sign(ledger_env: Path | str, tmp_path: Path) -> None:
    """Issue 29: the person-keys line is in the report, whatever its format (Markdown, HTML, JSON)."""
    with Ledger() as lg:
        lg.add("Write the notes", writer="cli:tester")  # a person's: no agent history before the key

    def report(*fmt: str) -> str:
        done = tl(ledger_env, "report", "main", *fmt)
        assert done.returncode == 0, done.stderr
        return done.stdout

    unsigned = "unsigned: an agent running as you could act as you"
    assert unsigned in report() and unsigned in report("--format", "html")
    assert report("--json").count(unsigned) == 1
    sign_ledger(ledger_env, tmp_path)
    for text in (report(), report("--format", "html"), report("--json")):
        assert "person keys: ann" in text and unsigned not in text
