"""Output rendering: one place that decides between a terminal table, stable plain text and JSON.

Rules: data on stdout; a rich table only when stdout is a terminal (and colour only without NO_COLOR);
tab-separated plain text with no header and no colour when piped; every stored string has its control
characters escaped before it reaches a terminal or a TSV line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cmem_cli.errors import UsageError

FORMATS = ("table", "plain", "json", "ndjson", "csv", "ids", "md")
TYPE_ICONS = {
    "decision": "🧭",
    "bugfix": "🐛",
    "feature": "✨",
    "refactor": "🔧",
    "discovery": "🔎",
    "change": "📝",
    "error": "❗",
    "insight": "💡",
    "question": "❓",
    "summary": "📋",
    "prompt": "💬",
    "document": "📄",
}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile(r"[\r\n\t]")


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """Make stored text safe to print: control characters become visible escapes (``\\x1b``)."""
    if not keep_newlines:
        text = _LINE_BREAKS.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[m.group()], text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def resolve_format(fmt: str | None, as_json: bool, *, default_tty: str = "table") -> str:
    if as_json:
        return "json"
    if fmt:
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
        return fmt
    return default_tty if sys.stdout.isatty() else "plain"


def use_color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def write(text: str) -> None:
    sys.stdout.write(text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


class Column:
    """A column of a row listing: its JSON key, header and how to show a value as one line of text."""

    def __init__(
        self,
        key: str,
        header: str,
        show: Callable[[dict[str, Any]], str] | None = None,
        *,
        justify: str = "left",
        max_width: int | None = None,
    ):
        self.key = key
        self.header = header
        self.show = show or (lambda row: "" if row.get(key) is None else str(row.get(key)))
        self.justify = justify
        self.max_width = max_width

    def text(self, row: dict[str, Any]) -> str:
        return escape_control(self.show(row))


def emit_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    fmt: str,
    *,
    id_key: str = "id",
    title: str | None = None,
    empty_message: str | None = None,
) -> None:
    """Print a listing in ``fmt``. ``rows`` are JSON-ready dicts; ``columns`` drive the text formats."""
    if fmt == "json":
        write(dumps(list(rows)) + "\n")
    elif fmt == "ndjson":
        write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif fmt == "ids":
        write("".join(f"{r[id_key]}\n" for r in rows))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([c.key for c in columns])
        for row in rows:
            writer.writerow([c.text(row) for c in columns])
        write(buffer.getvalue())
    elif fmt == "plain":
        write("".join("\t".join(c.text(r) for c in columns) + "\n" for r in rows))
    elif fmt == "md":
        lines = [
            "| " + " | ".join(c.header for c in columns) + " |",
            "|" + "|".join("---" for _ in columns) + "|",
        ]
        lines += ["| " + " | ".join(c.text(r).replace("|", "\\|") for c in columns) + " |" for r in rows]
        write("\n".join(lines) + "\n")
    else:
        _rich_table(rows, columns, title=title, empty_message=empty_message)


def _rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], *, title: str | None, empty_message: str | None
) -> None:
    if not rows:
        if empty_message:
            print(empty_message, file=sys.stderr)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=not use_color(), highlight=False, soft_wrap=False)
    table = Table(title=title, box=None, header_style="bold" if use_color() else "", pad_edge=False)
    for column in columns:
        table.add_column(
            column.header,
            justify=column.justify,
            max_width=column.max_width,
            overflow="ellipsis",
            no_wrap=True,
        )
    for row in rows:
        table.add_row(*[_markup_safe(column.text(row)) for column in columns])
    console.print(table)


def _markup_safe(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def emit_text(text: str) -> None:
    """Print a document (markdown details) with control characters escaped but newlines kept."""
    write(escape_control(text, keep_newlines=True).rstrip("\n") + "\n")
