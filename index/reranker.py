"""Cross-encoder reranking through llama.cpp's rank pooling (LLAMA_POOLING_TYPE_RANK).

This is how Qwen3-Reranker and bge-reranker GGUFs run in llama.cpp: the model reads a (query, document)
pair and its classification head yields one relevance value per pair. Pairs are formatted as llama.cpp's
server does: with the model's ``rerank`` chat template when the GGUF carries one (Qwen3-Reranker's
yes/no prompt; llama.cpp turns the yes/no logits into P(yes) with a softmax), otherwise as
``[BOS] query [EOS] [SEP] document [EOS]`` (BERT-style cross-encoders: ``[CLS] q [SEP] d [SEP]``),
whose single logit becomes a probability through a sigmoid. Scores are in 0..1.

Reranking is optional: nothing loads a reranker unless one is configured (CMEM_RERANK_MODEL / config).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from cmem_cli.core.errors import ModelError
from cmem_index.llama_runtime import POOLING_RANK, ContextPool, LlamaModel, default_threads

# Tokens per (query, document) pair at most: reranking cost grows with it on a CPU.
DEFAULT_MAX_TOKENS = 512
# Share of the pair a query may take before it is cut.
MAX_QUERY_SHARE = 0.25
# Architectures whose rank head llama.cpp already ends with a softmax (its output is a probability).
SOFTMAX_ARCHS = ("qwen3", "qwen3vl")


class Reranker:
    """One loaded reranker. Not thread-safe: use one per thread."""

    def __init__(self, model: LlamaModel, pool: ContextPool, max_tokens: int):
        self._model = model
        self._pool = pool
        self.path = model.path
        self.name = model.name
        self.max_tokens = max_tokens
        self.template = model.chat_template("rerank")
        lib = model.lib
        self.n_outputs = max(1, int(lib.llama_model_n_cls_out(model.model)))
        self._prefix, self._middle, self._tail = self._pair_wrapping()

    @classmethod
    def load(
        cls, path: Path, *, n_threads: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS
    ) -> Reranker:
        """Load a GGUF whose pooling type is rank; anything else is a one-line ModelError."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"reranker {path} does not exist")
        model = LlamaModel(path)
        limit = min(max(16, max_tokens), model.n_ctx_train or max_tokens)  # positions < n_ctx_train
        threads = n_threads or default_threads()
        workers = max(1, min(threads, 4))
        pool = ContextPool(
            model,
            workers=workers,
            threads_per_worker=max(1, threads // workers),
            batch_tokens=limit,
            max_seqs=64,
        )
        if pool.pooling != POOLING_RANK:
            raise ModelError(
                f"{path.name} is not a reranker (its GGUF does not declare rank pooling); "
                "set CMEM_RERANK_MODEL to a reranker GGUF such as Qwen3-Reranker or bge-reranker"
            )
        return cls(model, pool, limit)

    def _pair_wrapping(self) -> tuple[list[int], list[int], list[int]]:
        """llama.cpp's pair layout without a template: [BOS] query [EOS] [SEP] document [EOS]."""
        lib, vocab = self._model.lib, self._model.vocab
        eos = lib.llama_vocab_eos(vocab)
        if eos < 0:
            eos = lib.llama_vocab_sep(vocab)
        prefix = [lib.llama_vocab_bos(vocab)] if lib.llama_vocab_get_add_bos(vocab) else []
        tail = [eos] if lib.llama_vocab_get_add_eos(vocab) else []
        middle = [*tail, lib.llama_vocab_sep(vocab)] if lib.llama_vocab_get_add_sep(vocab) else [*tail]
        return prefix, middle, tail

    def pair_tokens(self, query: str, document: str) -> list[int]:
        """The exact tokens the model reads for one pair (query cut to a quarter, document to fit)."""
        query_budget = max(1, int(self.max_tokens * MAX_QUERY_SHARE))
        return self._pair(self._model.tokenize(query)[:query_budget], document)

    def _pair(self, query: list[int], document: str) -> list[int]:
        model = self._model
        if self.template is None:
            fixed = len(self._prefix) + len(query) + len(self._middle) + len(self._tail)
            doc = model.tokenize(document)[: max(1, self.max_tokens - fixed)]
            return [*self._prefix, *query, *self._middle, *doc, *self._tail][: self.max_tokens]
        query_text = model.detokenize(query)
        overhead = len(model.tokenize(self._fill(query_text, ""), parse_special=True))
        doc_tokens = model.tokenize(document)
        room = max(1, self.max_tokens - overhead)
        if len(doc_tokens) > room:
            document = model.detokenize(doc_tokens[:room])
        if _has_control_text(model, query_text) or _has_control_text(model, document):
            # user text must never act as template structure: tokenize the pieces separately
            return self._pair_by_pieces(query_text, document)
        # as llama.cpp's server does: the filled template tokenized in one piece
        return model.tokenize(self._fill(query_text, document), parse_special=True)[: self.max_tokens]

    def _fill(self, query: str, document: str) -> str:
        assert self.template is not None
        return self.template.replace("{query}", query).replace("{document}", document)

    def _pair_by_pieces(self, query: str, document: str) -> list[int]:
        assert self.template is not None
        model = self._model
        tokens: list[int] = []
        rest = self.template
        while rest:
            hits = [(rest.find(key), key) for key in ("{query}", "{document}") if key in rest]
            if not hits:
                tokens += model.tokenize(rest, parse_special=True)
                break
            at, key = min(hits)
            tokens += model.tokenize(rest[:at], parse_special=True)
            tokens += model.tokenize(query if key == "{query}" else document)
            rest = rest[at + len(key) :]
        return tokens[: self.max_tokens]

    def score(self, query: str, docs: Sequence[str]) -> list[float]:
        """Relevance of each document to ``query`` in 0..1, in the order given."""
        if not docs:
            return []
        query_budget = max(1, int(self.max_tokens * MAX_QUERY_SHARE))
        query_tokens = self._model.tokenize(query)[:query_budget]
        pairs = [self._pair(query_tokens, doc) for doc in docs]
        raw = self._pool.run(pairs, self.n_outputs)
        return [self._probability(row) for row in raw]

    def _probability(self, row: Sequence[float]) -> float:
        values = [float(v) for v in row]
        if not all(math.isfinite(v) for v in values):
            raise ModelError(f"{self.path.name} produced a non-finite score")
        if self._model.arch in SOFTMAX_ARCHS:
            return min(1.0, max(0.0, values[0]))  # already P(yes) from llama.cpp's softmax
        if len(values) == 1:
            return _sigmoid(values[0])
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        return exps[-1] / sum(exps)  # two-way classifier: the last label is "relevant"


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _has_control_text(model: LlamaModel, text: str) -> bool:
    """True when ``text`` contains the literal text of a control token (e.g. ``<|im_end|>``)."""
    return model.tokenize(text, parse_special=True) != model.tokenize(text)


__all__ = ["DEFAULT_MAX_TOKENS", "Reranker"]
