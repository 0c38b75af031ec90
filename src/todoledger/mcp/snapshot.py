"""The answers `todoledger mcp` gives before it loads the SDK (`mcp/lean.py`):
`initialize` (each handshake version), `server/discover`, and the tool, prompt
and resource lists of both protocol eras, as the SDK path gives them, kept in
`snapshot.json` beside this module (package data).

They are generated from the SDK path itself, never written by hand:

    .venv/bin/python -m todoledger.mcp.snapshot --write

runs `todoledger mcp` on the SDK path (TODOLEDGER_MCP_PATH=sdk), asks it each
question and stores its answers; tests/test_mcp_lean.py fails when the stored
answers drift from what the SDK path says now.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snapshot.json")
LEGACY, MODERN = "legacy", "modern"
MODERN_VERSION = "2026-07-28"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LISTS = ("tools/list", "prompts/list", "resources/list")
CLIENT = {"name": "todoledger-snapshot", "version": "1"}


def modern_meta(client: dict[str, Any] | None = None) -> dict[str, Any]:
    """The 2026 envelope a sessionless request carries in `params._meta`."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": client or CLIENT,
    }


# A tool call whose answer shows what the SDK adds to every tool result of an era (`call`).
CALL: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "tools/call",
    "params": {"name": "todoread", "arguments": {}},
}
_RESULT_KEYS = ("content", "isError", "structuredContent")


def _extras(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in _RESULT_KEYS}


def load() -> dict[str, Any]:
    with open(PATH, encoding="utf-8") as f:
        found: dict[str, Any] = json.load(f)
    return found


def generate() -> dict[str, Any]:
    """Ask the SDK path every question the lean path answers from the snapshot."""
    import subprocess
    import tempfile

    out: dict[str, Any] = {LEGACY: {"initialize": {}}, MODERN: {}}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TODOLEDGER_")}
        env |= {"TODOLEDGER_DB": os.path.join(tmp, "ledger.db"), "TODOLEDGER_MCP_PATH": "sdk"}
        command = [sys.executable, "-c", "from todoledger.cli.entry import main; main()", "mcp"]

        def ask(messages: list[dict[str, Any]]) -> dict[Any, Any]:
            text = "".join(json.dumps(m) + "\n" for m in messages)
            done = subprocess.run(command, input=text.encode(), capture_output=True, env=env, timeout=120)
            answers = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
            return {a["id"]: a["result"] for a in answers if "result" in a}

        for version in HANDSHAKE_VERSIONS:
            init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
            messages: list[dict[str, Any]] = [
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
            ]
            messages.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
            messages += [{"jsonrpc": "2.0", "id": n, "method": m} for n, m in enumerate(LISTS, 1)]
            messages.append(CALL | {"id": 9})
            found = ask(messages)
            out[LEGACY]["call"] = _extras(found[9])
            out[LEGACY]["initialize"][version] = found[0]
            for n, method in enumerate(LISTS, 1):
                out[LEGACY][method] = found[n]
        methods = ("server/discover", *LISTS)
        found = ask(
            [
                {"jsonrpc": "2.0", "id": n, "method": m, "params": {"_meta": modern_meta()}}
                for n, m in enumerate(methods)
            ]
        )
        for n, method in enumerate(methods):
            out[MODERN][method] = found[n]
        call = CALL | {"id": 9, "params": CALL["params"] | {"_meta": modern_meta()}}
        out[MODERN]["call"] = _extras(ask([call])[9])
    return out


def main() -> int:
    made = generate()
    if sys.argv[1:] == ["--write"]:
        with open(PATH, "w", encoding="utf-8") as f:
            json.dump(made, f, ensure_ascii=False, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    return 0 if made == load() else 1


if __name__ == "__main__":
    sys.exit(main())
