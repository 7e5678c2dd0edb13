"""Shared option types and helpers for command modules (kept light: no heavy imports)."""

from __future__ import annotations

from typing import Annotated

import typer

from cmem_cli.cli.input import check_cli_text, parse_json_records, read_json_input
from cmem_cli.cli.invocation import open_memory

JsonOpt = Annotated[bool, typer.Option("--json", help="Output JSON.")]
FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        help="Output format: table, plain, json, ndjson, csv, ids, md. "
        "Default: table on a terminal, plain (tab-separated) when piped.",
        metavar="FORMAT",
    ),
]
# re-exported: command modules import these from here
__all__ = ["check_cli_text", "open_memory", "parse_json_records", "read_json_input"]

ProjectOpt = Annotated[str | None, typer.Option("--project", "-p", help="Project name.", metavar="NAME")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent name.", metavar="NAME")]
SessionOpt = Annotated[
    str | None, typer.Option("--session", help="Session id or a unique prefix of one.", metavar="ID")
]
