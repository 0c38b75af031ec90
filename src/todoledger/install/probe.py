"""What `doctor` runs: an agent's `--version` (or, when that is certain to be
the same install, its npm manifest), and our MCP server started the way an
agent starts it, asked for its tools over a real MCP exchange.

Plain JSON-RPC over stdio (one JSON message a line, as the MCP stdio
transport frames them) rather than the SDK's client: doctor stays fast, and
it checks what every agent sees on the wire.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
HANDSHAKE = "2025-11-25"  # the newest revision reached by `initialize`, what the agents speak today


@dataclass
class Version:
    text: str | None  # the version string, None if the command did not give one
    error: str | None = None
    seconds: float = 0.0
    source: str = "--version"  # or the package.json it was read from

    def at_least(self, *wanted: int) -> bool | None:
        found = VERSION.search(self.text or "")
        if found is None:
            return None
        have = tuple(int(g or 0) for g in found.groups())
        return have >= tuple(wanted) + (0,) * (3 - len(wanted))


def version(binary: str, package: str | None = None, timeout: float = 30.0) -> Version:
    """The binary's version: from the manifest of `package` when that manifest
    declares this very file as its command (`manifest_version`), else from
    running `binary --version`. Node CLIs take seconds to print it."""
    start = time.perf_counter()
    if package is not None:
        declared = manifest_version(binary, package)
        if declared is not None:
            text, manifest = declared
            return Version(text, None, time.perf_counter() - start, str(manifest))
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Version(None, f"`{binary} --version` failed: {exc}", time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    found = VERSION.search(done.stdout + " " + done.stderr)
    if done.returncode != 0 or found is None:
        line = (done.stderr or done.stdout).strip().splitlines()[:1]
        return Version(
            None, f"`{binary} --version` exited {done.returncode}: {' '.join(line)[:200]}", elapsed
        )
    return Version(found.group(0), None, elapsed)


def manifest_version(binary: str, package: str) -> tuple[str, Path] | None:
    """(version, manifest) of the npm package `package` when the file that
    `binary` resolves to (through npm's links) is a command that package's
    manifest declares: npm wrote that file and that manifest in one install,
    so the manifest's version is the binary's. None whenever that is not
    certain (another package, a nearer manifest, a file the manifest does not
    name, a copy outside any package): then the caller runs `--version`."""
    try:
        target = Path(binary).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    folder = target.parent
    for _ in range(4):  # bin/claude.exe, bundle/gemini.js, dist/bin/x: the owning package is near
        if (folder / "package.json").is_file():
            break
        folder = folder.parent
    else:
        return None
    manifest = folder / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("name") != package or not isinstance(data.get("version"), str):
        return None
    bins = data.get("bin")
    declared = list(bins.values()) if isinstance(bins, dict) else [bins]
    found = VERSION.search(data["version"])
    for command in declared:
        if isinstance(command, str) and found is not None and (folder / command).resolve() == target:
            return found.group(0), manifest
    return None


@dataclass
class ServerCheck:
    command: list[str]
    ok: bool = False
    protocol: str | None = None
    tools: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    # The ledger as the server sees it (its cwd, its environment): reading the
    # recovery text (resource todoledger://prime, a pure read) opens it.
    reads: bool = False
    read_error: str | None = None


def mcp_server(command: list[str], cwd: Path, timeout: float = 15.0) -> ServerCheck:
    """Start `command`, initialize, list the tools, close stdin; the server ends."""
    check = ServerCheck(command)
    start = time.perf_counter()
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "todoledger-doctor", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "todoledger://prime"}},
    ]
    answers, err, code = exchange(command, cwd, messages, timeout)
    check.seconds = time.perf_counter() - start
    if code is None:
        check.error = err
        return check
    init, listed = answers.get(1), answers.get(2)
    if init is None or listed is None:
        tail = (err or "").strip().splitlines()[-1:] or [f"exit status {code}"]
        check.error = f"`{' '.join(command)}` gave no MCP answer: {tail[0][:300]}"
        return check
    if "error" in init or "error" in listed:
        check.error = f"the server refused: {(init.get('error') or listed.get('error'))}"
        return check
    check.protocol = init.get("result", {}).get("protocolVersion")
    tools = listed.get("result", {}).get("tools", [])
    check.tools = [str(t["name"]) for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    check.ok = bool(check.tools)
    if not check.ok:
        check.error = "the server lists no tools"
    read = answers.get(3) or {}
    check.reads = "result" in read
    if not check.reads:
        error = read.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        check.read_error = str(message or "no answer to resources/read todoledger://prime")[:300]
    return check


def exchange(
    command: list[str],
    cwd: Path,
    messages: list[dict[str, Any]],
    timeout: float,
    env: dict[str, str] | None = None,
) -> tuple[dict[int, dict[str, Any]], str, int | None]:
    """Send JSON-RPC `messages` one a line, each request after the answer to
    the one before; close stdin at the end. (answers by id, stderr, exit
    status); the status is None and stderr says why if it did not start."""
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=dict(os.environ) if env is None else env,
        )
    except OSError as exc:
        return {}, f"cannot start `{' '.join(command)}`: {exc.strerror or exc}", None
    lines: queue.Queue[str | None] = queue.Queue()
    errors: queue.Queue[str | None] = queue.Queue()  # drained too: a chatty process must not block on it
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    threading.Thread(target=_pump, args=(proc.stderr, errors), daemon=True).start()
    deadline = time.perf_counter() + timeout
    out: list[str] = []
    assert proc.stdin is not None
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message and not _wait_for(message["id"], lines, out, deadline):
                break
        proc.stdin.close()  # a stdio server ends at the end of its input
        proc.wait(timeout=max(0.1, deadline - time.perf_counter()))
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    err = _drain(errors)
    answers = _answers("\n".join(out))
    if time.perf_counter() > deadline and len(answers) < sum("id" in m for m in messages):
        err = f"`{' '.join(command)}` did not answer within {timeout:g} s. {err}"
    return answers, err, proc.returncode


def codex_hooks(
    binary: str, project: Path, env: dict[str, str], codex_home: Path, timeout: float = 30.0
) -> list[dict[str, Any]] | None:
    """The project's hooks as Codex sees them, with each one's trust status
    (`codex app-server`, `hooks/list`); None if Codex did not say.

    `codex app-server` creates state in its home as it starts (`*.sqlite`,
    `installation_id`, `skills/`): it runs with a scratch CODEX_HOME holding a copy
    of `codex_home/config.toml` (the project's trust and the hooks' approvals), so
    none of that lands in the user's ~/.codex."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="todoledger-codex-") as scratch:
        config = codex_home / "config.toml"
        if config.is_file():
            shutil.copyfile(config, Path(scratch) / "config.toml")
        return _codex_hooks({**env, "CODEX_HOME": scratch}, binary, project, timeout)


def _codex_hooks(
    env: dict[str, str], binary: str, project: Path, timeout: float
) -> list[dict[str, Any]] | None:
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "todoledger", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(project)]}},
    ]
    answers, _, _ = exchange([binary, "app-server"], project, messages, timeout, env)
    try:
        hooks = answers[2]["result"]["data"][0]["hooks"]
    except (KeyError, IndexError, TypeError):
        return None
    return [h for h in hooks if isinstance(h, dict)] if isinstance(hooks, list) else None


def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _drain(lines: queue.Queue[str | None]) -> str:
    """What the stream said until it ended (or a second of silence)."""
    said: list[str] = []
    while True:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            return "".join(said)
        if line is None:
            return "".join(said)
        said.append(line)


def _wait_for(ident: int, lines: queue.Queue[str | None], out: list[str], deadline: float) -> bool:
    """Read answers until the one with `ident`; False at end of output or past the deadline."""
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.perf_counter()))
        except queue.Empty:
            return False
        if line is None:
            return False
        out.append(line)
        if ident in _answers(line):
            return True
        if time.perf_counter() > deadline:
            return False


def _answers(out: str) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for line in out.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(message, dict) and isinstance(message.get("id"), int):
            found[message["id"]] = message
    return found
