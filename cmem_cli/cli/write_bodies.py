"""The body of `cmem add`, free of typer and click.

``cmem_cli.cli.commands.write`` declares the command's options for typer and calls :func:`add`;
``cmem_cli.cli.fast`` calls it directly for a simple command line, so a script or agent that records an
observation does not spend 30-40 ms importing typer. The parameter names are the typer command's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from cmem_cli.cli.input import check_cli_text, parse_json_records, read_json_input
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.typed_sessions import refuse_ended_session, typed_session
from cmem_cli.core.config import default_agent, default_session
from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.text import escape_control

TOLD = 10  # an import of more records reports its candidates in --format json only, not on stderr

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cmem_cli.api import Memory
    from cmem_cli.core.json_types import CandidateJson


def add(
    title_text: str | None = None,
    title: str | None = None,
    obs_type: str = "change",
    subtitle: str | None = None,
    narrative: str | None = None,
    fact: list[str] | None = None,
    concept: list[str] | None = None,
    read: list[str] | None = None,
    modified: list[str] | None = None,
    lines: str | None = None,
    tool: list[str] | None = None,
    project: str | None = None,
    session: str | None = None,
    agent: str | None = None,
    key: str | None = None,
    confidence: float | None = None,
    link: list[str] | None = None,
    supersedes: list[str] | None = None,
    json_source: str | None = None,
    output: str = "ids",
) -> None:
    """`cmem add`: record one observation, or bulk-import JSON records; prints the new id(s)."""
    defaults = {
        "project": check_cli_text("--project", project),  # else the repository's: asked of the store
        "agent": check_cli_text("--agent", agent) or default_agent(),
        "session": check_cli_text("--session", session) or default_session(),
    }
    if title_text is not None:
        if title is not None:
            raise InvalidInput("give the title once: as TITLE or as --title")
        title = title_text
    if json_source is not None:
        if title is not None:
            raise InvalidInput("use either --json or --title, not both")
        if lines is not None:
            raise InvalidInput("--lines goes with --read or --modified; in JSON, cite PATH:START-END")
        if supersedes:
            raise InvalidInput(
                "--supersedes names what one observation replaces: with --json, give each "
                "record a 'supersedes' field"
            )
        _add_json(json_source, defaults, output)
        return
    if title is None:
        raise InvalidInput("missing title (use --title, or --json FILE)")
    if lines is not None:
        read, modified = _cite_lines(lines, read or [], modified or [])
    record = {
        "type": obs_type, "title": title, "subtitle": subtitle, "narrative": narrative,
        "facts": fact or [], "concepts": concept or [], "files_read": read or [],
        "files_modified": modified or [], "tools_used": tool or [], "key": key, "confidence": confidence,
        "links": link or [], "supersedes": supersedes or None,
    }  # fmt: skip
    for name, value in record.items():
        if isinstance(value, str):
            check_cli_text(f"--{name}", value)
        elif isinstance(value, list):
            for item in value:
                check_cli_text(f"--{name}", item)
    with open_api(write=True) as memory:
        defaults["session"] = _open_session(memory, defaults["session"])
        defaults["project"] = defaults["project"] or memory.project_here(claim=True)
        # the recorder's write returns the id alone: building the typed Observation would cost `cmem add`
        # about a tenth of its time (the result types and the reader's modules)
        obs_id, found = memory.recorder.add_reporting(record, defaults=defaults, cwd=_working_directory())
    _tell_candidates(obs_id, found)
    if output == "json":
        print(json.dumps({"id": obs_id, "candidates": found}, ensure_ascii=False))
    else:
        print(obs_id)


def _tell_candidates(obs_id: int, found: Sequence[CandidateJson]) -> None:
    """Say on stderr which memories the new one may replace, and the command that confirms each."""
    for candidate in found:
        title = escape_control(" ".join(str(candidate["title"]).split()))
        title = title if len(title) <= 80 else title[:79] + "\u2026"
        marked = " (marked maybe replaced)" if candidate["inferred"] else ""
        sys.stderr.write(
            f'cmem: #{obs_id} may replace #{candidate["id"]} "{title}"{marked}; '
            f"if it does: {candidate['confirm']}\n"
        )


def _cite_lines(lines: str, read: list[str], modified: list[str]) -> tuple[list[str], list[str]]:
    """``--lines START-END`` names lines of the one file cited: it becomes ``PATH:START-END``."""
    if len(read) + len(modified) != 1:
        raise InvalidInput("--lines needs exactly one --read or --modified file (or cite PATH:START-END)")
    first, sep, last = lines.strip().partition("-")
    if not (first.isdigit() and (not sep or last.isdigit())):
        raise InvalidInput(f"--lines must look like START-END (line numbers), got {lines!r}")
    span = f"{int(first)}-{int(last) if sep else int(first)}"
    if read:
        return [f"{read[0]}:{span}"], modified
    return read, [f"{modified[0]}:{span}"]


def _working_directory() -> str:
    """Where relative file paths are resolved and anchored: the current directory, or the root when it was
    deleted (nothing relative can be resolved then)."""
    try:
        return os.getcwd()
    except OSError:
        return os.sep


def _open_session(memory: Memory, session: str | None) -> str | None:
    """The full id of the session a person named, refused when it has ended."""
    full = typed_session(memory, session)
    refuse_ended_session(memory, full)
    return full


def _add_json(source: str, defaults: dict[str, str | None], output: str = "ids") -> None:
    label = "stdin" if source == "-" else source
    records = parse_json_records(read_json_input(source), label)
    from cmem_cli.api import InvalidRecord
    from cmem_cli.cli.progress import ProgressBar

    with open_api(write=True) as memory, ProgressBar() as progress:
        defaults["session"] = _open_session(memory, defaults["session"])
        defaults["project"] = defaults["project"] or memory.project_here(claim=True)
        try:
            rows = memory.recorder.add_many_reporting(
                [record for _, record in records],
                defaults=defaults,
                progress=progress,
                every=output == "json",
            )
        except InvalidRecord as exc:
            line = records[exc.index][0]
            where = f"line {line}" if len(records) > 1 or line > 1 else "record"
            raise InvalidInput(f"{label}: {where}: {exc.reason}; nothing was imported") from None
    if len(rows) <= TOLD:
        for obs_id, found in rows:
            _tell_candidates(obs_id, found)
    if output == "json":
        sys.stdout.write(
            "".join(json.dumps({"id": i, "candidates": f}, ensure_ascii=False) + "\n" for i, f in rows)
        )
    else:
        sys.stdout.write("".join(f"{obs_id}\n" for obs_id, _ in rows))
