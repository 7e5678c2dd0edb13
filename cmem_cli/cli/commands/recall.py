"""`cmem recall`: what the hooks would put in front of an agent for a prompt or a file, and why."""

from __future__ import annotations

import json
import re
from typing import Annotated

import typer

from cmem_cli.cli.commands.common import JsonOpt, ProjectOpt
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import escape_control, write
from cmem_cli.core.errors import UsageError


def recall(
    prompt: Annotated[
        str | None,
        typer.Option("--prompt", help="A prompt, as the agent's user would send it.", metavar="TEXT"),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            help="A file the agent reads or edits (PATH:START-END: the lines it read).",
            metavar="PATH",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Leave out what this session was given already.", metavar="ID"),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Use this agent's [recall] settings.", metavar="NAME")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print exactly what recall would inject for a prompt (--prompt) or a file (--file), then every memory
    it weighed: its score, the bar, and why it was left out. Nothing is marked as given.

    The hooks inject it on each prompt (UserPromptSubmit, Gemini's BeforeAgent) and after a file is read or
    edited; `[recall]` in the config file tunes or turns it off (docs/recall.md)."""
    if (prompt is None) == (file is None):
        raise UsageError("give --prompt TEXT or --file PATH")
    point, subject = ("prompt", prompt) if prompt is not None else ("file", file)
    lines = None
    if file is not None:
        match = re.match(r"^(?P<path>.+):(?P<start>\d+)-(?P<end>\d+)$", file)
        if match:
            subject, lines = match["path"], (int(match["start"]), int(match["end"]))
            if not 1 <= lines[0] <= lines[1]:
                raise UsageError(f"--file {file}: START-END must be line numbers, START not after END")
    with open_api() as memory:
        found = memory.recall(
            point, subject or "", project=project, session=session, agent=agent, lines=lines
        )
    if as_json:
        write(json.dumps(found.as_json(), ensure_ascii=False, indent=2) + "\n")
        return
    write((found.text or "(nothing would be injected)") + "\n")
    bar = f"bar {found.bar:g}" if found.bar is not None else "no bar: notes tied to the file"
    write(
        f"\n# {found.point} recall in project {escape_control(found.project)}: {bar}; ~{found.tokens} tokens\n"
    )
    if found.note:
        write(f"# {escape_control(found.note)}\n")
    for pick in found.picks:
        score = "-" if pick.score is None else f"{pick.score:.3f}"
        write(f"{score:>6}  {pick.why:<20} {pick.line}\n")


def register(app: typer.Typer) -> None:
    app.command("recall")(recall)
