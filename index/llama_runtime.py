"""A thin, quiet layer over llama-cpp-python's low-level API, shared by the embedder and the reranker.

The high-level ``llama_cpp.Llama`` runs one multi-threaded context and reads rank scores as if they
were n_embd wide, so cmem drives the C API directly: load a model, tokenize, and evaluate batches of
sequences on several contexts at once with per-sequence pooled outputs. llama.cpp's own log chatter is captured rather than
printed; its last error lines go into the one-line ModelError instead.

``llama_cpp`` is imported on first use only: ``cmem add`` must never pay for it.
"""

from __future__ import annotations

import collections
import ctypes
import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

POOLING_UNSPECIFIED, POOLING_NONE, POOLING_MEAN, POOLING_CLS, POOLING_LAST, POOLING_RANK = -1, 0, 1, 2, 3, 4
# llama.cpp's LLAMA_MAX_SEQ: sequences one batch may hold.
MAX_SEQ = 256
# GGUF metadata cmem's importer writes and its embedder reads: sentence-transformers' truncation length,
# which llama.cpp has no key for.
KEY_MAX_SEQ_LENGTH = "cmem.max_seq_length"

_lock = threading.Lock()
_llama: Any = None
_recent_errors: collections.deque[str] = collections.deque(maxlen=4)
_log_callback: Any = None  # keep the ctypes callback alive for the life of the process


