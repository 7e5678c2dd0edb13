"""What every ``cmem install AGENT`` shares: the planned change to one file (shown by ``--dry-run``), writing
it (a backup of the file first, an atomic replace that keeps the file's mode), the command an agent runs,
recognising cmem's own entries, and undoing an install byte for byte.

An agent's installer (``install_claude``, ``install_agents``) only says which file holds what: it plans
:class:`Change` objects and :func:`apply` writes them.
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmem_cli.core.errors import InvalidInput, StorageError

BACKUP_MARK = ".cmem-backup-"
_OURS = re.compile(r"(?:^|[\s/\\'\"])(?:cmem|cmem_cli)(?:\.exe)?['\"]?\s+(?:--home\s+\S+\s+)?hook(?:\s|$)")


@dataclass
class Change:
    path: Path
    old: str | None  # None: the file does not exist
    new: str | None  # None: the file is to be deleted
    what: str
    mode: int = 0o644  # of a file created (agents' settings are 0644; files holding account state are 0600)
    # uninstall: what a text of this file holds besides cmem's entries; a backup holding no more than the
    # file's new content is not kept (nor made)
    without_cmem: Callable[[str | None], object] | None = None
    # False: only cmem's own entries change (an older cmem's upgraded): the file needs no backup, and one
    # holding cmem's entries must never be what an uninstall restores
    backup: bool = True

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


def cmem_command(executable: str | None = None) -> str:
    """How an agent runs cmem: the absolute cmem executable when found, else this Python's module."""
    exe = executable or default_executable()
    return shlex.quote(exe) if exe else f"{shlex.quote(sys.executable)} -m cmem_cli"


def hook_command(event: str, executable: str | None = None, agent: str | None = None) -> str:
    """The command an agent runs for ``event``: ``<cmem> hook EVENT``, or ``<cmem> hook --agent A EVENT``."""
    return f"{cmem_command(executable)} hook {f'--agent {agent} ' if agent else ''}{event}"


def is_cmem_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def read_text(path: Path) -> str | None:
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


def dump_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- hook entries shaped like Claude Code's: {event: [{"matcher": ..., "hooks": [{"command": ...}]}]} -------


def check_hook_groups(path: Path, data: dict[str, Any], key: str = "hooks") -> dict[str, Any]:
    hooks = data.get(key)
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(f'{path}: "{key}" must be an object; not touching it')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: {key}.{event} must be a list; not touching it")
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


# event -> its groups of cmem's entries: (matcher or None, the hook object), one group a matcher
HookEntries = Mapping[str, Sequence[tuple[str | None, dict[str, Any]]]]


def merge_hook_groups(settings: dict[str, Any], entries: HookEntries, *, uninstall: bool) -> dict[str, Any]:
    """A copy of ``settings`` with cmem's hook entries removed from every event, then (unless ``uninstall``)
    ``entries`` added: event -> its (matcher or None, the hook object) groups. Everything else stays
    identical."""
    result: dict[str, Any] = json.loads(json.dumps(settings))  # deep copy, same key order
    hooks: dict[str, Any] = result.get("hooks") or {}
    for event in list(hooks):
        cleaned = _without_ours(hooks[event])
        if cleaned or not hooks[event]:
            hooks[event] = cleaned
        else:
            del hooks[event]
    if not uninstall:
        for event, groups in entries.items():
            for matcher, hook in groups:
                group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
                group["hooks"] = [hook]
                hooks.setdefault(event, []).append(group)
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def hook_entries(
    events: Mapping[str, tuple[str | None, int | None]],
    executable: str | None = None,
    agent: str | None = None,
    **fields: str,
) -> dict[str, list[tuple[str | None, dict[str, Any]]]]:
    """cmem's hook entry for each of ``events`` (event -> (matcher or None, timeout)) in Claude Code's layout,
    which Codex CLI and Gemini CLI share: ``{"type": "command", "command": ..., "timeout": ...}``, after
    the agent's own ``fields`` (Gemini's ``name``)."""
    return {
        event: [
            (
                matcher,
                {
                    **fields,
                    "type": "command",
                    "command": hook_command(event, executable, agent),
                    **({"timeout": timeout} if timeout is not None else {}),
                },
            )
        ]
        for event, (matcher, timeout) in events.items()
    }


