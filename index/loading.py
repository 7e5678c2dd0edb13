"""Find and load the configured models, or say in one line why there is none.

Nothing here downloads: a model that is not on disk means keyword-only operation and a hint
(`cmem models pull` / `cmem models import DIR`). Loaded models are kept per process, so the watcher and a
benchmark loop pay for loading once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cmem_cli.config import Config
from cmem_cli.errors import ModelError

if TYPE_CHECKING:
    from index.embedder import Embedder
    from index.reranker import Reranker

NO_MODEL_HINT = "run `cmem models pull` or `cmem models import DIR` for semantic search"

_embedders: dict[Path, Embedder] = {}
_rerankers: dict[Path, Reranker] = {}


def embed_model_path(config: Config) -> Path:
    """The local file of the configured embedding model; ModelError when disabled or missing."""
    if not config.embed_model:
        raise ModelError(f"no embedding model configured (embed model is 'none'); {NO_MODEL_HINT}")
    from index.model_specs import resolve

    return resolve(config.embed_model, config.models_dir, role="embed")


def load_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    """(embedder, None), or (None, why not) when no usable model is configured or on disk."""
    try:
        path = embed_model_path(config)
        if path not in _embedders:
            from index.embedder import Embedder

            _embedders[path] = Embedder.load(path)
        return _embedders[path], None
    except ModelError as exc:
        return None, exc.message


def load_reranker(config: Config) -> tuple[Reranker | None, str | None]:
    """(reranker, None), or (None, why not); reranking is off unless a reranker is configured."""
    if not config.rerank_model:
        return None, "no reranker configured"
    try:
        from index.model_specs import resolve

        path = resolve(config.rerank_model, config.models_dir, role="rerank")
        if path not in _rerankers:
            from index.reranker import Reranker

            _rerankers[path] = Reranker.load(path)
        return _rerankers[path], None
    except ModelError as exc:
        return None, exc.message
