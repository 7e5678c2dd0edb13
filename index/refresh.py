"""Fresh without a daemon: writes start a detached, locked, incremental index pass that nobody waits for.

cmem runs no server between commands, so the commands that write keep the index fresh themselves. A write
appends one byte per file it wrote to a backlog beside ``index.db`` (``index.db.backlog``: one ``write`` on
an ``O_APPEND`` file, about 20 microseconds). The hooks at the end of a turn (Stop, SessionEnd), and any
write that finds ``BACKLOG`` bytes or more there, start ``python -m cmem_index.refresh`` in a session of
its own, its output nowhere, at a lower priority, and return at once.

The pass takes the index's writer lock without waiting (``cmem index`` and ``cmem watch`` take the same
one): a second pass asked for meanwhile exits at once, and the running one goes round again while the
backlog grew during its pass. It takes the backlog by renaming it (a write after that starts a new one),
runs the ordinary update pass (:class:`cmem_index.indexer.Indexer`: short transactions, chunks first and
vectors after, so a pass killed at any point is resumed by the next), and removes what it took when done.
After letting the lock go it looks once more, so a write that found the lock taken just before it was let
go is not left waiting for the next turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cmem_cli.core.config import Config
    from cmem_index.indexer import IndexReport

BACKLOG = 20  # files written since the last pass that start one without waiting for the turn's end
NICENESS = 10  # the pass yields the CPU to the agent and to every command a person runs
LOG_NAME = "index.log"
ENV_SWITCH = "CMEM_INDEX_BACKGROUND"  # "off" (or "0", "false", "no"): writes never start a pass


def backlog_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".backlog")


def _taken_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".backlog.taken")


def enabled(config: Config) -> bool:
    """Whether writes start background passes: on unless ``CMEM_INDEX_BACKGROUND=off`` or ``[index]
    background = false`` in the config file."""
    value = os.environ.get(ENV_SWITCH)
    if value is None:
        setting = config.section("index").get("background", True)
        return setting is not False and str(setting).lower() not in ("off", "0", "false", "no")
    return value.strip().lower() not in ("off", "0", "false", "no")


def note_written(config: Config, count: int) -> None:
    """A write put ``count`` files in the export tree: add them to the backlog and start a pass once it
    holds ``BACKLOG`` or more. Never raises and never waits: a write must not fail or slow down for the
    index's sake."""
    if count <= 0 or not enabled(config):
        return
    try:
        fd = os.open(backlog_path(config.index_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"." * count)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError:
        return
    if size >= BACKLOG:
        start(config)


def pending(config: Config) -> int:
    """How many files were written since the last background pass took the backlog (0: none)."""
    total = 0
    for path in (backlog_path(config.index_path), _taken_path(config.index_path)):
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total


def request(config: Config) -> bool:
    """The turn's end: start a pass when files were written since the last one took the backlog. True when
    a pass was started (or one running will see the backlog)."""
    if not enabled(config) or not pending(config):
        return False
    start(config)
    return True


def start(config: Config) -> None:
    """Start a detached pass over ``config``'s home unless one holds the writer lock (it will see the
    backlog before it ends). Never raises."""
    try:
        if _lock_held(config.index_path):
            return
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-m", "cmem_index.refresh", "--home", str(config.home)],
                os.environ,
                # its output nowhere: a hook's stdout is a pipe Claude Code reads to its end
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
                setsid=True,  # a session of its own: no signal to the hook's group reaches the pass
            )
        finally:
            os.close(devnull)
    except OSError as exc:
        log_line(config, f"cannot start a background index pass: {exc.strerror or exc}")
        return
    import threading

    # A long-lived writer (the MCP server) reaps its pass; a hook exits first and leaves that to init.
    threading.Thread(target=_reap, args=(pid,), name="cmem-index-reaper", daemon=True).start()


