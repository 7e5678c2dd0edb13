"""`cmem watch`: keep the index fresh as files change, cheaply and without ever corrupting it.

Filesystem events only say *which collection* needs a look; the update pass (stat walk + change detection)
then decides what changed. That makes every tricky case correct by construction: an editor's atomic save
(write a temp file, rename it over the original), moves in, out and within a collection, deletes, and a
collection folder deleted and recreated (a supervisor notices the root's inode changing and re-arms the
watch). Events are debounced (about a second of quiet) and coalesced per collection, with a cap so a
constantly written folder is still indexed. SIGINT/SIGTERM stop it between batches, never mid-transaction,
and within a second while it waits for a lock another process holds (``cmem_cli.core.stopping``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from cmem_cli.core.config import Config
from cmem_index.collections import MEMORIES, Collection, collections_file, load_collections
from cmem_index.indexer import Indexer, IndexReport
from cmem_index.lock import writer_lock
from cmem_index.scan import compile_mask, is_ignored_name
from cmem_index.store import IndexStore

DEBOUNCE_SECONDS = 1.0
MAX_DELAY_SECONDS = 10.0
SUPERVISE_SECONDS = 1.0


class Stopped(Exception):
    """Raised inside a pass (between batches) when shutdown was requested."""


@dataclass
class _Root:
    collection: Collection
    identity: tuple[int, int] | None  # (device, inode) of the root when the watch was armed
    watch: Any = None


class Watcher:
    """Watches every collection and runs update passes; ``run()`` blocks until ``stop()``."""

    def __init__(
        self,
        config: Config,
        *,
        debounce: float = DEBOUNCE_SECONDS,
        max_delay: float = MAX_DELAY_SECONDS,
        on_report: Callable[[IndexReport], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_export_change: Callable[[list[Path] | None], None] | None = None,
    ):
        self.config = config
        # Called before indexing with the export-tree files that changed (None: all of them, at start-up),
        # so hand edits are adopted into the store first (the index itself never touches the store).
        self.on_export_change = on_export_change
        self._export_paths: set[Path] = set()
        self._export_whole_tree = False
        self.debounce = debounce
        self.max_delay = max_delay
        self.on_report = on_report or (lambda report: None)
        self.on_error = on_error or (lambda message: None)
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._dirty: dict[str, tuple[float, float]] = {}  # collection -> (first event, last event)
        self._roots: dict[str, _Root] = {}
        self._collections_stamp: tuple[int, int] | None = None
        self._rearm: set[str] = (
            set()
        )  # roots whose watch died (folder deleted; a new one may reuse its inode)
        self._observer: Any = None
        self.passes = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def install_signal_handlers(self) -> None:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        from cmem_cli.core import stopping

        stopping.stop_waiting_when(self._stop.is_set)  # a lock wait gives up on the signal, not 15 s later

    def run(self) -> None:
        from watchdog.observers import Observer

        from cmem_index.loading import load_embedder

        self._embedder, self._note = load_embedder(self.config)
        self._model_remembered = self._embedder is None
        self._observer = Observer()
        self._observer.start()
        try:
            self._supervise(initial=True)
            self._pass(None)  # catch up with whatever changed while nobody was watching
            next_check = time.monotonic() + SUPERVISE_SECONDS
            while not self._stop.is_set():
                due = self._due()
                if due:
                    self._pass(due)
                    continue
                now = time.monotonic()
                if now >= next_check:
                    self._supervise()
                    next_check = now + SUPERVISE_SECONDS
                    continue
                with self._cond:
                    if not self._stop.is_set():
                        self._cond.wait(timeout=min(self._wait_time(), next_check - now))
        except Stopped:
            pass
        finally:
            self._observer.stop()
            self._observer.join(timeout=5)

    # -- events --------------------------------------------------------------------------------------
    def mark(self, name: str) -> None:
        """Record that collection ``name`` changed (called from the observer thread)."""
        now = time.monotonic()
        with self._cond:
            first, _ = self._dirty.get(name, (now, now))
            self._dirty[name] = (first, now)
            self._cond.notify_all()

    def rearm(self, name: str) -> None:
        """The root of ``name`` itself was deleted or moved: its watch is dead (called from the observer thread)."""
        with self._cond:
            self._rearm.add(name)
        self.mark(name)

    def _due(self) -> list[str]:
        now = time.monotonic()
        with self._cond:
            ready = [
                name
                for name, (first, last) in self._dirty.items()
                if now - last >= self.debounce or now - first >= self.max_delay
            ]
            for name in ready:
                del self._dirty[name]
        return ready

    def _wait_time(self) -> float:
        now = time.monotonic()
        with self._cond:
            if not self._dirty:
                return SUPERVISE_SECONDS
            return max(
                0.01,
                min(
                    min(last + self.debounce, first + self.max_delay) - now
                    for first, last in self._dirty.values()
                ),
            )

    # -- watches -------------------------------------------------------------------------------------
    def _supervise(self, *, initial: bool = False) -> None:
        """(Re)arm watches: new or removed collections, and roots that appeared, vanished or were replaced."""
        stamp = _stamp(collections_file(self.config))
        collections = {c.name: c for c in load_collections(self.config)}
        if stamp != self._collections_stamp:
            self._collections_stamp = stamp
            for name in list(self._roots):
                if name not in collections or collections[name] != self._roots[name].collection:
                    self._unwatch(name)
                    self.mark(name)
        with self._cond:
            dead, self._rearm = self._rearm, set()
        for name, collection in collections.items():
            identity = _identity(collection.root)
            current = self._roots.get(name)
            if current is not None and current.identity == identity and name not in dead:
                continue
            if current is not None:
                self._unwatch(name)
            self._roots[name] = _Root(collection, identity)
            if identity is not None:
                self._watch(name)
            if not initial:
                self.mark(name)

    def _watch(self, name: str) -> None:
        root = self._roots[name]
        handler = _Handler(self, root.collection)
        try:
            root.watch = self._observer.schedule(handler, str(root.collection.root), recursive=True)
        except OSError as exc:  # vanished between the check and the schedule: the supervisor retries
            root.identity = None
            self.on_error(f"cannot watch {root.collection.root}: {exc}")

    def _unwatch(self, name: str) -> None:
        root = self._roots.pop(name, None)
        if root is not None and root.watch is not None:
            # The kernel may already have dropped the watch of a deleted folder.
            with contextlib.suppress(KeyError, OSError, ValueError):
                self._observer.unschedule(root.watch)

    # -- indexing ------------------------------------------------------------------------------------
    def note_export_paths(self, paths: list[str], *, whole_tree: bool = False) -> None:
        """Remember export-tree files an event named (called from the observer thread)."""
        with self._cond:
            self._export_paths.update(Path(p) for p in paths)
            self._export_whole_tree = self._export_whole_tree or whole_tree

    def _adopt(self, names: list[str] | None) -> None:
        if self.on_export_change is None or (names is not None and MEMORIES not in names):
            return
        with self._cond:
            paths, self._export_paths = self._export_paths, set()
            whole_tree, self._export_whole_tree = self._export_whole_tree, False
        if names is not None and not paths and not whole_tree:
            return
        try:
            self.on_export_change(None if names is None or whole_tree else sorted(paths))
        except Exception as exc:  # noqa: BLE001 - a watcher must survive a bad file or a busy database
            if self._stop.is_set():
                raise Stopped from None  # a lock wait given up on SIGTERM: nothing was written
            from cmem_cli.core.errors import CmemError

            message = exc.message if isinstance(exc, CmemError) else f"{type(exc).__name__}: {exc}"
            self.on_error(f"adopting edits failed: {message}")

    def _pass(self, names: list[str] | None) -> None:
        self._adopt(names)
        collections = load_collections(self.config)
        selected = collections
        prune = True
        if names is not None and set(names) <= {c.name for c in collections}:
            # Only these changed; a removed collection instead needs the full pass that prunes it.
            selected = [c for c in collections if c.name in set(names)]
            prune = False

        def progress(phase: str, done: int, total: int) -> None:
            if self._stop.is_set():
                raise Stopped

        try:
            with writer_lock(self.config.index_path, timeout=None):
                store = IndexStore.open(self.config.index_path)
                try:
                    indexer = Indexer(
                        store,
                        selected,
                        self._embedder,
                        note=self._note,
                        progress=progress,
                        trust_folders=False,
                    )
                    report = indexer.run(prune_other_collections=prune)
                finally:
                    store.close()
        except Stopped:
            raise
        except Exception as exc:  # noqa: BLE001 - a watcher must survive a bad file or a busy database
            if self._stop.is_set():
                raise Stopped from None  # a lock wait given up on SIGTERM: nothing was written
            from cmem_cli.core.errors import CmemError

            message = exc.message if isinstance(exc, CmemError) else f"{type(exc).__name__}: {exc}"
            self.on_error(f"index pass failed: {message}")
            return
        self.passes += 1
        if not self._model_remembered:
            self._remember_model()
        self.on_report(report)

    def _remember_model(self) -> None:
        """Note in the index which model file made its vectors, as `cmem index` does: without it `cmem
        status` calls the vectors a watcher made stale, and the next `cmem index` loads the model to learn
        what it could have read."""
        from cmem_index.loading import model_file_identity
        from cmem_index.refresh import remember_model

        embedder = self._embedder
        if embedder is None:
            return
        remember_model(
            self.config,
            {
                "file": model_file_identity(Path(embedder.path)),
                "fingerprint": embedder.fingerprint,
                "dim": embedder.dim,
                "max_tokens": embedder.max_tokens,
            },
        )
        self._model_remembered = True


_CHANGES = frozenset({"created", "modified", "deleted", "moved", "closed"})


class _Handler:
    """watchdog event handler: marks the collection dirty for events that can matter."""

    def __init__(self, watcher: Watcher, collection: Collection):
        self.watcher = watcher
        self.collection = collection
        self.root = os.fspath(collection.root)
        self.matches = compile_mask(collection.mask)

    def dispatch(self, event: Any) -> None:
        if event.event_type not in _CHANGES or (event.is_directory and event.event_type == "modified"):
            return  # opens and reads (ours included) change nothing; a folder's mtime is not content
        if event.event_type in ("deleted", "moved") and os.fsdecode(event.src_path) == self.root:
            self.watcher.rearm(self.collection.name)
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        relevant = [os.fsdecode(p) for p in paths if p and self._relevant(os.fsdecode(p), event.is_directory)]
        if relevant:
            if self.collection.name == MEMORIES:
                # a folder moved or deleted names no files: adopt the whole tree then
                self.watcher.note_export_paths(relevant, whole_tree=event.is_directory)
            self.watcher.mark(self.collection.name)

    def _relevant(self, path: str, is_directory: bool) -> bool:
        relative = os.path.relpath(path, self.root)
        if relative == "." or relative.startswith(".."):
            return relative == "."
        parts = relative.split(os.sep)
        if any(is_ignored_name(part) for part in parts):
            return False
        return is_directory or bool(self.matches("/".join(parts)))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    import stat as stat_module

    return (st.st_dev, st.st_ino) if stat_module.S_ISDIR(st.st_mode) else None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
