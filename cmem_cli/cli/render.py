"""Output rendering: one place that decides between a terminal table, stable plain text and JSON.

Rules: data on stdout; a rich table only when stdout is a terminal (and colour only without NO_COLOR);
tab-separated plain text with no header and no colour when piped; every stored string has its control
characters escaped before it reaches a terminal or a TSV line.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from cmem_cli.core.errors import UsageError
from cmem_cli.core.text import TYPE_ICONS, escape_control  # noqa: F401 (re-exported for the commands)

FORMATS = ("table", "plain", "json", "ndjson", "csv", "ids", "md")


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
    """JSON as UTF-8 text; a lone surrogate (a file name's bytes that are not UTF-8) stays a ``\\udcXX``
    escape, which stdout can print and a JSON reader reads back."""
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8", "backslashreplace").decode("utf-8")


class Column:
    """A column of a row listing: its JSON key, header and how to show a value as one line of text."""

    def __init__(
        self,
        key: str,
        header: str,
        show: Callable[[Mapping[str, Any]], str] | None = None,
        *,
        justify: Literal["left", "right"] = "left",
        max_width: int | None = None,
        priority: int = 5,
        shrink_to: int | None = None,
    ):
        """``priority`` 0 columns are never dropped on a narrow terminal; higher numbers go first.
        ``shrink_to`` marks a column that may be cut (with an ellipsis) down to that many cells."""
        self.key = key
        self.header = header
        self.show = show or (lambda row: "" if row.get(key) is None else str(row.get(key)))
        self.justify = justify
        self.max_width = max_width
        self.priority = priority
        self.shrink_to = shrink_to

    def text(self, row: Mapping[str, Any]) -> str:
        return escape_control(self.show(row))


# Whose each row is, in the tables of a home that holds more than one machine's memories (search, timeline,
# session list; JSON rows always say it): cut before it is dropped, so a narrow terminal still tells them apart.
MACHINE_COLUMN = Column("machine", "MACHINE", max_width=20, priority=3, shrink_to=12)


def with_machine(columns: Sequence[Column]) -> list[Column]:
    """``columns`` with the machine's before the last (the token count's)."""
    return [*columns[:-1], MACHINE_COLUMN, columns[-1]]


def emit_rows(
    rows: Sequence[Mapping[str, Any]],
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
        import csv  # only this format writes it

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([c.key for c in columns])
        for row in rows:  # machine values (the integer, the full timestamp), not what a person reads
            writer.writerow([machine_value(row.get(c.key)) for c in columns])
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


def machine_value(value: Any) -> str:
    """A CSV cell: numbers and ISO timestamps as stored, nested values as JSON, text control-escaped."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return escape_control(str(value))


def _rich_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    title: str | None,
    empty_message: str | None,
) -> None:
    if not rows:
        if empty_message:
            print(empty_message, file=sys.stderr)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=not use_color(), highlight=False, soft_wrap=False)
    cells = [[column.text(row) for column in columns] for row in rows]
    keep, widths = fit_columns(columns, cells, console.width)
    table = Table(title=title, box=None, header_style="bold" if use_color() else "", pad_edge=False)
    for index in keep:
        table.add_column(
            columns[index].header,
            justify=columns[index].justify,
            width=widths[index],
            min_width=widths[index],
            overflow="ellipsis",
            no_wrap=True,
        )
    for row_cells in cells:
        table.add_row(*[_markup_safe(row_cells[index]) for index in keep])
    console.print(table)


COLUMN_GAP = 2  # rich's padding between two columns of a box-less table


def fit_columns(
    columns: Sequence[Column], cells: Sequence[Sequence[str]], width: int
) -> tuple[list[int], dict[int, int]]:
    """Choose which columns a terminal of ``width`` cells shows, and how wide each is.

    The id must survive any width, so it is never dropped or cut: shrinkable columns (the title) are
    cut first, then the least important columns are dropped, rightmost first among equals.
    """
    from rich.cells import cell_len

    natural: dict[int, int] = {}
    for index, column in enumerate(columns):
        size = max([cell_len(column.header), *(cell_len(row[index]) for row in cells)])
        natural[index] = min(size, column.max_width) if column.max_width else size

    def least(index: int) -> int:
        shrink_to = columns[index].shrink_to
        return min(natural[index], shrink_to) if shrink_to is not None else natural[index]

    keep = list(range(len(columns)))

    def needed(sizes: Callable[[int], int]) -> int:
        return sum(sizes(i) for i in keep) + COLUMN_GAP * (len(keep) - 1)

    while needed(least) > width:
        droppable = [i for i in keep if columns[i].priority > 0]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (columns[i].priority, i)))
    widths = {i: natural[i] for i in keep}
    excess = needed(lambda i: widths[i]) - width
    for index in sorted(
        (i for i in keep if columns[i].shrink_to is not None), key=lambda i: columns[i].priority
    ):
        if excess <= 0:
            break
        cut = min(excess, widths[index] - least(index))
        widths[index] -= cut
        excess -= cut
    return keep, widths


def _markup_safe(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def emit_text(text: str) -> None:
    """Print a document (markdown details) with control characters escaped but newlines kept."""
    write(escape_control(text, keep_newlines=True).rstrip("\n") + "\n")


def show_value(value: object) -> str:
    """One line for a value of a key/value listing: lists joined by commas, never a Python repr."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(show_value(item) for item in value)
    return str(value)


def emit_pairs(pairs: Sequence[tuple[str, object]]) -> None:
    """A key/value listing: keys aligned on a terminal, ``key<TAB>value`` lines when piped."""
    shown = [(escape_control(key), escape_control(show_value(value))) for key, value in pairs]
    if not sys.stdout.isatty():
        write("".join(f"{key}\t{value}\n" for key, value in shown))
        return
    from rich.cells import cell_len

    width = max((cell_len(key) for key, _ in shown), default=0)
    write("".join(f"{key}{' ' * (width - cell_len(key))}  {value}\n" for key, value in shown))