def llama() -> Any:
    """Import llama_cpp once, initialise the backend and route its logging into ``_recent_errors``."""
    global _llama, _log_callback
    with _lock:
        if _llama is None:
            try:
                llama_cpp = _import_c_api()
            except ImportError as exc:  # pragma: no cover - a broken install
                raise ModelError(f"llama-cpp-python is not usable: {exc}") from None

            fields = {name for name, _ in llama_cpp.llama_context_params._fields_}
            needed = {"flash_attn_type", "kv_unified", "n_seq_max"}
            if not needed <= fields or not hasattr(llama_cpp, "llama_memory_clear"):
                raise ModelError(f"llama-cpp-python {_version()} is too old for cmem; install >= 0.3.19")

            def _keep_errors(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
                if level == 3:  # GGML_LOG_LEVEL_ERROR
                    line = text.decode("utf-8", "replace").strip()
                    if line:
                        _recent_errors.append(line)

            _quiet = llama_cpp.llama_log_callback(_keep_errors)  # a ctypes callback, kept alive below
            _log_callback = _quiet
            llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _llama = llama_cpp
    return _llama


def _import_c_api() -> Any:
    """llama-cpp-python's ctypes bindings (``llama_cpp.llama_cpp``) without its package ``__init__``.

    The package imports its high-level ``Llama`` class, chat formats (jinja2), a disk cache and numpy: about
    0.1 s that a search spends before embedding one short query, for code cmem never calls. The bindings
    module needs none of it. Its parent package is stood in for while it loads and removed afterwards, so a
    later ``import llama_cpp`` (a user's own code, a benchmark) runs the real ``__init__``, which finds the
    bindings already loaded and shares the same shared library.
    """
    import sys

    loaded = sys.modules.get("llama_cpp.llama_cpp")
    if loaded is not None:
        return loaded
    if "llama_cpp" in sys.modules:  # the real package is already imported: nothing to save
        import llama_cpp.llama_cpp as bindings

        return bindings
    import importlib.util
    import types

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'llama_cpp'")
    stand_in = types.ModuleType("llama_cpp")
    stand_in.__path__ = list(spec.submodule_search_locations)
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    sys.modules["llama_cpp"] = stand_in
    try:
        import llama_cpp.llama_cpp as bindings
    finally:
        if sys.modules.get("llama_cpp") is stand_in:
            del sys.modules["llama_cpp"]
    return bindings


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:  # pragma: no cover - a source checkout on sys.path
        return "?"


def last_error(default: str) -> str:
    return _recent_errors[-1] if _recent_errors else default


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class LlamaModel:
    """A loaded GGUF model with its vocab, metadata helpers and a tokenizer."""

    def __init__(self, path: Path):
        lib = llama()
        self.lib = lib
        self.path = path
        params = lib.llama_model_default_params()
        params.n_gpu_layers = 0
        _recent_errors.clear()
        model = lib.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise ModelError(f"cannot load model {path}: {last_error('llama.cpp could not read it')}")
        self.model = model
        self.vocab = lib.llama_model_get_vocab(model)
        self._finalizer = weakref.finalize(self, lib.llama_model_free, model)
        self.arch = self.meta("general.architecture") or ""
        self.name = self.meta("general.name") or path.stem
        self.n_ctx_train = int(lib.llama_model_n_ctx_train(model))
        self.n_embd = int(lib.llama_model_n_embd(model))
        n_embd_out = getattr(lib, "llama_model_n_embd_out", None)
        self.n_embd_out = int(n_embd_out(model)) if n_embd_out else self.n_embd
        self._special = self._special_wrapping()

    def meta(self, key: str) -> str | None:
        size = 256
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self.lib.llama_model_meta_val_str(self.model, key.encode(), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode("utf-8", "replace")
            size = n + 1

    def chat_template(self, name: str) -> str | None:
        value = self.lib.llama_model_chat_template(self.model, name.encode())
        return value.decode("utf-8", "replace") if value else None

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """The model's own tokenization; user text never turns into control tokens unless asked."""
        data = text.encode("utf-8", "replace")
        capacity = len(data) + 8
        buf = (self.lib.llama_token * capacity)()
        n = self.lib.llama_tokenize(self.vocab, data, len(data), buf, capacity, add_special, parse_special)
        if n < 0:
            capacity = -n
            buf = (self.lib.llama_token * capacity)()
            n = self.lib.llama_tokenize(
                self.vocab, data, len(data), buf, capacity, add_special, parse_special
            )
        if n < 0:
            raise ModelError(f"cannot tokenize text with {self.path.name}")
        return list(buf[:n])

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text for tokens (used to cut a text at a token boundary)."""
        if not tokens:
            return ""
        arr = (self.lib.llama_token * len(tokens))(*tokens)
        size = len(tokens) * 8 + 16
        for _ in range(2):
            buf = ctypes.create_string_buffer(size)
            n = self.lib.llama_detokenize(self.vocab, arr, len(tokens), buf, size, False, False)
            if n >= 0:
                return buf.raw[:n].decode("utf-8", "replace")
            size = -n + 1
        raise ModelError(f"cannot detokenize text with {self.path.name}")

    def _special_wrapping(self) -> tuple[list[int], list[int]]:
        """The tokens llama.cpp adds around a text (e.g. [CLS] ... [SEP]) when add_special is true."""
        plain = self.tokenize("a")
        full = self.tokenize("a", add_special=True)
        for i in range(len(full) - len(plain) + 1):
            if full[i : i + len(plain)] == plain:
                return full[:i], full[i + len(plain) :]
        return full[:1] if len(full) > len(plain) else [], []

    @property
    def n_special(self) -> int:
        prefix, suffix = self._special
        return len(prefix) + len(suffix)

    def wrap(self, body: Sequence[int], max_tokens: int) -> list[int]:
        """Add the special tokens around ``body``, cutting the body so the whole fits ``max_tokens``."""
        prefix, suffix = self._special
        room = max(1, max_tokens - len(prefix) - len(suffix))
        tokens = [*prefix, *body[:room], *suffix]
        # an empty text on a model that adds no special tokens: llama.cpp cannot pool zero tokens
        return tokens or self.tokenize(" ")[:1] or [max(0, int(self.lib.llama_vocab_eos(self.vocab)))]


class LlamaContext:
    """A context for pooled outputs (embeddings or rank scores) over batches of whole sequences."""

    def __init__(
        self,
        model: LlamaModel,
        *,
        batch_tokens: int,
        max_seqs: int,
        n_threads: int | None,
        pooling: int = POOLING_UNSPECIFIED,
        flash_attn: bool = True,
    ):
        lib = model.lib
        self.lib = lib
        self.model = model
        self.batch_tokens = batch_tokens
        # llama.cpp reserves one output row per sequence within n_batch rows and aborts the process if
        # n_seq_max exceeds n_batch, so never ask for more sequences than tokens.
        self.max_seqs = max(1, min(max_seqs, MAX_SEQ, batch_tokens))
        threads = n_threads or default_threads()
        params = lib.llama_context_default_params()
        params.n_ctx = batch_tokens
        params.n_batch = batch_tokens
        # an encoder evaluates the whole batch in one micro-batch: llama.cpp aborts the process otherwise
        params.n_ubatch = batch_tokens
        params.n_seq_max = self.max_seqs
        params.n_threads = threads
        params.n_threads_batch = threads
        params.embeddings = True
        params.pooling_type = pooling
        params.flash_attn_type = 1 if flash_attn else 0
        params.kv_unified = True  # decoder embedders: every sequence may use the whole cache
        params.no_perf = True
        _recent_errors.clear()
        ctx = lib.llama_init_from_model(model.model, params)
        if not ctx:
            raise ModelError(f"cannot create a context for {model.path}: {last_error('out of memory?')}")
        self.ctx = ctx
        self.pooling = int(lib.llama_pooling_type(ctx))
        self._finalizer = weakref.finalize(self, lib.llama_free, ctx)
        self._batch = lib.llama_batch_init(batch_tokens, 0, 1)
        self._batch_finalizer = weakref.finalize(self, lib.llama_batch_free, self._batch)
        self._memory = lib.llama_get_memory(ctx)

    def run_one(self, tokens: Sequence[int], width: int) -> list[float]:
        """The pooled output of one sequence, without numpy: a search embeds one short query, and importing
        numpy would cost it more than the model's forward pass."""
        n = len(tokens)
        if n <= 0 or n > self.batch_tokens:
            raise ModelError(
                f"internal: a sequence of {n} tokens does not fit a batch of {self.batch_tokens}"
            )
        self._evaluate([tokens])
        return list(self._pooled(0, width)[:])

    def run_few(self, sequences: Sequence[Sequence[int]], width: int) -> list[list[float]]:
        """:meth:`run_one` for a few sequences in one batch (one forward pass costs less than two), still
        without numpy; one at a time when they do not fit a batch."""
        total = sum(len(tokens) for tokens in sequences)
        if len(sequences) < 2 or total > self.batch_tokens or len(sequences) > self.max_seqs:
            return [self.run_one(tokens, width) for tokens in sequences]
        self._evaluate(sequences)
        return [self._pooled(seq, width)[:] for seq in range(len(sequences))]

    def _evaluate(self, sequences: Sequence[Sequence[int]]) -> None:
        """Fill the batch with these sequences (sequence i as seq id i) in plain Python, and decode it."""
        batch = self._batch
        at = 0
        for seq, tokens in enumerate(sequences):
            for i, token in enumerate(tokens):
                batch.token[at] = token
                batch.pos[at] = i
                batch.n_seq_id[at] = 1
                batch.seq_id[at][0] = seq
                batch.logits[at] = 1
                at += 1
        batch.n_tokens = at
        self._decode(batch)

    def _decode(self, batch: Any) -> None:
        if self._memory:
            self.lib.llama_memory_clear(self._memory, True)
        _recent_errors.clear()
        rc = self.lib.llama_decode(self.ctx, batch)
        if rc != 0:
            raise ModelError(f"llama.cpp failed to evaluate a batch (code {rc}): {last_error('no details')}")

    def _pooled(self, seq: int, width: int) -> Any:
        ptr = self.lib.llama_get_embeddings_seq(self.ctx, seq)
        if not ptr:
            raise ModelError(f"{self.model.path.name} returned no pooled output; is it an embedding model?")
        return (ctypes.c_float * width).from_address(ctypes.addressof(ptr.contents))

    def run_group(self, sequences: Sequence[Sequence[int]], group: list[int], out: np.ndarray) -> None:
        """Evaluate the sequences ``group`` (indices into ``sequences``) as one batch into ``out`` rows."""
        import numpy as np

        batch = self._batch
        total = sum(len(sequences[i]) for i in group)
        tokens = np.ctypeslib.as_array(batch.token, shape=(self.batch_tokens,))
        pos = np.ctypeslib.as_array(batch.pos, shape=(self.batch_tokens,))
        n_seq = np.ctypeslib.as_array(batch.n_seq_id, shape=(self.batch_tokens,))
        logits = np.ctypeslib.as_array(batch.logits, shape=(self.batch_tokens,))
        seq_ids = batch.seq_id
        at = 0
        for seq, index in enumerate(group):
            ids = sequences[index]
            n = len(ids)
            tokens[at : at + n] = ids
            pos[at : at + n] = np.arange(n, dtype=np.int32)
            for i in range(at, at + n):
                seq_ids[i][0] = seq
            at += n
        n_seq[:total] = 1
        logits[:total] = 1
        batch.n_tokens = total
        self._decode(batch)
        width = out.shape[1]
        for seq, index in enumerate(group):
            out[index] = np.frombuffer(self._pooled(seq, width), dtype=np.float32)


def pack(lengths: Sequence[int], batch_tokens: int, max_seqs: int) -> list[list[int]]:
    """Group sequence indices, longest first, into batches of <= batch_tokens tokens and <= max_seqs."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
    groups: list[list[int]] = []
    group: list[int] = []
    used = 0
    for index in order:
        n = lengths[index]
        if n <= 0 or n > batch_tokens:
            raise ModelError(f"internal: a sequence of {n} tokens does not fit a batch of {batch_tokens}")
        if group and (used + n > batch_tokens or len(group) == max_seqs):
            groups.append(group)
            group, used = [], 0
        group.append(index)
        used += n
    if group:
        groups.append(group)
    return groups


class ContextPool:
    """Several single-purpose contexts over one model, evaluating different batches at the same time.

    On a small CPU, data parallelism (one thread per context, batches handed out from a shared queue)
    beats splitting every matrix product across threads: there is no barrier after each operation, so
    it also degrades gracefully when other processes compete for the cores. ctypes releases the GIL
    during ``llama_decode``, so plain Python threads run the contexts in parallel.
    """

    def __init__(
        self,
        model: LlamaModel,
        *,
        workers: int,
        threads_per_worker: int,
        batch_tokens: int,
        max_seqs: int,
        pooling: int = POOLING_UNSPECIFIED,
        flash_attn: bool = True,
    ):
        self.batch_tokens = batch_tokens
        self.max_seqs = max(1, min(max_seqs, MAX_SEQ, batch_tokens))
        self.model = model
        self.workers = max(1, workers)
        self._context_params: dict[str, Any] = {
            "batch_tokens": batch_tokens,
            "max_seqs": self.max_seqs,
            "n_threads": threads_per_worker,
            "pooling": pooling,
            "flash_attn": flash_attn,
        }
        # the others when a batch needs them: a search embeds one query (a context costs ~13 ms to make)
        self.contexts = [LlamaContext(model, **self._context_params)]
        self.pooling = self.contexts[0].pooling

    def _all_contexts(self) -> list[LlamaContext]:
        while len(self.contexts) < self.workers:
            self.contexts.append(LlamaContext(self.model, **self._context_params))
        return self.contexts

    def run_few(self, sequences: Sequence[Sequence[int]], width: int) -> list[list[float]]:
        """A few sequences' pooled outputs as plain floats, in one batch when they fit (no numpy import)."""
        return self.contexts[0].run_few(sequences, width)

    def run(self, sequences: Sequence[Sequence[int]], width: int) -> np.ndarray:
        """Pooled outputs (``width`` floats each) for token sequences, in input order."""
        import numpy as np

        out = np.zeros((len(sequences), width), dtype=np.float32)
        groups = pack([len(s) for s in sequences], self.batch_tokens, self.max_seqs)
        if self.workers == 1 or len(groups) == 1:
            for group in groups:
                self.contexts[0].run_group(sequences, group, out)
            return out
        from concurrent.futures import ThreadPoolExecutor

        pending = iter(groups)
        lock = threading.Lock()

        def work(context: LlamaContext) -> None:
            while True:
                with lock:
                    group = next(pending, None)
                if group is None:
                    return
                context.run_group(sequences, group, out)

        used = self._all_contexts()[: len(groups)]
        with ThreadPoolExecutor(max_workers=len(used), thread_name_prefix="cmem-llama") as executor:
            for future in [executor.submit(work, context) for context in used]:
                future.result()
        return out


def sample_digest(path: Path) -> str:
    """A cheap content fingerprint: size plus the first, middle and last MiB, hashed."""
    import hashlib

    digest = hashlib.sha256()
    size = path.stat().st_size
    digest.update(str(size).encode())
    block = 1 << 20
    with open(path, "rb") as fh:
        for offset in sorted({0, max(0, size // 2 - block // 2), max(0, size - block)}):
            fh.seek(offset)
            digest.update(fh.read(block))
    return digest.hexdigest()


__all__ = [
    "KEY_MAX_SEQ_LENGTH",
    "MAX_SEQ",
    "POOLING_CLS",
    "POOLING_LAST",
    "POOLING_MEAN",
    "POOLING_NONE",
    "POOLING_RANK",
    "POOLING_UNSPECIFIED",
    "ContextPool",
    "LlamaContext",
    "LlamaModel",
    "default_threads",
    "llama",
    "pack",
    "sample_digest",
]
