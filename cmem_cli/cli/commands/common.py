"""Shared option types and helpers for command modules (kept light: no heavy imports)."""

from __future__ import annotations

from cmem_cli.cli import options
from cmem_cli.cli.build import annotation
from cmem_cli.cli.input import check_cli_text, parse_json_records, read_json_input

# declared once, in the option table
JsonOpt = annotation(options.JSON)
FormatOpt = annotation(options.FORMAT)
# re-exported: command modules import these from here
__all__ = ["check_cli_text", "parse_json_records", "read_json_input"]

ProjectOpt = annotation(options.PROJECT)
AgentOpt = annotation(options.AGENT)
SessionOpt = annotation(options.SESSION)
RanOnOpt = annotation(options.MACHINE._replace(help="Only sessions that ran on this machine."))
