"""`todoledger mcp` (stdio); `todoledger serve` (MCP over streamable HTTP
and the board) lives in cmd_board.py.

The MCP SDK is imported inside the commands only: `todoledger --help` lists
these commands by importing this module, and must stay fast.
"""

from __future__ import annotations

import click


@click.command()
@click.option("--plan", "plan", envvar="TODOLEDGER_PLAN", default=None, help="Default plan (default: main).")
def mcp(plan: str | None) -> None:
    """Serve the ledger over MCP on stdio (for an agent's MCP config)."""
    from todoledger.mcp.server import run_stdio

    run_stdio(plan=plan)
