"""`cmem view`: write the timeline page (``cmem_cli.view``) and open it. Options: ``options.view_command()``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from cmem_cli.cli import build, options
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import write
from cmem_cli.cli.typed_sessions import typed_session
from cmem_cli.core.text import escape_control


def view(
    all_projects: bool = False,
    limit: int = 2000,
    output: str | None = None,
    open_page: bool | None = None,
    as_json: bool = False,
    **filters: Any,
) -> None:
    """Write the page, say where (stdout) and what it leaves out (stderr), and open it when asked to.
    ``filters`` are search's (a Query's fields under their option names, :mod:`cmem_cli.core.query_fields`)."""
    from cmem_cli.api import Query
    from cmem_cli.core.query_fields import query_arguments
    from cmem_cli.view import build as build_page
    from cmem_cli.view import resolve
    from cmem_cli.view.files import default_path, sweep_debris, write_private

    fields = query_arguments(filters)
    notes: list[str] = []
    with open_api() as memory:
        if fields["project"] is None and not all_projects and not fields["session"]:
            from cmem_cli.cli.read_bodies import scope as default_scope

            fields["project"], scope_note = default_scope(memory, None, False)
            notes += [scope_note] if scope_note else []
        fields["session"] = typed_session(memory, fields["session"])
        scope = resolve(Query(**fields), all_projects=all_projects, limit=limit)
        page = build_page(memory, scope)
        config = memory.config
    if page.note:
        notes.append(page.note)
    if output == "-":
        write(page.html)
        _say(notes)
        return
    path = Path(output).absolute() if output else default_path(config, scope.title)
    write_private(path, page.html, make_dirs=output is None)
    _say(notes)  # once the page is written: a refused --output is one line
    if output is None:
        sweep_debris(path.parent)
    if as_json:
        summary = {"path": str(path), **page.summary, "notes": notes}
        write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    else:
        write(escape_control(str(path)) + "\n")
    if open_page if open_page is not None else sys.stdout.isatty():
        _open(path)


def _say(notes: list[str]) -> None:
    for note in notes:
        print(f"cmem: note: {note}", file=sys.stderr)


def _open(path: Path) -> None:
    import webbrowser

    if not webbrowser.open(path.as_uri()):
        print(f"cmem: found no browser to open it; open {escape_control(str(path))}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    build.register(app, options.view_command())
