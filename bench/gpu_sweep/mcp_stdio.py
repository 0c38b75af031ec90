"""A raw MCP client over pipes: one `todoledger mcp` process spoken to in the
2026-07-28 envelope (every request's `_meta` names the protocol version, the
client and its capabilities), declaring the tasks extension
(`io.modelcontextprotocol/tasks`, SEP-2663), as tests/test_mcp_tasks.py's `Stdio`
does, with a time limit on every answer (a runner must not hang on a dead server)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from typing import Any

VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"


class ServerGone(Exception):
    """The server closed its stdout, or did not answer in time."""


class StdioServer:
    def __init__(
        self, argv: list[str], *, cwd: str, env: dict[str, str], name: str, stderr: str, label: str = ""
    ) -> None:
        self.name, self.label = name, label
        with open(stderr, "ab") as err:  # the server's own complaints, kept for the runner's log
            self.proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err
            )
        self.pid = self.proc.pid
        self.n = 0
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def envelope(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"},
        }

    def rpc(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120) -> dict[str, Any]:
        """The JSON-RPC answer to one request (its `result` or `error` in the message)."""
        assert self.proc.stdin is not None
        self.n += 1
        body = {**(params or {}), "_meta": self.envelope()}
        line = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": body})
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise ServerGone(f"could not write to the server: {exc}") from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                out = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise ServerGone(f"no answer to {method} in {timeout:.0f} s") from None
            if not out:
                raise ServerGone("the server closed its stdout")
            message: dict[str, Any] = json.loads(out)
            if message.get("id") == self.n:
                return message

    def kill(self) -> int:
        """SIGKILL, as a crashed client's server dies; its exit status."""
        os.kill(self.pid, signal.SIGKILL)
        return self.proc.wait(timeout=30)

    def close(self) -> int:
        """End of stdin, as a client that quits: the server's exit status."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        return self.proc.wait(timeout=60)
