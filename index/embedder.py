"""Embeddings from a local GGUF model through llama.cpp, with each model family's prompt format.

Query and document embeddings differ by family: embeddinggemma wants ``task: search result | query: ...``
and ``title: ... | text: ...``, Qwen3-Embedding an instruction before queries, nomic-embed its
``search_query:``/``search_document:`` prefixes, and plain BERT sentence-transformers nothing at all.
The family is read from the GGUF metadata. Vectors are L2-normalised float32.

Throughput (bench/embed_throughput.py, docs/models.md): flash attention, one batch per long sequence
(short ones packed together), and one single-threaded llama.cpp context per core embedding different
batches in parallel, which beats spreading each matrix product over the cores.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cmem_cli.core.errors import ModelError
from cmem_index.llama_runtime import (
    KEY_MAX_SEQ_LENGTH,
    POOLING_LAST,
    POOLING_NONE,
    POOLING_RANK,
    ContextPool,
    LlamaModel,
    default_threads,
    sample_digest,
)

if TYPE_CHECKING:
    import numpy as np

# Bump when a prompt format or the truncation rule changes: cached vectors must not be mixed.
PROMPT_FORMAT_VERSION = 1
# Tokens per llama.cpp batch: one long sequence, or several short ones packed together. Bigger batches
# cost more than they save (llama.cpp masks attention across the whole batch), see docs/models.md.
MIN_BATCH_TOKENS = 256
DEFAULT_MAX_SEQS = 64
# Parallel contexts at most; more cores become more threads per context.
MAX_WORKERS = 4
# Longest sequence cmem feeds any model, whatever its trained context: chunks are ~900 tokens.
MAX_TOKENS_CAP = 2048

QWEN3_TASK = "Given a web search query, retrieve relevant passages that answer the query"


class PromptFormat(NamedTuple):
    """How one model family wants queries and documents written. Its repr is part of the fingerprint."""

    family: str
    query: str = "{query}"
    document: str = "{text}"
    document_with_title: str = "{title}\n{text}"
    title_default: str | None = None

    def format_query(self, query: str) -> str:
        return self.query.format(query=query)

    def format_document(self, title: str | None, text: str) -> str:
        title = (title or "").strip() or self.title_default
        if title:
            return self.document_with_title.format(title=title, text=text)
        return self.document.format(text=text)


FORMATS = {
    "embeddinggemma": PromptFormat(
        family="embeddinggemma",
        query="task: search result | query: {query}",
        document="title: none | text: {text}",
        document_with_title="title: {title} | text: {text}",
    ),
    "qwen3-embedding": PromptFormat(
        family="qwen3-embedding", query="Instruct: " + QWEN3_TASK + "\nQuery:{query}"
    ),
    "nomic": PromptFormat(
        family="nomic",
        query="search_query: {query}",
        document="search_document: {text}",
        document_with_title="search_document: {title}\n{text}",
    ),
    "plain": PromptFormat(family="plain"),
}


def detect_family(arch: str, name: str, pooling: int) -> str:
    """The prompt family from GGUF metadata (general.architecture and general.name)."""
    arch, lowered = arch.lower(), name.lower()
    if arch == "gemma-embedding" or "embeddinggemma" in lowered or "embedding-gemma" in lowered:
        return "embeddinggemma"
    if arch.startswith("qwen") and ("embed" in lowered or pooling == POOLING_LAST):
        return "qwen3-embedding"
    if arch.startswith("nomic-bert") or "nomic-embed" in lowered:
        return "nomic"
    return "plain"


class Embedder:
    """One loaded embedding model, shared by the threads of a process (models are loaded once per process,
    :mod:`cmem_index.loading`): under `cmem watch` the indexer and the team thread both embed. llama.cpp's
    context is not thread-safe (two threads in it abort the process), so every use of the model holds
    ``lock``."""

    def __init__(self, model: LlamaModel, context: ContextPool, prompt: PromptFormat, max_tokens: int):
        import threading

        self.lock = threading.RLock()
        self._model = model
        self._context = context
        self.prompt = prompt
        self.path = model.path
        self.name = model.name
        self.family = prompt.family
        self.dim = model.n_embd_out
        self.max_tokens = max_tokens
        identity = "|".join(
            [
                sample_digest(model.path),
                f"v{PROMPT_FORMAT_VERSION}",
                repr(prompt),
                str(max_tokens),
                str(context.pooling),
            ]
        )
        self.fingerprint = hashlib.sha256(identity.encode()).hexdigest()[:24]

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        n_threads: int | None = None,
        workers: int | None = None,
        batch_tokens: int | None = None,
        max_seqs: int = DEFAULT_MAX_SEQS,
        flash_attn: bool = True,
    ) -> Embedder:
        """Load ``path`` (a GGUF embedding model). Raises ModelError with a one-line reason.

        ``n_threads`` CPU threads in all (default: every core available), spread over ``workers``
        contexts that embed different batches in parallel (default: one per thread, at most
        MAX_WORKERS). The other knobs exist for bench/embed_throughput.py.
        """
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"embedding model {path} does not exist")
        model = LlamaModel(path)
        limit = model.n_ctx_train or MAX_TOKENS_CAP
        st_limit = model.meta(KEY_MAX_SEQ_LENGTH)
        if st_limit and st_limit.isdigit():
            limit = min(limit, int(st_limit))
        max_tokens = max(1, min(limit, MAX_TOKENS_CAP))
        tokens = max(batch_tokens or MIN_BATCH_TOKENS, max_tokens)
        threads = n_threads or default_threads()
        workers = max(1, min(workers or threads, MAX_WORKERS, threads))
        context = ContextPool(
            model,
            workers=workers,
            threads_per_worker=max(1, threads // workers),
            batch_tokens=tokens,
            max_seqs=max_seqs,
            flash_attn=flash_attn,
        )
        if context.pooling in (POOLING_NONE, POOLING_RANK):
            kind = "a reranker" if context.pooling == POOLING_RANK else "not pooled"
            raise ModelError(f"{path.name} is not an embedding model ({kind}); set CMEM_EMBED_MODEL to one")
        family = detect_family(model.arch, model.name, context.pooling)
        return cls(model, context, FORMATS[family], max_tokens)

    # -- tokens ---------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone with the model's tokenizer (no special tokens, no prompt)."""
        with self.lock:
            return len(self._model.tokenize(text))

    def text_budget(self, title: str | None = None) -> int:
        """How many text tokens fit one document embedding after special tokens and the prompt."""
        overhead = self.count_tokens(self.prompt.format_document(title, ""))
        return max(1, self.max_tokens - self._model.n_special - overhead)

    def _sequence(self, text: str) -> list[int]:
        with self.lock:
            return self._model.wrap(self._model.tokenize(text), self.max_tokens)

    # -- vectors --------------------------------------------------------------------------------

    def embed_documents(self, items: Sequence[tuple[str | None, str]]) -> np.ndarray:
        """(title, text) pairs -> float32 (n, dim), normalised; texts longer than max_tokens are cut."""
        import numpy as np

        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self.lock:
            sequences = [self._sequence(self.prompt.format_document(title, text)) for title, text in items]
            return _normalise(self._context.run(sequences, self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        """A query -> float32 (dim,), normalised, in the family's query format."""
        import numpy as np

        return np.array(self.query_vector(text), dtype=np.float32)

    def query_vector(self, text: str) -> list[float]:
        """:meth:`embed_query` as plain floats: the search path never imports numpy (0.1 s per process)."""
        return self.query_vectors([text])[0]

    def query_vectors(self, texts: Sequence[str]) -> list[list[float]]:
        """:meth:`query_vector` for a few texts, in one forward pass when they fit a batch."""
        with self.lock:
            sequences = [self._sequence(self.prompt.format_query(text)) for text in texts]
            vectors = self._context.run_few(sequences, self.dim)
        return [unit(vector) for vector in vectors]

    def document_vectors(self, items: Sequence[tuple[str | None, str]]) -> list[list[float]]:
        """:meth:`embed_documents` as plain floats, for the few documents a search embeds itself (the search
        path never imports numpy)."""
        sequences = [self._sequence(self.prompt.format_document(title, text)) for title, text in items]
        return [unit(vector) for vector in self._context.run_few(sequences, self.dim)]

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Raw texts with no prompt at all (benchmarks, fidelity checks)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self.lock:
            return _normalise(self._context.run([self._sequence(t) for t in texts], self.dim))


def unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to length 1 (pure Python; 384-1024 floats cost microseconds)."""
    if not all(math.isfinite(x) for x in vector):
        raise ModelError("the embedding model produced non-finite values")
    norm = max(math.sqrt(math.fsum(x * x for x in vector)), 1e-12)
    return [x / norm for x in vector]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(vectors)):
        raise ModelError("the embedding model produced non-finite values")
    normalised: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return normalised


__all__ = [
    "DEFAULT_MAX_SEQS",
    "FORMATS",
    "PROMPT_FORMAT_VERSION",
    "Embedder",
    "PromptFormat",
    "detect_family",
]
