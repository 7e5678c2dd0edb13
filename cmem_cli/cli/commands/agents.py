"""Agent integration commands: hook, context, import (transcript, claude-code, codex, gemini, opencode),
install (every agent).

``cmem hook`` normally never reaches typer (``cmem_cli.__main__`` routes it straight to the hook runner for
speed); it is registered here too so that it shows in ``--help``, completions and the manual.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cmem_cli.capture.agents import NAMES, Importer, listed, spec, specs
from cmem_cli.cli.commands.common import JsonOpt, ProjectOpt, check_cli_text
from cmem_cli.cli.exits import EXIT_IO
from cmem_cli.cli.invocation import current_config, open_api
from cmem_cli.core.config import DEFAULT_SETTLE_SECONDS
from cmem_cli.core.errors import InvalidInput

import_app = typer.Typer(help="Import agent transcripts into memory.", no_args_is_help=True)

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
            "Stop, SessionEnd, FileChanged (others are accepted and ignored); with --agent, that agent's event name."
        ),
    ],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help=f"The agent whose hook this is: {listed(tuple(s.name for s in specs() if s.adapter))} "
            "(default: Claude Code).",
            metavar="AGENT",
        ),
    ] = None,
) -> None:
    """Handle one Claude Code hook event, or another agent's with --agent (JSON on stdin). Always exits 0;
    problems go to logs/hooks.log."""
    from cmem_cli.capture.hooks.runner import run

    run([*(["--agent", agent] if agent else []), event], config=current_config())


def _importer(agent: str) -> Importer:
    """The agent's importer, from its registry spec."""
    found = spec(agent).importer
    if found is None:
        raise InvalidInput(f"cmem cannot import {agent} sessions")
    return found


def _run_import(
    agent: str,
    paths: list[Path] | None,
    *,
    root: Path | None = None,
    project: str | None,
    exclude: list[str] | None,
    settle: float,
    as_json: bool,
) -> None:
    """Import ``paths`` (or every file under ``root``, else the agent's own folder) with ``agent``'s reader."""
    import importlib

    from cmem_cli.capture.hooks.capture import Capture
    from cmem_cli.capture.hooks.rules import rules_from_config
    from cmem_cli.cli.render import dumps, write

    reader = _importer(agent)
    module = importlib.import_module(f"cmem_cli.capture.{reader.module}")
    if paths is None:
        paths = module.discover(root or getattr(module, reader.default_root or "")())
    config = current_config()
    rules = rules_from_config(config.section("hooks"))
    with open_api(write=True) as memory:
        capture = Capture(memory, rules, count_repeats=False, exclude_projects=exclude or [], anchor=False)
        importer = getattr(module, reader.cls)(
            capture, project=check_cli_text("--project", project), settle_seconds=settle
        )
        reports = importer.import_paths(paths)
    failed = [r for r in reports if r.error]
    if as_json:
        write(dumps([r.as_json() for r in reports]) + "\n")
    else:
        sessions = {s for r in reports for s in r.sessions}
        total = {
            k: sum(getattr(r, k) for r in reports)
            for k in ("prompts", "observations", "summaries", "bad_lines", "dropped")
        }
        write(
            f"imported {len(reports) - len(failed)} transcript(s), {len(sessions)} session(s): "
            f"{total['prompts']} prompts, {total['observations']} observations, {total['summaries']} summaries"
            + (f"; {total['bad_lines']} unreadable lines skipped" if total["bad_lines"] else "")
            + (f"; {total['dropped']} records not storable dropped" if total["dropped"] else "")
            + "\n"
        )
    from cmem_cli.cli.guard import say

    for report in failed:
        say(f"{report.path}: {report.error}")  # a file name's bytes need not be UTF-8
    if failed:
        raise typer.Exit(EXIT_IO)


def _files_command(name: str, agent: str, paths_help: str, doc: str) -> None:
    """Register `cmem import NAME PATH...`: the files given, read with ``agent``'s reader; the options are
    every import's."""

    def command(
        paths: list[Path],
        project: ProjectOpt = None,
        exclude: ExcludeOpt = None,
        settle: SettleOpt = DEFAULT_SETTLE_SECONDS,
        as_json: JsonOpt = False,
    ) -> None:
        _run_import(agent, paths, project=project, exclude=exclude, settle=settle, as_json=as_json)

    # its own help for PATH: set as an object, since this module's annotations are strings
    command.__annotations__["paths"] = Annotated[
        list[Path], typer.Argument(help=paths_help, metavar="PATH...")
    ]
    command.__doc__ = doc
    import_app.command(name)(command)


_files_command(
    "transcript",
    "claude-code",
    "Claude Code .jsonl transcript files.",
    "Import transcripts; re-running reads only what was appended since.",
)