def plan_hooks(
    path: Path,
    entries: HookEntries,
    *,
    uninstall: bool,
    also: Callable[[dict[str, Any], bool], dict[str, Any]] | None = None,
    what: str = "hooks",
    check: Callable[[Path, dict[str, Any]], dict[str, Any]] = check_hook_groups,
) -> Change:
    """The change to a JSON file of Claude Code's hook layout: ``entries`` merged in (or taken out), then
    ``also(data, uninstall)`` for what else the agent keeps there (Gemini CLI's MCP server)."""

    def merge(data: dict[str, Any], remove: bool) -> dict[str, Any]:
        merged = merge_hook_groups(data, entries, uninstall=remove)
        return also(merged, remove) if also is not None else merged

    return plan_json(path, merge, uninstall=uninstall, what=what, check=check)


def plan_json(
    path: Path,
    merge: Callable[[dict[str, Any], bool], dict[str, Any]],
    *,
    uninstall: bool,
    what: str,
    check: Callable[[Path, dict[str, Any]], dict[str, Any]] | None = None,
    mode: int = 0o644,
) -> Change:
    """The change to one JSON config file: ``merge(data, uninstall)`` puts cmem's entries in or takes them
    out. A file already as wanted is kept byte for byte; uninstalling restores the backup install made
    (:func:`restored`), or deletes a file that held nothing but cmem's entries."""

    def load(text: str | None) -> dict[str, Any]:
        data = load_json_object(path, text)
        return check(path, data) if check is not None else data

    def without_cmem(text: str | None) -> object:
        return merge(load(text), True)

    def pristine(text: str) -> bool:  # holds none of cmem's entries: a state from before any install
        data = load(text)
        return merge(data, True) == data

    old = read_text(path)
    data = load(old)
    merged = merge(data, uninstall)
    new: str | None
    if old is not None and merged == data:
        new = old  # already as wanted
    elif not merged and (old is None or uninstall):
        new = None  # nothing but cmem's entries: no `{}` left behind
    else:
        new = dump_json(merged)
    if uninstall and new != old:
        new = restored(path, new, without_cmem, pristine)
    upgrade = (
        not uninstall and old is not None and not pristine(old) and merge(merged, True) == merge(data, True)
    )
    verb = "removed" if uninstall else "installed"
    return Change(
        path,
        old,
        new,
        f"{what} {verb}",
        mode=mode,
        without_cmem=without_cmem if uninstall else None,
        backup=not upgrade,
    )


# -- writing ---------------------------------------------------------------------------------------------


def backups_of(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}{BACKUP_MARK}*"))


def restored(
    path: Path,
    new: str | None,
    without_cmem: Callable[[str | None], object],
    pristine: Callable[[str], bool] | None = None,
) -> str | None:
    """Uninstalling: the newest backup's text when it holds exactly what ``new`` holds besides cmem's
    entries, so the file comes back byte for byte as it was before install; else ``new`` (None: delete).
    ``pristine`` tells a backup holding none of cmem's entries (one an older cmem made when it replaced its
    own entries holds them, and must not bring them back)."""
    target = without_cmem(new)
    for backup in reversed(backups_of(path)):
        try:
            text = read_text(backup)
            if text is not None and without_cmem(text) == target and (pristine is None or pristine(text)):
                return text
        except (InvalidInput, StorageError):
            continue
    return new


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}-{n}")
    shutil.copy2(path, backup)
    return backup


def _write_atomic(path: Path, text: str, new_mode: int = 0o644) -> None:
    """Atomic replace that keeps the file's permissions (``new_mode`` for a file created)."""
    from cmem_export.atomic import atomic_write

    mode = path.stat().st_mode & 0o777 if path.exists() else new_mode
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # an agent's folder cmem had to create
    atomic_write(path, text, mode=mode)


def _redundant_backups(change: Change) -> list[Path]:
    """cmem's earlier backups of the file that hold nothing but its new content and cmem's own entries."""
    if change.without_cmem is None:
        return []
    target = change.without_cmem(change.new)
    found = []
    for backup in backups_of(change.path):
        try:
            if change.without_cmem(read_text(backup)) == target:
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
            backup = (
                _backup(change.path) if change.old is not None and change.backup and not only_ours else None
            )
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
