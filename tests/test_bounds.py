"""Bounds (issue 29 part 3, last bullet): a stdio line over 8 MiB, the login
limiter, low-entropy tokens, the goal-lock's match, a transcript from the future."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import subprocess_env, todoledger_bin

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def test_a_stdio_line_over_8_mib_is_answered_with_an_error_before_it_is_parsed(
    ledger_env: Path | str,
) -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"x": "a" * (9 << 20)}})
    ping = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    wire = "\n".join([json.dumps(INIT), big, ping]) + "\n"
    proc = subprocess.run(
        [todoledger_bin(), "mcp"],
        input=wire.encode(),
        capture_output=True,
        env=subprocess_env(ledger_env),
        timeout=120,
    )
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    by_id = {a.get("id"): a for a in answers}
    refused = by_id[None]
    assert refused["error"]["code"] == -32600 and "over 8 MiB" in refused["error"]["message"]
    assert 7 not in by_id  # never parsed: its id was never read
    assert by_id[8].get("result") == {}  # the next line is served as usual


def test_the_goal_lock_matches_a_task_by_id_or_its_normalised_subject(
    ledger_env: Path, tmp_path: Path
) -> None:
    """Before: only the exact subject matched, so a completion whose subject was
    reworded in case, spacing or punctuation ("write the  report.") went through."""
    from .test_goal_lock import gate_on, hook, task_completed, task_create

    env = subprocess_env(ledger_env)
    assert hook(env, task_create("s1", "1", "Write the report"))[0] == 0
    item = gate_on("Write the report", tmp_path / "report.txt")
    for subject in ("write the  report.", "WRITE THE REPORT", " Write the report! "):
        code, _, err = hook(env, task_completed("s1", f"t-{subject}", subject))
        assert code == 2 and item in err, (subject, err)
    code, _, err = hook(env, task_completed("s1", item, "something else entirely"))
    assert code == 2 and item in err, err


def test_the_login_limiter_counts_loopback_as_one_client_and_ipv6_by_64() -> None:
    from todoledger.mcp.limits import LoginLimiter, client_key

    assert {client_key(a) for a in ("127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1")} == {"loopback"}
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("192.0.2.7") == "192.0.2.7"
    now = [0.0]
    limiter = LoginLimiter(limit=3, clock=lambda: now[0])
    for address in ("127.0.0.1", "127.0.0.2", "::1"):  # three addresses, one machine
        limiter.failed(client_key(address))
    assert limiter.retry_after(client_key("127.0.0.9")) is not None


def test_serve_refuses_a_low_entropy_token() -> None:
    from todoledger.tokens import weak_token

    for token in (
        "abcdefghijklmnopqrstuvwxyz012345",
        "qwertyuiopasdfghjklzxcvbnm123456",
        "0123456789abcdef0123456789abcdef",
        "passwordpasswordpasswordpassword1",
    ):
        assert weak_token(token) is not None, token
    import secrets

    assert not [t for t in (secrets.token_urlsafe(32) for _ in range(500)) if weak_token(t)]


def test_a_transcript_dated_in_the_future_is_imported_with_a_warning(
    ledger_env: Path, tmp_path: Path
) -> None:
    from .test_ingest_formats import claude_line, todos

    path = tmp_path / "future.jsonl"
    line = json.loads(claude_line(1, "TodoWrite", todos(("Ship it", "completed"))))
    line["timestamp"] = "2999-01-01T00:00:00.000Z"
    path.write_text(json.dumps(line) + "\n")
    ran = subprocess.run(
        [todoledger_bin(), "ingest", str(path)],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
    )
    assert ran.returncode == 0, ran.stderr
    assert "1 call(s) dated in the future (latest 2999-01-01T00:00:00.000Z)" in ran.stderr, ran.stderr
    assert "1 calls" in ran.stdout  # imported all the same, as the transcript dates it