def _import_command(agent: str) -> None:
    """Register `cmem import AGENT`: the same options for every agent, its own folder and help."""
    source = _importer(agent)

    def command(
        root: Path | None = None,
        project: ProjectOpt = None,
        exclude: ExcludeOpt = None,
        settle: SettleOpt = DEFAULT_SETTLE_SECONDS,
        as_json: JsonOpt = False,
    ) -> None:
        _run_import(agent, None, root=root, project=project, exclude=exclude, settle=settle, as_json=as_json)

    # its own help for --root: set as an object, since this module's annotations are strings
    command.__annotations__["root"] = Annotated[
        Path | None, typer.Option("--root", help=source.root_help, metavar="DIR")
    ]
    command.__doc__ = source.doc
    import_app.command(agent)(command)


for _spec in specs():
    if _spec.importer is None:
        continue
    if _spec.importer.default_root is None:  # the files are given
        _files_command(_spec.name, _spec.name, _spec.importer.root_help, _spec.importer.doc)
    else:
        _import_command(_spec.name)


def install(
    agent: Annotated[
        str | None,
        typer.Argument(help=f"{listed(NAMES)}.", metavar="AGENT", show_default=False),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            help="user (the agent's config in your home) or project (this directory).",
            metavar="SCOPE",
        ),
    ] = "user",
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Take cmem's entries out again (restoring what was there).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the changes; write nothing.")] = False,
    instructions: Annotated[
        bool,
        typer.Option(
            "--instructions/--no-instructions",
            help="Also add (or remove) cmem's short section of the agent's instructions file (CLAUDE.md, "
            "QWEN.md, AGENTS.md...), where the agent has one.",
        ),
    ] = True,
    mcp: Annotated[
        bool | None,
        typer.Option(
            "--mcp/--no-mcp",
            help="Also register `cmem mcp` in the agent's own config (default: yes, except for claude-code, "
            "whose ~/.claude.json holds its account state). --uninstall always removes it.",
            show_default=False,
        ),
    ] = None,
    detect: Annotated[
        bool,
        typer.Option(
            "--detect", help="List the agents found on this machine and what cmem installed for each."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Connect cmem to a coding agent: its hooks (every agent's events go through `cmem hook`) and the MCP
    server, in the agent's own config files, with a backup of each file changed."""
    from cmem_cli.cli.render import write

    if detect:
        if agent is not None:
            raise InvalidInput("--detect lists every agent: give no AGENT with it")
        _detect(as_json)
        return
    from cmem_cli.capture.install_agents import AGENTS, SCOPES, plan

    if agent is None:
        raise InvalidInput(f"name an agent ({', '.join(AGENTS)}) or pass --detect")
    if agent not in AGENTS:
        raise InvalidInput(f"unknown agent {agent!r} (expected one of: {', '.join(AGENTS)})")
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")
    changes = plan(agent, scope, uninstall=uninstall, mcp=mcp, instructions=instructions)
    if dry_run:
        for change in changes:
            write(change.diff() if change.changed else f"unchanged {change.path}\n")
        return
    from cmem_cli.capture.install_files import apply

    for message in apply(changes):
        write(message + "\n")
    note = spec(agent).project_note
    if note and scope == "project" and not uninstall:
        sys.stderr.write(note + "\n")
    if not uninstall:
        _compile_bytecode()


def _compile_bytecode() -> None:
    """The hooks just installed start cmem on every tool call: make sure none of them compiles it from
    source (an editable install where PYTHONDONTWRITEBYTECODE is set would, every time)."""
    from cmem_cli.core.bytecode import compile_packages, stale_modules

    stale = stale_modules()
    if stale and not compile_packages():
        print(f"cmem: compiled {len(stale)} of cmem's modules, so that its hooks start fast", file=sys.stderr)


def _detect(as_json: bool) -> None:
    from cmem_cli.capture.agent_status import agent_status
    from cmem_cli.cli.render import write

    rows = agent_status()
    if as_json:
        write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    from cmem_cli.cli.render import Column, emit_rows, resolve_format

    table = [
        {
            "agent": row["agent"],
            "found": "yes" if row["found"] else "no",
            "scope": row["scope"],
            "hooks": ", ".join(row["hooks"]) or "-",
            "mcp": "yes" if row["mcp"] else "no",
            "problems": "; ".join(row["problems"]) or "-",
        }
        for row in rows
    ]
    columns = [
        Column("agent", "AGENT", priority=0),
        Column("found", "FOUND", priority=0),
        Column("scope", "SCOPE", priority=0),
        Column("hooks", "HOOKS", priority=1, shrink_to=20),
        Column("mcp", "MCP", priority=0),
        Column("problems", "PROBLEMS", priority=1, shrink_to=20),
    ]
    emit_rows(table, columns, resolve_format(None, False))


def register(app: typer.Typer) -> None:
    app.command("hook")(hook)
    from cmem_cli.cli.build import register as register_table
    from cmem_cli.cli.options import CONTEXT

    register_table(app, CONTEXT)
    app.add_typer(import_app, name="import")
    app.command("install")(install)
