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
    lines = [f"{BEGIN} ({note})", f"[{name}]", *(f"{key} = {value(item)}" for key, item in fields.items())]
    return "\n".join([*lines, END]) + "\n"


def without_block(text: str) -> str:
    """``text`` with cmem's block (and the blank line put before it) removed."""
    return _BLOCK.sub("", text)


def with_block(text: str, block: str) -> str:
    """``text`` with cmem's block replaced, or appended after one blank line."""
    base = without_block(text)
    if not base:
        return block
    return base + ("" if base.endswith("\n") else "\n") + "\n" + block
