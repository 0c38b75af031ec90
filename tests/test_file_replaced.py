"""A ledger file deleted (`git clean -fdX`) or replaced (another file renamed
over it) under a long-lived process: `todoledger serve`, `todoledger mcp` and
`todoledger watch` refuse with one line instead of going on in the unlinked
file, so that no write is acknowledged that the CLI cannot see (issue 21,
defect 10). Real processes on real SQLite files."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.test_mcp import TOKEN, call, http, refuse, server, stdio  # noqa: F401  (server: a fixture)

pytestmark = pytest.mark.sqlite_only

GONE = "the ledger file was removed or replaced: restart"


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args],
        env=subprocess_env(db),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def cli_contents(db: Path) -> set[str]:
    """Every item's text in the ledger the CLI opens at `db` now, on every plan."""
    plans = json.loads(cli(db, "plans", "--json").stdout or "[]")
    found: set[str] = set()
    for p in plans:
        out = cli(db, "show", "--json", "--plan", p["plan"])
        assert out.returncode == 0, out.stderr
        found |= {i["content"] for i in json.loads(out.stdout)["items"]}
    return found


def todos(*contents: str) -> dict[str, Any]:
    return {"todos": [{"content": c, "status": "pending", "activeForm": c} for c in contents]}


def git_clean(db: Path) -> None:
    """What `git clean -fdX` does to an ignored ledger: the file and its WAL files go."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def other_ledger(tmp: Path) -> Path:
    """Another ledger, written and closed by the CLI: the file renamed over ours."""
    other = tmp / "other.db"
    done = cli(other, "add", "From the other ledger")
    assert done.returncode == 0, done.stderr
    return other


def test_serve_refuses_writes_and_reads_after_the_file_is_deleted(server: str, ledger_env: Path) -> None:  # noqa: F811
    acknowledged: list[str] = []

    async def main() -> None:
        async with http(server) as c:
            await call(c, "todowrite", todos("Before the clean"))
            git_clean(ledger_env)
            # Another process makes a new ledger at the path: the server must not take it for its own.
            assert cli(ledger_env, "add", "Written by the CLI after the clean").returncode == 0
            for attempt in ("After the clean", "Again after the clean"):
                result = await c.call_tool("todowrite", todos(attempt))
                if not result.is_error:
                    acknowledged.append(attempt)
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and GONE in text and "\n" not in text, text
            said = await refuse(c, "todoread", {})
            assert GONE in said

    anyio.run(main)
    seen = cli_contents(ledger_env)
    assert seen == {"Written by the CLI after the clean"}, seen
    assert not [a for a in acknowledged if a not in seen]


def test_stdio_mcp_refuses_after_another_ledger_is_renamed_over_its_file(
    ledger_env: Path, tmp_path: Path
) -> None:
    other = other_ledger(tmp_path)

    async def main() -> None:
        async with stdio(ledger_env) as c:
            await call(c, "todowrite", todos("Before the swap"))
            os.replace(other, ledger_env)
            said = await refuse(c, "todowrite", todos("After the swap"))
            assert GONE in said
            said = await refuse(c, "todoread", {})
            assert GONE in said
            # It stays refused: the server never goes back to the unlinked file.
            said = await refuse(c, "plan_next", {})
            assert GONE in said

    anyio.run(main)
    seen = cli_contents(ledger_env)
    assert "After the swap" not in seen, seen


def test_serve_refuses_after_another_ledger_is_renamed_over_its_file(
    server: str,  # noqa: F811
    ledger_env: Path,
    tmp_path: Path,
) -> None:
    other = other_ledger(tmp_path)

    async def main() -> None:
        async with http(server) as c:
            await call(c, "todowrite", todos("Before the swap"))
            os.replace(other, ledger_env)
            said = await refuse(c, "todowrite", todos("After the swap"))
            assert GONE in said

    anyio.run(main)
    assert "After the swap" not in cli_contents(ledger_env)


def test_watch_stops_with_one_line_when_its_file_is_replaced(ledger_env: Path, tmp_path: Path) -> None:
    assert cli(ledger_env, "add", "First").returncode == 0
    other = other_ledger(tmp_path)
    watch = subprocess.Popen(
        [todoledger_bin(), "watch", "--since", "0", "--json"],
        env=subprocess_env(ledger_env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout is not None
        first = json.loads(watch.stdout.readline())  # it runs, on our file
        assert first["plan"] == "main", first
        os.replace(other, ledger_env)
        # Old code: watch polled the unlinked file and printed nothing, forever.
        rc = watch.wait(timeout=30)
        err = watch.stderr.read() if watch.stderr else ""
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and GONE in lines[0], err
    assert "reconnect" not in err and "Traceback" not in err


def test_the_boards_api_refuses_an_add_after_the_file_is_deleted(server: str, ledger_env: Path) -> None:  # noqa: F811
    base = server.removesuffix("/mcp")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    page = httpx2.get(base + "/", headers=auth, timeout=10)
    csrf = re.search(r'csrf content="([^"]+)"', page.text)
    assert csrf is not None, page.text[:300]
    headers = auth | {"x-csrf-token": csrf.group(1), "Origin": base}

    def add(content: str) -> httpx2.Response:
        return httpx2.post(base + "/api/action", json={"action": "add", "content": content}, headers=headers)

    assert add("Before the clean").status_code == 200
    git_clean(ledger_env)
    refused = add("After the clean")
    assert refused.status_code == 400 and GONE in refused.json()["error"], refused.text
    assert not ledger_env.exists() or "After the clean" not in cli_contents(ledger_env)
