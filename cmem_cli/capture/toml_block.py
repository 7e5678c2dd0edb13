"""cmem's one table in a TOML file the person keeps by hand (Codex's ``config.toml``): added as a marked
block at the end and taken out again, leaving every other byte of the file as it was. (The standard library
reads TOML but cannot write it, and re-serialising would lose the person's comments and layout anyway.)
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from cmem_cli.core.errors import InvalidInput

BEGIN = "# >>> cmem"
END = "# <<< cmem"
_BLOCK = re.compile(
    r"\n?" + re.escape(BEGIN) + r"[^\n]*\n.*?^" + re.escape(END) + r"[^\n]*(?:\n|\Z)",
    re.DOTALL | re.MULTILINE,
)


def parse(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); not touching it") from None


def value(item: Any) -> str:
    """A TOML value for a string or a list of strings (JSON's escapes are TOML basic-string escapes)."""
    if isinstance(item, list):
        return "[" + ", ".join(value(part) for part in item) + "]"
    return json.dumps(item, ensure_ascii=False)


def table(name: str, fields: dict[str, Any], note: str) -> str:
    """The marked block holding ``[name]`` with ``fields``."""
    return tables([(name, fields)], note)


def tables(items: list[tuple[str, dict[str, Any]]], note: str) -> str:
    """The marked block holding each ``[name]`` with its fields; each header carries :data:`OURS`, so that
    uninstalling takes out these tables and keeps any the agent wrote into the block since."""
    lines = [f"{BEGIN} ({note})"]
    for name, fields in items:
        lines += [f"[{name}]  {OURS}", *(f"{key} = {value(item)}" for key, item in fields.items())]
    return "\n".join([*lines, END]) + "\n"


OURS = "# cmem"
_HEADER = re.compile(r"^\s*\[")


def without_block(text: str) -> str:
    """``text`` with cmem's block (and the blank line put before it) removed. Tables the agent itself wrote
    inside the block (Codex appends its hook trust, ``[tui]`` and project trust at the end of the file, which
    is inside cmem's block) are kept, in place of the block."""
    return _BLOCK.sub(_foreign_tables, text)


def _foreign_tables(match: re.Match[str]) -> str:
    lines = match.group(0).splitlines(keepends=True)
    kept: list[str] = []
    ours = True  # the lines before the first table are the BEGIN marker's
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(BEGIN) or stripped.startswith(END):
            continue
        if _HEADER.match(line):
            header = line.split("]")[0] + "]" if "]" in line else line
            ours = line.rstrip().endswith(OURS) or header.strip() == "[mcp_servers.cmem]"
        if not ours:
            kept.append(line)
    if not "".join(kept).strip():
        return ""
    return ("\n" if match.group(0).startswith("\n") else "") + "".join(kept)


def with_block(text: str, block: str) -> str:
    """``text`` with cmem's block replaced, or appended after one blank line."""
    base = without_block(text)
    if not base:
        return block
    return base + ("" if base.endswith("\n") else "\n") + "\n" + block
