"""Find and load the configured models, or say in one line why there is none.

Nothing here downloads: a model that is not on disk means keyword-only operation and a hint
(`cmem models pull` / `cmem models import DIR`). Loaded models are kept per process, so the watcher and a
benchmark loop pay for loading once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config
from cmem_cli.core.errors import ModelError

if TYPE_CHECKING:
    from cmem_index.embedder import Embedder
    from cmem_index.reranker import Reranker

NO_MODEL_HINT = "run `cmem models pull` or `cmem models import DIR` for semantic search"

_embedders: dict[Path, Embedder] = {}
_rerankers: dict[Path, Reranker] = {}


def embed_model_path(config: Config) -> Path:
    """The local file of the configured embedding model; ModelError when disabled or missing."""
    if not config.embed_model:
        raise ModelError(f"no embedding model configured (embed model is 'none'); {NO_MODEL_HINT}")
    from cmem_index.model_specs import resolve

    return resolve(config.embed_model, config.models_dir, role="embed")


def load_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    """(embedder, None), or (None, why not) when no usable model is configured or on disk."""
    try:
        path = embed_model_path(config)
        if path not in _embedders:
            from cmem_index.embedder import Embedder

            _embedders[path] = Embedder.load(path)
        return _embedders[path], None
    except ModelError as exc:
        return None, exc.message


class LazyEmbedder:
    """An Embedder that loads its model only when text has to be tokenized or embedded.

    `cmem index` with nothing to do, or with only deletions, then never pays for loading the model: the
    fingerprint, dimension and token limit come from ``known`` (remembered in the index for this exact model
    file, by path, size and mtime). Anything else loads the model on first use.
    """

    def __init__(self, path: Path, known: dict[str, Any] | None = None):
        self.path = path
        self._known = known if known and known.get("file") == model_file_identity(path) else None
        self._model: Embedder | None = None

    @property
    def loaded(self) -> Embedder:
        if self._model is None:
            if self.path not in _embedders:
                from cmem_index.embedder import Embedder

                _embedders[self.path] = Embedder.load(self.path)
            self._model = _embedders[self.path]
        return self._model

    @property
    def fingerprint(self) -> str:
        return str(self._known["fingerprint"]) if self._known else self.loaded.fingerprint

    @property
    def dim(self) -> int:
        return int(self._known["dim"]) if self._known else self.loaded.dim

    @property
    def max_tokens(self) -> int:
        return int(self._known["max_tokens"]) if self._known else self.loaded.max_tokens

    def describe(self) -> dict[str, Any]:
        """What to remember about this model file so the next run need not load it."""
        return {
            "file": model_file_identity(self.path),
            "fingerprint": self.fingerprint,
            "dim": self.dim,
            "max_tokens": self.max_tokens,
        }

    def __getattr__(self, name: str) -> Any:
        # count_tokens, text_budget, embed_documents, embed_query, ...: these need the model.
        return getattr(self.loaded, name)


def model_file_identity(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{path}|{st.st_size}|{st.st_mtime_ns}"


def lazy_embedder(config: Config, known: dict[str, Any] | None) -> tuple[LazyEmbedder | None, str | None]:
    """Like :func:`load_embedder`, but the model loads only if the indexer needs it."""
    try:
        return LazyEmbedder(embed_model_path(config), known), None
    except ModelError as exc:
        return None, exc.message


def load_reranker(config: Config) -> tuple[Reranker | None, str | None]:
    """(reranker, None), or (None, why not); reranking is off unless a reranker is configured."""
    if not config.rerank_model:
        return None, "no reranker configured"
    try:
        from cmem_index.model_specs import resolve

        path = resolve(config.rerank_model, config.models_dir, role="rerank")
        if path not in _rerankers:
            from cmem_index.reranker import Reranker

            _rerankers[path] = Reranker.load(path)
        return _rerankers[path], None
    except ModelError as exc:
        return None, exc.message
