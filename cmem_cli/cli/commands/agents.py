"""Agent integration commands: hook, context, import (transcript, claude-code), install (claude-code).

``cmem hook`` normally never reaches typer (``cmem_cli.__main__`` routes it straight to the hook runner for
speed); it is registered here too so that it shows in ``--help``, completions and the manual.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cmem_cli.cli.commands.common import JsonOpt, ProjectOpt, check_cli_text
from cmem_cli.cli.exits import EXIT_IO
from cmem_cli.cli.invocation import current_config, open_api
from cmem_cli.core.errors import InvalidInput

import_app = typer.Typer(help="Import agent transcripts into memory.", no_args_is_help=True)
install_app = typer.Typer(help="Connect cmem to a coding agent.", no_args_is_help=True)

ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude-project", help="Never record this project (name or glob; repeatable).", metavar="NAME"
    ),
]
SettleOpt = Annotated[
    float,
    typer.Option(
        "--settle",
        help="Seconds without change after which a transcript's last turn is closed.",
        metavar="SECONDS",
        min=0,
    ),
]


def hook(
    event: Annotated[
        str,
        typer.Argument(
            help="SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, "
            "Stop, SessionEnd (others are accepted and ignored)."
        ),
    ],
) -> None:
    """Handle one Claude Code hook event (JSON on stdin). Always exits 0; problems go to logs/hooks.log."""
    from cmem_cli.capture.hooks.runner import run

    run([event], config=current_config())


def _run_import(
    paths: list[Path], *, project: str | None, exclude: list[str] | None, settle: float, as_json: bool
) -> None:
    from cmem_cli.capture.hooks.capture import Capture
    from cmem_cli.capture.hooks.rules import rules_from_config
    from cmem_cli.capture.transcripts import import_paths
    from cmem_cli.cli.render import write

    config = current_config()
    rules = rules_from_config(config.section("hooks"))
    with open_api(write=True) as memory:
        capture = Capture(memory, rules, count_repeats=False, exclude_projects=exclude or [], anchor=False)
        reports = import_paths(
            capture, paths, project=check_cli_text("--project", project), settle_seconds=settle
        )
    failed = [r for r in reports if r.error]
    if as_json:
        write(json.dumps([r.as_json() for r in reports], ensure_ascii=False, indent=2) + "\n")
    else:
        sessions = {s for r in reports for s in r.sessions}
        total = {
            k: sum(getattr(r, k) for r in reports)
            for k in ("prompts", "observations", "summaries", "bad_lines")
        }
        write(
            f"imported {len(reports) - len(failed)} transcript(s), {len(sessions)} session(s): "
            f"{total['prompts']} prompts, {total['observations']} observations, {total['summaries']} summaries"
            + (f"; {total['bad_lines']} unreadable lines skipped" if total["bad_lines"] else "")
            + "\n"
        )
    for report in failed:
        typer.echo(f"cmem: {report.path}: {report.error}", err=True)
    if failed:
        raise typer.Exit(EXIT_IO)


@import_app.command("transcript")
def import_transcript(
    paths: Annotated[
        list[Path], typer.Argument(help="Claude Code .jsonl transcript files.", metavar="PATH...")
    ],
    project: ProjectOpt = None,
    exclude: ExcludeOpt = None,
    settle: SettleOpt = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Import transcripts; re-running reads only what was appended since."""
    _run_import(paths, project=project, exclude=exclude, settle=settle, as_json=as_json)


@import_app.command("claude-code")
def import_claude_code(
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="Transcript directory (default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects).",
            metavar="DIR",
        ),
    ] = None,
    project: ProjectOpt = None,
    exclude: ExcludeOpt = None,
    settle: SettleOpt = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Import every Claude Code session transcript, incrementally (safe to run from cron)."""
    from cmem_cli.capture.transcripts import claude_projects_root, discover

    _run_import(
        discover(root or claude_projects_root()),
        project=project,
        exclude=exclude,
        settle=settle,
        as_json=as_json,
    )


@install_app.command("claude-code")
def install_claude_code(
    scope: Annotated[
        str, typer.Option("--scope", help="user (~/.claude) or project (./.claude).", metavar="SCOPE")
    ] = "user",
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove cmem's hooks and instructions.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the changes; write nothing.")] = False,
    instructions: Annotated[
        bool,
        typer.Option(
            "--instructions/--no-instructions",
            help="Also add (or remove) the short cmem section of CLAUDE.md.",
        ),
    ] = True,
    mcp: Annotated[
        bool,
        typer.Option(
            "--mcp",
            help="Also register `cmem mcp` as an MCP server (~/.claude.json, or ./.mcp.json for --scope "
            "project). --uninstall always removes it.",
        ),
    ] = False,
) -> None:
    """Add cmem's hooks to Claude Code's settings.json (keeping everything else), with a backup; --mcp also
    registers the MCP server."""
    from cmem_cli.capture.install_claude import apply, plan
    from cmem_cli.cli.render import write

    if scope not in ("user", "project"):
        raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")
    changes = plan(scope, uninstall=uninstall, instructions=instructions)
    if mcp or uninstall:
        from cmem_cli.capture.install_mcp import plan_mcp

        server = plan_mcp(scope, uninstall=uninstall)
        if mcp or server.changed:
            changes.append(server)
    if dry_run:
        for change in changes:
            write(change.diff() if change.changed else f"unchanged {change.path}\n")
        return
    for message in apply(changes):
        write(message + "\n")


def register(app: typer.Typer) -> None:
    app.command("hook")(hook)
    from cmem_cli.cli.build import register as register_table
    from cmem_cli.cli.options import CONTEXT

    register_table(app, CONTEXT)
    app.add_typer(import_app, name="import")
    app.add_typer(install_app, name="install")
