"""Write commands: add, edit, link, forget, invalidate, restore."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cmem_cli.cli import build, options
from cmem_cli.cli.commands.common import ProjectOpt, check_cli_text
from cmem_cli.cli.invocation import open_api
from cmem_cli.core.errors import InvalidInput


def edit(
    obs_id: Annotated[str, typer.Argument(help="Observation id, uid or unique uid prefix.", metavar="ID")],
    title: Annotated[str | None, typer.Option("--title", "-t", help="New title.")] = None,
    obs_type: Annotated[str | None, typer.Option("--type", help="New type.")] = None,
    subtitle: Annotated[str | None, typer.Option("--subtitle", help="New subtitle ('' clears).")] = None,
    narrative: Annotated[str | None, typer.Option("--narrative", help="New narrative ('' clears).")] = None,
    fact: Annotated[list[str] | None, typer.Option("--fact", help="Replace facts (repeatable).")] = None,
    add_fact: Annotated[
        list[str] | None, typer.Option("--add-fact", help="Append a fact (repeatable).")
    ] = None,
    concept: Annotated[
        list[str] | None, typer.Option("--concept", help="Replace concepts (repeatable).")
    ] = None,
    read: Annotated[
        list[str] | None, typer.Option("--read", help="Replace files read.", metavar="PATH")
    ] = None,
    modified: Annotated[
        list[str] | None, typer.Option("--modified", help="Replace files modified.", metavar="PATH")
    ] = None,
    project: ProjectOpt = None,
    key: Annotated[str | None, typer.Option("--key", help="New key ('' clears).")] = None,
    confidence: Annotated[float | None, typer.Option("--confidence", help="0..1.")] = None,
    link: Annotated[list[str] | None, typer.Option("--link", help="Add a TYPE:ID link (repeatable).")] = None,
) -> None:
    """Change fields of an observation; its markdown file is rewritten."""
    changes: dict[str, Any] = {}
    for name, value in (
        ("title", title),
        ("type", obs_type),
        ("subtitle", subtitle),
        ("narrative", narrative),
        ("project", project),
        ("key", key),
        ("confidence", confidence),
    ):
        if value is not None:
            changes[name] = check_cli_text(f"--{name}", value) if isinstance(value, str) else value
            if value == "":
                changes[name] = None
    for name, value in (
        ("facts", fact),
        ("concepts", concept),
        ("files_read", read),
        ("files_modified", modified),
        ("links", link),
    ):
        if value:
            changes[name] = [check_cli_text(f"--{name}", v) for v in value]
    if not changes and not add_fact:
        raise InvalidInput("nothing to change (see `cmem edit --help`)")
    with open_api(write=True) as memory:
        obs = memory.edit(obs_id, add_facts=add_fact, **changes)
    print(obs.id)


def link_cmd(
    from_id: Annotated[
        str, typer.Argument(help="Observation the link starts at (id, uid or uid prefix).", metavar="FROM")
    ],
    link_type: Annotated[
        str, typer.Argument(help="caused_by, led_to, related, supersedes or reverts.", metavar="TYPE")
    ],
    to_id: Annotated[
        str, typer.Argument(help="Observation the link points to (id, uid or uid prefix).", metavar="TO")
    ],
    remove: Annotated[bool, typer.Option("--remove", help="Remove the link instead.")] = False,
) -> None:
    """Link two observations (FROM TYPE TO), e.g. `cmem link 14 caused_by 9`."""
    with open_api(write=True) as memory:
        memory.link(from_id, link_type, to_id, remove=remove)


def forget(
    obs_ids: Annotated[
        list[str], typer.Argument(help="Observation ids, uids or unique uid prefixes.", metavar="ID...")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete observations and their markdown files."""
    with open_api(write=True) as memory:
        found = [memory.observation(i) for i in obs_ids]
        if not yes:
            if not sys.stdin.isatty():
                raise InvalidInput("refusing to delete without confirmation; pass --yes")
            for obs in found:
                print(f"{obs.id}\t{obs.title}", file=sys.stderr)
            if not typer.confirm(f"Delete {len(found)} observation(s)?", err=True):
                raise typer.Exit(1)
        deleted = memory.forget(*obs_ids)
    print(f"deleted {len(deleted)} observation(s)", file=sys.stderr)


def invalidate(
    obs_id: Annotated[str, typer.Argument(help="Observation id, uid or unique uid prefix.", metavar="ID")],
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why it no longer holds (shown by `cmem get`).")
    ] = None,
) -> None:
    """Say a memory no longer holds: kept, but left out of search, context and the briefing."""
    if reason is not None:
        reason = check_cli_text("--reason", reason)
    with open_api(write=True) as memory:
        obs = memory.invalidate(obs_id, reason=reason)
    print(obs.id)
    print(f"invalidated #{obs.id}: `cmem restore {obs.id}` brings it back", file=sys.stderr)


def restore(
    obs_id: Annotated[str, typer.Argument(help="Observation id, uid or unique uid prefix.", metavar="ID")],
) -> None:
    """Undo `cmem invalidate`: the memory is current again, as it was."""
    with open_api(write=True) as memory:
        was = memory.observation(obs_id).invalidated
        obs = memory.restore(obs_id)
    print(obs.id)
    if was is None:
        print(f"#{obs.id} was not invalidated", file=sys.stderr)


def register(app: typer.Typer) -> None:
    build.register(app, options.ADD)
    app.command("edit")(edit)
    app.command("link")(link_cmd)
    app.command("forget")(forget)
    app.command("invalidate")(invalidate)
    app.command("restore")(restore)
