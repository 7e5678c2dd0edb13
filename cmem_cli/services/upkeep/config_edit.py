"""Setting one value in the config file without losing what a person wrote there.

TOML has no writer in the standard library, so this edits the text: it replaces or inserts one
``key = "value"`` line in one ``[section]``, keeps every other line (comments included) as written, saves
the previous file as ``config.toml.bak``, and checks that the result parses to the intended value before
it replaces the file atomically.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from cmem_cli.core.config import config_file_path
from cmem_cli.core.errors import InvalidInput

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def set_config_value(section: str, key: str, value: str, path: Path | None = None) -> Path:
    """Set ``[section] key = "value"`` in the config file (created if missing); returns its path."""
    import tomllib

    from cmem_export.atomic import atomic_write

    path = path or config_file_path()
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f"{key} = {json.dumps(value)}"
    new = _with_value(old, section, key, line)
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"cannot update config file {path}: {exc}; it was left unchanged") from None
    if parsed.get(section, {}).get(key) != value:
        raise InvalidInput(f"cannot update [{section}] {key} in {path}; it was left unchanged")
    if old:
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    atomic_write(path, new)
    return path


def _with_value(text: str, section: str, key: str, line: str) -> str:
    lines = text.splitlines()
    start = next((i for i, raw in enumerate(lines) if _section_of(raw) == section), None)
    if start is None:
        prefix = text if not text or text.endswith("\n") else text + "\n"
        return f"{prefix}{chr(10) if text.strip() else ''}[{section}]\n{line}\n"
    end = next((i for i in range(start + 1, len(lines)) if _section_of(lines[i]) is not None), len(lines))
    key_line = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start + 1, end):
        if key_line.match(lines[i]):
            lines[i] = line
            break
    else:
        lines.insert(start + 1, line)
    return "\n".join(lines) + "\n"


def _section_of(raw: str) -> str | None:
    match = _HEADER.match(raw)
    return match.group(1) if match else None