def _reap(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def _lock_held(index_path: Path) -> bool:
    """Whether another process holds the index's writer lock right now (a pass that will look again)."""
    from cmem_index.lock import lock_path

    try:
        fd = os.open(lock_path(index_path), os.O_RDONLY)
    except OSError:
        return False  # no lock file yet: no index writer ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing lets go of a lock this call took
    return False


# -- the pass -------------------------------------------------------------------------------------------
def run(config: Config) -> IndexReport | None:
    """Update the index while the backlog grows, holding the writer lock; None when another process held
    it (that one goes round again). Then look once more after letting the lock go."""
    from cmem_cli.core.errors import DatabaseBusy

    report = None
    for _ in range(2):
        try:
            report = _passes(config) or report
        except DatabaseBusy:
            return report
        if not os.path.exists(backlog_path(config.index_path)):
            break
    return report


def _passes(config: Config) -> IndexReport | None:
    from cmem_index.lock import writer_lock

    report = None
    with writer_lock(config.index_path, timeout=0):
        while True:
            taken = take_backlog(config.index_path)
            if taken is None and report is not None:
                return report
            report = update(config)
            backlog_done(taken)


def take_backlog(index_path: Path) -> Path | None:
    """Move the backlog aside before a pass (a write after this starts a new one); what an interrupted
    pass took is taken again. None when there is nothing. The caller holds the writer lock."""
    taken = _taken_path(index_path)
    try:
        os.replace(backlog_path(index_path), taken)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    return taken if taken.exists() else None


def backlog_done(taken: Path | None) -> None:
    """The pass that took ``taken`` (:func:`take_backlog`) is done: forget it."""
    if taken is not None:
        with contextlib.suppress(OSError):
            taken.unlink()


def update(config: Config, *, progress: Any = None) -> IndexReport:
    """One update pass over every collection with the configured model (loaded only when there is text
    to embed), as `cmem index` runs it; the caller holds the writer lock."""
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.loading import NO_MODEL_HINT, lazy_embedder
    from cmem_index.store import IndexStore

    config.ensure_home()
    embedder, note = lazy_embedder(config, remembered_model(config))
    if embedder is None:
        note = note if "cmem models" in (note or "") else f"{note}; {NO_MODEL_HINT}"
    store = IndexStore.open(config.index_path)
    try:
        report = Indexer(store, load_collections(config), embedder, note=note, progress=progress).run()
    finally:
        store.close()
    if embedder is not None:
        remember_model(config, embedder.describe())
    return report


def remembered_model(config: Config) -> dict[str, Any] | None:
    """What the index remembers about the model file that made its vectors (None if unreadable)."""
    from cmem_cli.core.errors import CmemError
    from cmem_index.store import IndexStore

    if not config.index_path.exists():
        return None
    try:
        store = IndexStore.open(config.index_path, readonly=True, busy_ms=2000)
        try:
            remembered = store.settings.get_json("embed_model")
            return remembered if isinstance(remembered, dict) else None
        finally:
            store.close()
    except (CmemError, ValueError):
        return None


def remember_model(config: Config, description: dict[str, Any]) -> None:
    """Note the model file's fingerprint, dimension and token limit, so a pass with nothing to embed need
    not load it."""
    import json

    from cmem_index.store import IndexStore

    store = IndexStore.open(config.index_path)
    try:
        with store.transaction():
            store.settings.set("embed_model", json.dumps(description))
    finally:
        store.close()


def log_line(config: Config, message: str) -> None:
    """One line in ``<home>/logs/index.log`` (rotated at ~1 MB): a background pass has no terminal."""
    from cmem_cli.core.logfile import append_line

    append_line(config.log_dir, LOG_NAME, message)


def main(argv: list[str]) -> int:
    """``python -m cmem_index.refresh [--home DIR]``: the detached pass. Its problems go to the log."""
    home = argv[argv.index("--home") + 1] if "--home" in argv[:-1] else None
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    try:
        from cmem_cli.core.config import load_config

        config = load_config(home)
    except Exception:  # noqa: BLE001 - no home to log into: nothing to do
        return 1
    try:
        report = run(config)
    except Exception as exc:  # noqa: BLE001 - a detached process: its only voice is the log
        from cmem_cli.core.errors import CmemError

        message = exc.message if isinstance(exc, CmemError) else f"{type(exc).__name__}: {exc}"
        log_line(config, f"background index pass failed: {message}")
        return 1
    if report is not None:
        for error in report.errors:
            log_line(config, f"warning: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
