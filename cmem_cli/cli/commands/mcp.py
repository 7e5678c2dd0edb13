"""`cmem mcp`: serve cmem's memory to MCP clients over stdio (see docs/mcp.md)."""

from __future__ import annotations

import typer

from cmem_cli.cli.invocation import current_config


def mcp() -> None:
    """Run an MCP server on stdin/stdout (tools: search, timeline, get, remember, context). No network port."""
    from cmem_cli.mcp.front import start

    start(current_config())


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
