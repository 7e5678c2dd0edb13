"""What `cmem doctor` checks (and ``--fix`` repairs) in a tree synced through git.

- **git arrivals not adopted**: a sync killed after `git merge` (or a machine killed while joining) leaves
  commits whose changes the store lacks (``last..HEAD``, ``cmem_cli.services.inbound.arrivals``). ``--fix`` adopts
  them first, before anything else looks at the tree: otherwise a file another machine forgot would look
  "missing" and be restored, and the next sync would push it back to everyone.
- **git debris**: lock files and an unfinished merge a killed git left, when no git process works in the
  tree (``cmem_cli.services.inbound.sync_repo``); ``--fix`` clears them.

Both repairs run under the sync lock, so they never race a running `cmem sync`; while one runs, doctor
only reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmem_cli.core.errors import CmemError, DatabaseBusy
from cmem_cli.core.synclock import sync_lock
from cmem_cli.services.inbound import arrivals
from cmem_cli.services.inbound.sync_repo import Git, clear_git_debris, connected_git_dir, find_git_debris

if TYPE_CHECKING:
    from cmem_cli.services.upkeep.doctor_report import Check
    from cmem_cli.services.write.service import WriteService


def git_checks(memory: WriteService, *, fix: bool) -> list[Check]:
    """The checks of a tree connected with `cmem sync init` (none for any other tree)."""
    git_dir = connected_git_dir(memory.config.home, memory.export_root)
    if git_dir is None:
        return []
    git = Git(memory.export_root, git_dir)
    try:
        todo = arrivals.pending(memory, git)
        debris = find_git_debris(git_dir, memory.export_root)
    except CmemError as exc:
        return [{"name": "git arrivals", "status": "fail", "detail": exc.message}]
    arrivals_check: Check = {"name": "git arrivals", "status": "ok", "detail": "adopted"}
    debris_check: Check = {"name": "git debris", "status": "ok", "detail": "0", "paths": []}
    if todo is not None:
        count = len(todo.changed) + len(todo.deleted)
        arrivals_check["status"] = "fail"
        arrivals_check["detail"] = (
            f"{count} file(s) git brought are not adopted (a sync stopped half-way); "
            "`cmem sync` or `cmem doctor --fix` adopts them"
        )
    if debris:
        names = debris.describe(git_dir)
        debris_check["status"] = "fail"
        debris_check["detail"] = f"{len(names)}: " + ", ".join(names[:5])
        debris_check["paths"] = names
    if fix and (todo is not None or debris):
        try:
            with sync_lock(memory.config.home):
                if debris:
                    clear_git_debris(git, debris)
                    debris_check["status"] = "fixed"
                if todo is not None:
                    _adopt(memory, git)
                    arrivals_check["status"] = "fixed"
                    arrivals_check["detail"] = f"adopted {count} file(s) git brought"
        except DatabaseBusy:
            note = "; a cmem sync is running (it does this itself)"
            for check in (arrivals_check, debris_check):
                if check["status"] == "fail":
                    check["detail"] += note
    return [arrivals_check, debris_check]


def _adopt(memory: WriteService, git: Git) -> None:
    """Adopt ``last..HEAD`` as a sync would: interrupted export writes rolled back first, and paths a
    person changed in the tree since HEAD left to their own adoption."""
    from cmem_cli.services.upkeep.recovery import recover

    dirty = {
        entry[3:]
        for entry in git.z_list("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    }
    with memory.write_transaction(fsync=False, skip_identical=True) as files:
        recover(memory)
        todo = arrivals.pending(memory, git)
        if todo is not None:
            arrivals.adopt_pending(memory, files, todo, dirty=dirty)
