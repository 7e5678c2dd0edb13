"""The hooks' read of recall: what a prompt or a file read would inject, from the store opened on its own for
this one read, before the hook answers and records (capture/hooks/runner.py's ``_recall_first``).

The agent waits for this read, so it loads the store and recall's modules and nothing else: no API object,
no write service, no exporter, no keyword search (tests/test_startup.py pins that), and the store is read
with a short busy wait and a deadline, so a locked or slow store answers nothing (:class:`DatabaseBusy`)
rather than late. What it finds is :func:`cmem_cli.services.read.recall.prompt_recall`'s or
:func:`~cmem_cli.services.read.recall.file_recall`'s, the same as `cmem recall` shows.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cmem_cli.core.config import Config
    from cmem_cli.core.recall_settings import RecallSettings
    from cmem_cli.services.read.recall import Recall
    from cmem_cli.store.repository import Store

WAIT_MS = 200  # a lock (a migration, a WAL being reset) is waited for this long, then nothing is injected


def read_recall(
    config: Config,
    point: str,
    subject: str,
    *,
    cwd: str | None,
    session: str,
    settings: RecallSettings,
    lines: tuple[int, int] | None = None,
    given: Collection[str] = (),
    deadline: float | None = None,
) -> Recall | None:
    """What recall injects for a prompt (``point`` "prompt") or a file read or edited ("file", ``subject``
    its path relative to the repository) in ``cwd``'s project; nothing is written (the caller records
    ``Recall.given_keys`` with the event). None for a project ``[privacy] exclude_projects`` names. A
    statement still running at ``deadline`` (``time.perf_counter()``) or a store locked longer than
    ``WAIT_MS`` raises :class:`DatabaseBusy`."""
    from cmem_cli.core.config import default_project
    from cmem_cli.services.write.privacy import is_excluded_project

    excluded = config.section("privacy")
    if is_excluded_project(default_project(cwd), excluded):
        return None
    from cmem_cli.store.repository import Store

    config.ensure_home()
    store = Store.open(config.db_path, config.export_dir, wait_ms=WAIT_MS)
    try:
        store.tune(busy_timeout_ms=WAIT_MS, checkpoint_on_close=False)
        if deadline is not None:
            store.give_up_at(deadline)
        project = project_here(store, cwd)
        if is_excluded_project(project, excluded):
            return None
        from cmem_cli.services.read.recall import file_recall, prompt_recall

        if point == "prompt":
            return prompt_recall(store, project, subject, settings, session=session, cwd=cwd, given=given)
        return file_recall(
            store, project, subject, settings, session=session, cwd=cwd, lines=lines, given=given
        )
    finally:
        store.close()


def project_here(store: Store, cwd: str | None) -> str:
    """The project work in ``cwd`` files under, as :meth:`cmem_cli.api.Memory.project_here` says (read only:
    a repository new to the store is not claimed)."""
    import os

    named = os.environ.get("CMEM_PROJECT")
    if named:
        return named
    from pathlib import Path

    from cmem_cli.core.repo_identity import repository_identity

    directory = os.path.abspath(cwd) if cwd is not None else _current_directory()
    identity = repository_identity(directory)
    if identity is None:
        return Path(directory).name or "default"
    return store.projects.name_for(identity, claim=False) or "default"


def _current_directory() -> str:
    import os

    try:
        return os.getcwd()
    except OSError:  # deleted: as the API does, nothing relative can be resolved
        return "/"
