"""`cmem sync`: bring what changed in the export tree into the store.

``sync_local`` adopts hand edits, new files and deletions (``cmem_cli.services.inbound.adopt``). Syncing through a git
remote builds on it: commit, pull, ``sync_local`` what arrived, push.
"""

from __future__ import annotations

from pathlib import Path

from cmem_cli.services.inbound.adopt import AdoptReport, adopt_tree
from cmem_cli.services.write.service import WriteService


def sync_local(memory: WriteService, paths: list[Path] | None = None) -> AdoptReport:
    """Adopt every change made in the export tree since cmem last wrote it (or only ``paths``)."""
    return adopt_tree(memory, paths)
