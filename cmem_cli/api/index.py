"""The search index of a home as the API shows it (:attr:`cmem_cli.api.Memory.index`): build and refresh,
status, collections and their documents, the models.

    with Memory() as memory:
        report = memory.index.build()                  # what `cmem index` does
        memory.index.add_collection("~/notes")         # `cmem collection add ~/notes`
        print(memory.index.status()["documents"])      # `cmem status --json`
        print(memory.index.models.path())              # `cmem models path`

Front ends stand on this face; none imports the index package (an import contract says so), opens its
database or takes its writer lock. Nothing is printed: what a front end would say comes back as values or
through the callbacks it passes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config

if TYPE_CHECKING:
    from cmem_cli.core.json_types import ModelFileJson, ModelJson
    from cmem_index.collections import Collection
    from cmem_index.importer import ImportResult
    from cmem_index.indexer import IndexReport, Progress
    from cmem_index.watcher import Watcher


class Index:
    """The index of one home (``memory.index``). Creating it costs nothing; each call opens what it needs."""

    def __init__(self, config: Config):
        self.config = config

    @property
    def models(self) -> Models:
        """The embedding model and reranker the index uses (``cmem models``)."""
        return Models(self.config)

    def status(self) -> dict[str, Any]:
        """What `cmem status --json` prints: documents, chunks, vectors, models, collections, last run."""
        from cmem_cli.services.upkeep.index_status import index_status

        return index_status(self.config)

    def build(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        on_wait: Callable[[], None] | None = None,
        on_keyword_only: Callable[[str], None] | None = None,
    ) -> IndexReport:
        """Update the index from the export tree and every collection (only what changed; ``full``
        rebuilds into a new file swapped in atomically). ``on_wait`` is called once if another process is
        updating it, ``on_keyword_only`` with the reason when no embedding model is usable. A model chosen
        by name that cannot be used is a :class:`~cmem_cli.core.errors.ModelError`."""
        from cmem_cli.services.upkeep.indexing import build

        return build(
            self.config, full=full, progress=progress, on_wait=on_wait, on_keyword_only=on_keyword_only
        )

    def refresh(self) -> bool:
        """Start a detached pass over what writes have noted, if any (returns at once; True when started)."""
        from cmem_cli.services.upkeep.indexing import request_refresh

        return request_refresh(self.config)

    def collections(self) -> list[Collection]:
        """``memories`` (cmem's own export tree) first, then the user's collections in the order added."""
        from cmem_cli.services.upkeep.indexing import collections

        return collections(self.config)

    def collection_roots(self) -> dict[str, Path]:
        """Each collection's folder by name, ``~`` expanded: a document's ``collection:path`` is a file there."""
        return {c.name: c.root.expanduser() for c in self.collections()}

    def add_collection(
        self, directory: str | Path, *, name: str | None = None, mask: str | None = None
    ) -> Collection:
        """Index a folder of markdown beside the memories (``mask`` a glob, default ``**/*.md``); the
        next :meth:`build` reads it."""
        from cmem_cli.services.upkeep.indexing import add_collection

        return add_collection(self.config, str(directory), name=name, mask=mask)

    def remove_collection(self, name: str) -> tuple[Collection, int | None]:
        """Stop indexing a collection and drop its documents from the index (its files stay). Returns it
        and the number of documents dropped, None when a running pass kept the index busy (the next pass
        drops them)."""
        from cmem_cli.services.upkeep.indexing import remove_collection

        return remove_collection(self.config, name)

    def drop_documents(self, collection: str, *, timeout: float | None = None) -> int:
        """Delete one collection's documents from the index (waiting up to ``timeout`` seconds for a
        running pass, forever when None); how many there were."""
        from cmem_cli.services.upkeep.indexing import drop_documents

        return drop_documents(self.config, collection, timeout=timeout)

    def watcher(
        self,
        *,
        debounce: float = 1.0,
        on_report: Callable[[IndexReport], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_export_change: Callable[[list[Path] | None], None] | None = None,
    ) -> tuple[Watcher, str | None]:
        """A watcher that keeps the index fresh as files change (``run()`` blocks until ``stop()``), and why
        the index is keyword-only (None when the embedding model loaded)."""
        from cmem_cli.services.upkeep.indexing import watcher

        return watcher(
            self.config,
            debounce=debounce,
            on_report=on_report or (lambda report: None),
            on_error=on_error or (lambda message: None),
            on_export_change=on_export_change or (lambda paths: None),
        )


class Models:
    """The model files of a home (``memory.index.models``): the configured embedder and reranker, the
    GGUF files in the models directory, download, import, paths. ``role`` is ``embed`` or ``rerank``."""

    def __init__(self, config: Config):
        self.config = config

    @property
    def directory(self) -> Path:
        return self.config.models_dir

    def configured(self) -> list[ModelJson]:
        """The embedder's and the reranker's spec, path, presence and size (`cmem models list --json`)."""
        from cmem_cli.services.upkeep.model_files import describe

        return [describe(self.config, "embed"), describe(self.config, "rerank")]

    def files(self) -> list[ModelFileJson]:
        """Every GGUF file in the models directory, with its size."""
        from cmem_cli.services.upkeep.model_files import files

        return files(self.config)

    def spec(self, role: str = "embed") -> str:
        """The configured model's spec; ModelError when none is configured."""
        from cmem_cli.services.upkeep.model_files import configured_spec

        return configured_spec(self.config, role)

    def local_path(self, spec: str) -> Path:
        """Where ``spec``'s file is, or will be once pulled."""
        from cmem_cli.services.upkeep.model_files import local_path

        return local_path(self.config, spec)

    def pull(
        self,
        spec: str | None = None,
        *,
        role: str = "embed",
        progress: Callable[[int, int | None], None] | None = None,
        sha256: str | None = None,
        timeout: float = 30.0,
    ) -> Path:
        """Download ``spec`` (default: the configured model of ``role``) unless it is already there; its path."""
        from cmem_cli.services.upkeep.model_files import pull

        return pull(self.config, spec or self.spec(role), progress=progress, sha256=sha256, timeout=timeout)

    def import_checkpoint(
        self,
        directory: str | Path,
        *,
        name: str | None = None,
        outtype: str = "auto",
        overwrite: bool = False,
    ) -> ImportResult:
        """Convert a local sentence-transformers checkpoint into a GGUF file in the models directory."""
        from cmem_cli.services.upkeep.model_files import import_checkpoint

        return import_checkpoint(
            self.config, Path(directory), name=name, outtype=outtype, overwrite=overwrite
        )

    def path(self, spec: str | None = None, *, role: str = "embed") -> Path:
        """The local file of ``spec`` (default: the configured model of ``role``); never downloads."""
        from cmem_cli.services.upkeep.model_files import resolve

        return resolve(self.config, spec or self.spec(role), role)

    def needs_embedder(self) -> bool:
        """True when no embedding model is usable and none is chosen in the environment (which wins over
        the config file, so choosing one there would change nothing)."""
        from cmem_cli.services.upkeep.model_files import needs_embedder

        return needs_embedder(self.config)

    def choose_embedder(self, file_name: str) -> Path:
        """Write ``[models] embed = "FILE_NAME"`` into the config file; the file written."""
        from cmem_cli.services.upkeep.model_files import choose_embedder

        return choose_embedder(file_name)

    def config_file(self) -> Path:
        """The config file a model choice goes in."""
        from cmem_cli.services.upkeep.model_files import config_file

        return config_file()
