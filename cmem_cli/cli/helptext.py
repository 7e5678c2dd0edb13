"""Help as people read it: whole first sentences as command summaries, no markup escapes, examples.

Typer escapes ``[default: 20]`` for rich even with rich markup off, and click cuts summaries at 45
characters or at the first full stop (``e.g.``): both are undone here, on the click command tree, in one
place that the CLI and the generated man page share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import click

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.(?=\s|$)")

EXAMPLES = """\
  cmem add "Chose WAL mode for concurrent hooks" --type decision -p api
  cmem search "wal mode" -n 5
  cmem search --since 7d --format ids | xargs cmem get
  cmem timeline 42
  cmem get 42 --json | jq -r '.[0].title'
  cmem session list
  cmem completion bash > ~/.local/share/bash-completion/completions/cmem"""


def summary(help_text: str) -> str:
    """The first sentence of a command's help, whole (``e.g.`` does not end it)."""
    paragraph = " ".join(help_text.strip().split("\n\n")[0].split())
    match = _SENTENCE_END.search(paragraph)
    return paragraph[: match.end()] if match else paragraph


class PlainHelpFormatter(click.HelpFormatter):
    def write_dl(self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(term, text.replace("\\[", "[")) for term, text in rows], col_max, col_spacing)


class PlainHelpContext(click.Context):
    formatter_class = PlainHelpFormatter


def polish(command: click.Command) -> click.Command:
    """Give every command of the tree whole-sentence summaries and escape-free option help."""
    command.context_class = PlainHelpContext
    if command.help and not command.short_help:
        command.short_help = summary(command.help)
    if isinstance(command, click.Group):
        for child in command.commands.values():
            polish(child)
    return command
