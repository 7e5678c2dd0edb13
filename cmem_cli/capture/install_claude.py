"""``cmem install claude-code``: add cmem's hooks to Claude Code's settings and a short instruction block to
CLAUDE.md, or take both out again (``--uninstall``), touching nothing else.

Every other setting and hook is kept as it was; cmem's own entries are recognised by their command
(``... cmem hook EVENT`` or ``... -m cmem_cli hook EVENT``), so installing twice changes nothing and a moved
cmem executable is updated in place. A file is backed up before it is changed, and written atomically;
``--uninstall`` leaves no file that held only cmem's entries and no backup that holds nothing the file does
not hold now besides cmem's entries.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmem_cli.core.errors import InvalidInput, StorageError

# Event -> (matcher or None, timeout in seconds). PostToolUseFailure is where Claude Code reports failed
# tool calls (a failing command, an edit that no longer matched): the most useful errors to remember.
HOOK_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": ("*", 10),
    "PostToolUseFailure": ("*", 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
_OURS = re.compile(r"(?:^|[\s/\\'\"])(?:cmem|cmem_cli)(?:\.exe)?['\"]?\s+(?:--home\s+\S+\s+)?hook(?:\s|$)")

BEGIN = "<!-- cmem:begin (added by `cmem install claude-code`; `cmem install claude-code --uninstall` removes it) -->"
END = "<!-- cmem:end -->"
_INSTRUCTIONS = f"""{BEGIN}
## Memory: cmem
This machine keeps a local memory of past sessions in cmem; the session start shows recent entries by id.
- Before investigating something again, look it up, cheapest first: `{{cmem}} search "QUERY"` (ids, titles,
  token cost) -> `{{cmem}} timeline ID` (what happened around it) -> `{{cmem}} get ID` (full details, only the
  ids you need).
- When you make a decision, fix a bug, or discover something non-obvious, record it right away (edits and
  commands are captured automatically; the why is not):
  `{{cmem}} add --type decision|bugfix|discovery|insight|feature --title "..." --fact "..." --modified PATH`
- Text inside <private>...</private> is never stored.
{END}
"""


def instructions(command: str = "cmem") -> str:
    """The CLAUDE.md section, calling cmem as ``command``."""
    return _INSTRUCTIONS.replace("{cmem}", command)


INSTRUCTIONS = instructions()
_BLOCK = re.compile(r"\n?" + re.escape(BEGIN.split(" (")[0]) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)


@dataclass
class Change:
    path: Path
    old: str | None  # None: the file does not exist
    new: str | None  # None: the file is to be deleted
    what: str
    mode: int = 0o644  # of a file created (Claude Code's settings are 0644; ~/.claude.json is private)
    # uninstall: what a text of this file holds besides cmem's entries; a backup holding no more than the
    # file's new content is not kept (nor made)
    without_cmem: Callable[[str | None], object] | None = None

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.old or "").splitlines(keepends=True),
            (self.new or "").splitlines(keepends=True),
            fromfile=f"{self.path} (now)",
            tofile=f"{self.path} (after)",
        )
        return "".join(lines)


def default_executable() -> str | None:
    """The ``cmem`` script installed beside this interpreter (not a version-manager shim found on PATH, which
    can cost more than the hook itself), else whatever ``cmem`` is on PATH."""
    for name in ("cmem", "cmem.exe"):
        beside = Path(sys.executable).with_name(name)
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    return shutil.which("cmem")


def instruction_command(executable: str | None = None) -> str:
    """How CLAUDE.md calls cmem: ``cmem`` when that name on PATH is the cmem installed, else its absolute
    path (as the hooks use it), since the agent runs the commands with its own PATH."""
    exe = executable or default_executable()
    if exe is None:
        return f"{shlex.quote(sys.executable)} -m cmem_cli"
    on_path = shutil.which("cmem")
    if on_path and os.path.realpath(on_path) == os.path.realpath(exe):
        return "cmem"
    return shlex.quote(exe)


def hook_command(event: str, executable: str | None = None) -> str:
    """The command Claude Code runs: the absolute cmem executable when found, else this Python's module."""
    exe = executable or default_executable()
    base = shlex.quote(exe) if exe else f"{shlex.quote(sys.executable)} -m cmem_cli"
    return f"{base} hook {event}"


def is_cmem_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def settings_paths(scope: str, cwd: Path) -> tuple[Path, Path]:
    """(settings.json, CLAUDE.md) for ``user`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``) or ``project``."""
    if scope == "user":
        base = (
            Path(os.environ["CLAUDE_CONFIG_DIR"]).expanduser()
            if os.environ.get("CLAUDE_CONFIG_DIR")
            else (Path.home() / ".claude")
        )
        return base / "settings.json", base / "CLAUDE.md"
    if scope == "project":
        return cwd / ".claude" / "settings.json", cwd / "CLAUDE.md"
    raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None


def load_json_object(path: Path, text: str | None) -> dict[str, Any]:
    """A config file's JSON object ({} for a missing or empty file); anything else is left alone."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); not touching it"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object; not touching it")
    return data


def _load_settings(path: Path, text: str | None) -> dict[str, Any]:
    data = load_json_object(path, text)
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(f'{path}: "hooks" must be an object; not touching it')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} must be a list; not touching it")
    return data


def _without_ours(groups: list[Any]) -> list[Any]:
    """The matcher groups with cmem's commands removed; groups left empty by that are dropped."""
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        entries = [
            h for h in group["hooks"] if not (isinstance(h, dict) and is_cmem_command(h.get("command")))
        ]
        if len(entries) == len(group["hooks"]):
            kept.append(group)
        elif entries:
            kept.append({**group, "hooks": entries})
    return kept


