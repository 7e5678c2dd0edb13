"""Reading command-line input: JSON records from a file or stdin, and checks on argument text.

Free of typer, so the fast CLI path (``cmem_cli.cli.fast``) can use it as well as the typer commands.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.jsonin import loads_bounded


def read_json_input(source: str) -> str:
    """Read a JSON document from a file path or ``-`` (stdin) as text; invalid UTF-8 is an input error."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as fh:
                data = fh.read()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {source}") from None
    except IsADirectoryError:
        raise InvalidInput(f"{source} is a directory") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {source}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source} is not valid UTF-8 (byte {exc.start})") from None


def parse_json_records(text: str, source: str) -> list[tuple[int, Any]]:
    """One JSON object, a JSON array of objects, or NDJSON: (line number, value) pairs."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInput(f"{source}: no JSON input")
    try:
        value = loads_bounded(stripped)
    except json.JSONDecodeError:
        value = None
    else:
        if isinstance(value, list):
            return [(i + 1, v) for i, v in enumerate(value)]
        return [(1, value)]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, loads_bounded(line)))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{source}: line {number}: invalid JSON: {exc.msg}") from None
        except InvalidInput as exc:
            raise InvalidInput(f"{source}: line {number}: {exc.message}") from None
    return records


def check_cli_text(name: str, value: str | None) -> str | None:
    """Arguments with bytes that are not UTF-8 arrive as surrogates; reject them up front."""
    from cmem_cli.core.text import is_valid_text

    if value is not None and not is_valid_text(value):
        raise InvalidInput(f"{name} is not valid UTF-8")
    return value
