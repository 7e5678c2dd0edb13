"""``cmem install claude-code``: add cmem's hooks to Claude Code's settings and a short instruction block to
CLAUDE.md, or take both out again (``--uninstall``), touching nothing else.

Every other setting and hook is kept as it was; cmem's own entries are recognised by their command
(``... cmem hook EVENT`` or ``... -m cmem_cli hook EVENT``), so installing twice changes nothing and a moved
cmem executable is updated in place. A file is backed up before it is changed, and written atomically;
``--uninstall`` leaves no file that held only cmem's entries and no backup that holds nothing the file does
not hold now besides cmem's entries.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from cmem_cli.capture.agent_dirs import claude_dir
from cmem_cli.capture.agents.claude_code import EVENTS, HOOKS
from cmem_cli.capture.install_files import (
    Change,
    HookEntries,
    apply,
    default_executable,
    hook_command,
    is_cmem_command,
    merge_hook_groups,
    plan_hooks,
    read_text,
    restored,
)
from cmem_cli.core.errors import InvalidInput

__all__ = [
    "HOOK_EVENTS",
    "Change",
    "apply",
    "is_cmem_command",
    "merge_instructions",
    "merge_settings",
    "plan",
]

HOOK_EVENTS = EVENTS  # the events cmem hooks (cmem_cli.capture.agents.claude_code)


def hook_entries(executable: str | None = None) -> HookEntries:
    """cmem's entries for settings.json, one group a matcher: ``{"type", "command", "timeout"}`` and
    ``"async": true`` on those Claude Code need not wait for."""
    return {
        event: [
            (
                hook.matcher,
                {
                    "type": "command",
                    "command": hook_command(event, executable),
                    "timeout": hook.timeout,
                    **({} if hook.waits else {"async": True}),
                },
            )
            for hook in hooks
        ]
        for event, hooks in HOOKS.items()
    }


BEGIN = "<!-- cmem:begin (added by `cmem install claude-code`; `cmem install claude-code --uninstall` removes it) -->"
END = "<!-- cmem:end -->"
_INSTRUCTIONS = f"""{BEGIN}
## Memory: cmem
This machine keeps a local memory of past sessions in cmem; the session start shows recent entries by id.
- Before investigating something again, look it up, cheapest first: `{{cmem}} search "QUERY"` (ids, titles,
  token cost) -> `{{cmem}} timeline ID` (context) -> `{{cmem}} get ID` (full details, only the ids you need).
- When you make a decision, fix a bug, or discover something non-obvious, record it right away (edits and
  commands are captured automatically; the why is not):
  `{{cmem}} add --type decision|bugfix|discovery|insight|feature --title "..." --fact "..." --modified PATH`
- A fact that changed names what it replaces: `--supersedes ID`, or one stable `--key NAME`. When an add
  reports "may replace #ID", check that memory and run the link command it prints if it is replaced.
- Text inside <private>...</private> is never stored.
{END}
"""


def instructions(command: str = "cmem") -> str:
    """The CLAUDE.md section, calling cmem as ``command``."""
    return _INSTRUCTIONS.replace("{cmem}", command)


INSTRUCTIONS = instructions()
_BLOCK = re.compile(r"\n?" + re.escape(BEGIN.split(" (")[0]) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)


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


def settings_paths(scope: str, cwd: Path) -> tuple[Path, Path]:
    """(settings.json, CLAUDE.md) for ``user`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``) or ``project``."""
    if scope == "user":
        base = claude_dir()
        return base / "settings.json", base / "CLAUDE.md"
    if scope == "project":
        return cwd / ".claude" / "settings.json", cwd / "CLAUDE.md"
    raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")


def merge_settings(
    settings: dict[str, Any], *, uninstall: bool, executable: str | None = None
) -> dict[str, Any]:
    """A new settings object: cmem's hook entries added (or removed); everything else identical."""
    return merge_hook_groups(settings, hook_entries(executable), uninstall=uninstall)


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

    changes = [plan_hooks(settings_path, hook_entries(executable), uninstall=uninstall)]
    if instructions:
        old_md = read_text(claude_md)
        new_md = merge_instructions(old_md, uninstall=uninstall, command=instruction_command(executable))
        if old_md is not None and new_md is not None and old_md.rstrip("\n") == new_md.rstrip("\n"):
            new_md = old_md

        def md_without_cmem(text: str | None) -> object:
            return (merge_instructions(text, uninstall=True) or "").rstrip("\n")

        def md_pristine(text: str) -> bool:
            return not _BLOCK.search(text)

        if uninstall and new_md != old_md:
            new_md = restored(claude_md, new_md, md_without_cmem, md_pristine)
        upgrade = not uninstall and old_md is not None and not md_pristine(old_md)

        changes.append(
            Change(
                claude_md,
                old_md,
                new_md,
                "instructions removed" if uninstall else "instructions added",
                without_cmem=md_without_cmem if uninstall else None,
                backup=not upgrade,  # only cmem's section changes
            )  # fmt: skip
        )
    return changes