def merge_settings(
    settings: dict[str, Any], *, uninstall: bool, executable: str | None = None
) -> dict[str, Any]:
    """A new settings object: cmem's hook entries added (or removed); everything else identical."""
    result: dict[str, Any] = json.loads(json.dumps(settings))  # deep copy, same key order
    hooks: dict[str, Any] = result.get("hooks") or {}
    for event in list(hooks):
        cleaned = _without_ours(hooks[event])
        if cleaned or not hooks[event]:
            hooks[event] = cleaned
        else:
            del hooks[event]
    if not uninstall:
        for event, (matcher, timeout) in HOOK_EVENTS.items():
            group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
            group["hooks"] = [
                {"type": "command", "command": hook_command(event, executable), "timeout": timeout}
            ]
            hooks.setdefault(event, []).append(group)
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def _dump(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def merge_instructions(text: str | None, *, uninstall: bool, command: str = "cmem") -> str | None:
    """CLAUDE.md with cmem's marked block replaced, added or removed (None: delete a file left empty)."""
    current = text or ""
    without = _BLOCK.sub("\n", current) if _BLOCK.search(current) else current
    without = without.rstrip("\n") + "\n" if without.strip() else ""
    if uninstall:
        if text is None:
            return None
        return without if without else None
    return (without + "\n" if without else "") + instructions(command)


def plan(
    scope: str,
    *,
    uninstall: bool,
    cwd: Path | None = None,
    executable: str | None = None,
    instructions: bool = True,
) -> list[Change]:
    settings_path, claude_md = settings_paths(scope, cwd or Path.cwd())
    old_settings = _read(settings_path)
    data = _load_settings(settings_path, old_settings)
    merged = merge_settings(data, uninstall=uninstall, executable=executable)
    if old_settings is not None and merged == data:
        new_settings: str | None = old_settings  # nothing to do: keep the file byte for byte
    elif uninstall and not merged:
        new_settings = None  # nothing but cmem's hooks was in it: no `{}` left behind
    else:
        new_settings = _dump(merged)

    def settings_without_cmem(text: str | None) -> object:
        return merge_settings(_load_settings(settings_path, text), uninstall=True)

    changes = [
        Change(
            settings_path,
            old_settings,
            new_settings,
            "hooks removed" if uninstall else "hooks installed",
            without_cmem=settings_without_cmem if uninstall else None,
        )  # fmt: skip
    ]
    if instructions:
        old_md = _read(claude_md)
        new_md = merge_instructions(old_md, uninstall=uninstall, command=instruction_command(executable))
        if old_md is not None and new_md is not None and old_md.rstrip("\n") == new_md.rstrip("\n"):
            new_md = old_md

        def md_without_cmem(text: str | None) -> object:
            return (merge_instructions(text, uninstall=True) or "").rstrip("\n")

        changes.append(
            Change(
                claude_md,
                old_md,
                new_md,
                "instructions removed" if uninstall else "instructions added",
                without_cmem=md_without_cmem if uninstall else None,
            )  # fmt: skip
        )
    return changes


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.cmem-backup-{stamp}")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.cmem-backup-{stamp}-{n}")
    shutil.copy2(path, backup)
    return backup


def _write_atomic(path: Path, text: str, new_mode: int = 0o644) -> None:
    """Atomic replace that keeps the file's permissions (``new_mode`` for a file created)."""
    from cmem_export.atomic import atomic_write

    mode = path.stat().st_mode & 0o777 if path.exists() else new_mode
    atomic_write(path, text, mode=mode)


def _redundant_backups(change: Change) -> list[Path]:
    """cmem's earlier backups of the file that hold nothing but its new content and cmem's own entries."""
    if change.without_cmem is None:
        return []
    target = change.without_cmem(change.new)
    found = []
    for backup in sorted(change.path.parent.glob(f"{change.path.name}.cmem-backup-*")):
        try:
            if change.without_cmem(_read(backup)) == target:
                found.append(backup)
        except (InvalidInput, StorageError):
            continue  # not one cmem can read: keep it
    return found


def apply(changes: list[Change]) -> list[str]:
    """Write the changes (backing up each existing file first); one message per file."""
    messages = []
    for change in changes:
        if not change.changed:
            messages.append(f"unchanged {change.path}")
            continue
        try:
            # taking out cmem's entries and nothing else needs no backup: the file keeps everything else
            only_ours = change.without_cmem is not None and change.without_cmem(
                change.old
            ) == change.without_cmem(change.new)
            backup = _backup(change.path) if change.old is not None and not only_ours else None
            if change.new is None:
                change.path.unlink()
            else:
                _write_atomic(change.path, change.new, change.mode)
            for redundant in _redundant_backups(change):
                redundant.unlink()
        except OSError as exc:
            raise StorageError(f"cannot update {change.path}: {exc.strerror or exc}") from None
        note = f" (backup: {backup.name})" if backup else ""
        verb = "removed" if change.new is None else "updated" if change.old is not None else "created"
        messages.append(f"{verb} {change.path}: {change.what}{note}")
    return messages
