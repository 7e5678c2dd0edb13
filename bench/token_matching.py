"""Token-level matching (MaxSim) as a third signal: measured offline on the lists the product recorded.

MiniLM gives a vector for every token when run without pooling. For each query token take its best cosine
to any token of a document and average over the query (ColBERT's MaxSim, zero-shot). For each query of a
``bench/retrieval.py --dump`` file, the vector list's first ``--depth`` hits are re-scored as
``cosine + w x (their cosines' spread) x MaxSim's z-score`` and the query is re-fused as the product fuses
(``bench/fusion_loso.py``'s replay, default constants). Reported per set, nDCG@10: the vector list's head
alone, with MaxSim mixed in, MaxSim alone, the default, and the default with MaxSim mixed in, for each w.
``--static`` takes each word piece's input embedding instead (no forward pass, nothing to store).

A document's tokens are taken from its title and narrative as the benchmark loaded them (not the exact text
the indexer embeds, which leaves out repeated titles and section headings). Slow: every document in any
query's head is run through the model once (CoSQA about 3 minutes, SciFact about 35 on two cores).
docs/retrieval.md ("A third signal, measured offline") has the figures.

    python bench/token_matching.py --model MODEL.gguf --dump /tmp/cand.json [--sets cosqa,madial]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_loso  # noqa: E402  (bench/fusion_loso.py: the product's fusion, replayed)
import retrieval  # noqa: E402  (bench/retrieval.py: the sets and nDCG)

from cmem_index.fusion import DEFAULT_PARAMS  # noqa: E402

WEIGHTS = (0.5, 1.0, 1.5)


class TokenVectors:
    """MiniLM's per-token vectors (unit length, without the [CLS] and [SEP] tokens), documents cached."""

    def __init__(self, model: str) -> None:
        import llama_cpp

        self.llm = llama_cpp.Llama(model, embedding=True, pooling_type=0, n_ctx=512, verbose=False)
        self.cache: dict[str, np.ndarray] = {}

    def of(self, text: str) -> np.ndarray:
        tokens = np.array(self.llm.embed(text, normalize=False, truncate=True), dtype=np.float32)
        tokens = tokens[1:-1] if len(tokens) > 2 else tokens
        return tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-9)

    def of_doc(self, key: str, record: dict[str, Any]) -> np.ndarray:
        if key not in self.cache:
            text = f"{record.get('title', '')}\n{record.get('narrative', '')}".strip()
            self.cache[key] = self.of(text).astype(np.float16)
        return self.cache[key].astype(np.float32)


class StaticTokenVectors(TokenVectors):
    """The model's input embedding of each word piece: no forward pass and nothing to store, no context."""

    def __init__(self, model: str) -> None:
        import gguf
        import llama_cpp

        table = next(t for t in gguf.GGUFReader(model).tensors if t.name == "token_embd.weight")
        pieces = np.array(table.data, dtype=np.float32).reshape(-1, int(table.shape[0]))
        self.table = pieces / np.maximum(np.linalg.norm(pieces, axis=1, keepdims=True), 1e-9)
        self.llm = llama_cpp.Llama(model, vocab_only=True, verbose=False)
        self.cache = {}

    def of(self, text: str) -> np.ndarray:
        ids = self.llm.tokenize(text.encode(), add_bos=False, special=False)[:510] or [0]
        return self.table[ids]


def zscores(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / (spread if spread > 0 else 1.0)


def with_maxsim(query: dict[str, Any], maxsim: np.ndarray, weight: float) -> dict[str, Any]:
    """The query with its vector list's head re-scored: cosine + weight x spread x MaxSim's z-score."""
    head = query["lists"]["vector"][: len(maxsim)]
    cosines = np.array([score for _, score in head])
    scores = cosines + weight * cosines.std() * zscores(maxsim)
    vector = [[key, float(s)] for (key, _), s in zip(head, scores, strict=True)]
    vector += [list(item) for item in query["lists"]["vector"][len(head) :]]
    return {**query, "lists": {**query["lists"], "vector": vector}}


def head_ndcg(query: dict[str, Any], scores: np.ndarray) -> float:
    keys = [key for key, _ in query["lists"]["vector"][: len(scores)]]
    return retrieval.ndcg([keys[i] for i in np.argsort(-scores, kind="stable")], query["relevant"])


def measure(name: str, entry: dict[str, Any], tokens: TokenVectors, depth: int) -> dict[str, float]:
    data = retrieval.SETS[name]("test")
    records = dict(data["docs"])
    texts = {qid: text for qid, text, _ in data["queries"]}
    queries = [q for q in fusion_loso.judged(entry) if q["qid"] in texts]
    rows: dict[str, list[float]] = {}
    for query in queries:
        head = query["lists"]["vector"][:depth]
        if not head:
            continue
        asked = tokens.of(texts[query["qid"]])
        maxsim = np.array(
            [(asked @ tokens.of_doc(key, records[key]).T).max(axis=1).mean() for key, _ in head]
        )
        cosines = np.array([score for _, score in head])
        rows.setdefault("vector head", []).append(head_ndcg(query, cosines))
        rows.setdefault("maxsim alone", []).append(head_ndcg(query, maxsim))
        rows.setdefault("default", []).append(
            retrieval.ndcg(fusion_loso.ranked(query, DEFAULT_PARAMS), query["relevant"])
        )
        for w in WEIGHTS:
            rows.setdefault(f"vector head + maxsim w={w}", []).append(
                head_ndcg(query, zscores(cosines) + w * zscores(maxsim))
            )
            fused = fusion_loso.ranked(with_maxsim(query, maxsim, w), DEFAULT_PARAMS)
            rows.setdefault(f"default + maxsim w={w}", []).append(retrieval.ndcg(fused, query["relevant"]))
    return {label: round(statistics.fmean(values), 4) for label, values in rows.items()}


def main() -> None:
    parser = fusion_loso.replay_parser(__doc__)
    parser.add_argument("--model", required=True, help="the MiniLM GGUF the dump was made with")
    parser.add_argument("--depth", type=int, default=30, help="how much of the vector list to re-score")
    parser.add_argument(
        "--static", action="store_true", help="the input embeddings of the word pieces instead"
    )
    args = parser.parse_args()
    dump, names = fusion_loso.read_dump(parser, args)
    tokens = StaticTokenVectors(args.model) if args.static else TokenVectors(args.model)
    results = {}
    for name in names:
        results[name] = measure(name, dump[name], tokens, args.depth)
        tokens.cache.clear()
        print(name, results[name], file=sys.stderr)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
