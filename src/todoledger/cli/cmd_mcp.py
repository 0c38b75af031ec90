"""`todoledger mcp` (stdio) and `todoledger serve` (streamable HTTP).

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


@click.command()
@click.option("--plan", "plan", envvar="TODOLEDGER_PLAN", default=None, help="Default plan (default: main).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="TODOLEDGER_TOKEN",
    default=None,
    help="Bearer token every request must carry; required off loopback (env TODOLEDGER_TOKEN).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="Another name clients use to reach this server (Host/Origin check; repeatable).",
)
@click.option(
    "--allow-checks",
    is_flag=True,
    help="Run trusted checks (gates of done, plan_verify); without it this server runs none.",
)
def serve(
    plan: str | None,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    allow_checks: bool,
) -> None:
    """Serve the ledger over MCP (streamable HTTP at /mcp)."""
    from todoledger.mcp.http import serve as serve_http

    serve_http(
        host=host,
        port=port,
        token=token or None,
        plan=plan,
        allow_hosts=allow_hosts,
        allow_checks=allow_checks,
    )
