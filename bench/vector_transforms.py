"""Cheap changes to the embedding space, measured offline on the lists the product recorded (not kept).

Neither needs a new model or anything stored beyond one vector or one matrix:

* ``centre``: each chunk vector and the query less ``alpha`` x the mean chunk vector of the memories searched
  (the query's scope), then cosine. Centring is the cheapest hubness reduction: a document near the
  collection's centre is a near neighbour of every query.
* ``adapter``: the query vector through a linear map, trained on the Python standard library's docstring ->
  function pairs (bench/retrieval.py's stdlib-code construction, its test questions left out; softmax over
  every stdlib function, pulled towards the identity). A fit for the kind "questions against code" that
  never sees CoSQA.
* ``title``: each chunk's cosine plus ``w`` x its memory's title's cosine (the title embedded alone, a
  function's name split into words as the indexer gives it). One more small vector per memory.

For each query of a ``bench/retrieval.py --dump`` file the whole vector list is computed again, brute force
over the home's chunk vectors (best chunk per memory, first 100, as ``cmem_index.retrieve.vector``), and the
query is re-fused as the product fuses (``bench/fusion_loso.py``'s replay, default constants). Per set,
nDCG@10 of vectors alone and of the default: ``plain`` (the lists computed here without any change, the
control) and each transform. docs/retrieval.md ("Two more for CoSQA") has the figures.

    python bench/vector_transforms.py --model MODEL.gguf --dump /tmp/cand.json --work /tmp/bench/homes \
        [--sets cosqa,stdlib-code] [--transform centre|adapter|title]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_loso  # noqa: E402  (bench/fusion_loso.py: the product's fusion, replayed)
import retrieval  # noqa: E402  (bench/retrieval.py: the sets and nDCG)

from cmem_index.fusion import DEFAULT_PARAMS  # noqa: E402

ALPHAS = (0.5, 1.0, 1.5, 2.0)  # how much of the mean vector ``centre`` takes away
PULLS = (0.1, 1.0)  # how hard ``adapter``'s training pulls the map towards the identity
TITLE_WEIGHTS = (0.25, 0.5, 1.0)  # how much the title's cosine adds to a chunk's
LIST_DEPTH = 100  # the product's vector list (cmem_index.search.CANDIDATES)


class Home:
    """A benchmark home's chunk vectors (unit length), each with its memory's corpus id and project."""

    def __init__(self, home: Path) -> None:
        from cmem_cli.core.config import load_config
        from cmem_index.store import IndexStore

        config = load_config(home)
        ids = json.loads((home / "bench-ids.json").read_text())["ids"]  # obs id -> corpus id
        corpus_of_key = retrieval.corpus_keys(config, ids)  # obs:<uid> -> corpus id
        self.store = IndexStore.open(config.index_path, readonly=True)
        rows = self.store.rows(
            "SELECT d.uid, d.project, v.embedding FROM chunk_vectors v "
            "JOIN chunks c ON c.id = v.rowid JOIN documents d ON d.id = c.doc_id ORDER BY v.rowid"
        )
        self.corpus = [corpus_of_key.get(f"obs:{uid}", "") for uid, _, _ in rows]
        self.project = np.array([project or "" for _, project, _ in rows])
        vectors = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        self.titles: np.ndarray | None = None  # each chunk's memory's title vector (title_vectors)

    def in_scope(self, filters: dict[str, Any] | None) -> np.ndarray:
        project = (filters or {}).get("project")
        return self.project == project if project else np.ones(len(self.corpus), dtype=bool)

    def ranked(self, scores: np.ndarray, scope: np.ndarray) -> list[list[Any]]:
        """Best chunk per memory, first LIST_DEPTH memories, as [corpus id, score] like the dump's lists."""
        out: list[list[Any]] = []
        seen: set[str] = set()
        for i in np.argsort(-np.where(scope, scores, -np.inf), kind="stable"):
            if not scope[i] or len(out) >= LIST_DEPTH:
                break
            if self.corpus[i] not in seen:
                seen.add(self.corpus[i])
                out.append([self.corpus[i], float(scores[i])])
        return out


def query_part_vectors(embedder: Any, home: Home, text: str, filters: dict[str, Any] | None) -> np.ndarray:
    """The unit vectors of the parts the product embeds for this query (names that split the scope left out)."""
    from cmem_index.retrieve import DocFilters
    from cmem_index.search import _embedded_query, query_parts

    embedded = _embedded_query(home.store, text, DocFilters.coerce(filters), [])
    return np.array(embedder.query_vectors(query_parts(embedded)), dtype=np.float32)


def centred_scores(parts: np.ndarray, home: Home, scope: np.ndarray, alpha: float) -> np.ndarray:
    """The mean over the query's parts of each chunk's cosine, both less alpha x the scope's mean vector."""
    mean = home.vectors[scope].mean(axis=0) * alpha
    chunks = home.vectors - mean
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    asked = parts - mean
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    return chunks @ asked.mean(axis=0)


def train_adapter(asked: np.ndarray, answers: np.ndarray, chunks: np.ndarray, pull: float) -> np.ndarray:
    """A linear map for query vectors: softmax over every chunk (temperature 0.05), Adam, 300 steps, plus
    ``pull`` x the squared distance from the identity."""
    dim = asked.shape[1]
    identity = np.eye(dim, dtype=np.float32)
    mapping, m, v = identity.copy(), np.zeros_like(identity), np.zeros_like(identity)
    tau = 0.05
    for step in range(1, 301):
        logits = (asked @ mapping.T) @ chunks.T / tau
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        probs[np.arange(len(asked)), answers] -= 1
        grad = (probs @ chunks).T @ asked / (len(asked) * tau) + pull * (mapping - identity)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        mapping -= 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return mapping


def stdlib_adapters(embedder: Any, work: Path) -> dict[str, np.ndarray]:
    """One adapter per pull, trained on every stdlib docstring -> function pair but stdlib-code's test
    questions, against the stdlib-code home's chunk vectors."""
    home = Home(work / "stdlib-code")
    home.store.close()  # only its vectors are needed
    held_out = {text for _, text, _ in retrieval.stdlib_code("test")["queries"]}
    every = retrieval.stdlib_code("test", max_docs=10**6, n_queries=10**6)
    row_of = {corpus: i for i, corpus in enumerate(home.corpus)}
    pairs = [
        (text, row_of[answer])
        for qid, text, _ in every["queries"]
        if text not in held_out
        for answer in every["qrels"][qid]
        if answer in row_of
    ]
    asked = np.array(embedder.query_vectors([text for text, _ in pairs]), dtype=np.float32)
    answers = np.array([row for _, row in pairs])
    print(f"adapter: {len(pairs)} stdlib pairs", file=sys.stderr)
    return {f"adapter pull={p}": train_adapter(asked, answers, home.vectors, p) for p in PULLS}


def title_vectors(embedder: Any, data: dict[str, Any], home: Home) -> np.ndarray:
    """Each chunk's row: its memory's title embedded alone (an identifier also as words, as the indexer
    gives it to the model)."""
    from cmem_index.codelike import identifier_words

    titles = {}
    for corpus, record in data["docs"]:
        title = record.get("title", "")
        words = identifier_words(title) if title else None
        titles[corpus] = f"{title} ({words})" if words else title
    keys = list(titles)
    vectors = np.concatenate(
        [
            embedder.embed_documents([(None, titles[k]) for k in keys[i : i + 256]])
            for i in range(0, len(keys), 256)
        ]
    )
    row = {key: i for i, key in enumerate(keys)}
    return np.stack([vectors[row[corpus]] for corpus in home.corpus])


Scorer = Callable[[Home, np.ndarray, np.ndarray], np.ndarray]  # (home, query parts, scope) -> chunk scores


def plain(home: Home, parts: np.ndarray, scope: np.ndarray) -> np.ndarray:
    """As search scores: the mean over the query's parts of each chunk's cosine."""
    return home.vectors @ parts.mean(axis=0)


def centred(alpha: float) -> Scorer:
    return lambda home, parts, scope: centred_scores(parts, home, scope, alpha)


def adapted(mapping: np.ndarray) -> Scorer:
    def score(home: Home, parts: np.ndarray, scope: np.ndarray) -> np.ndarray:
        mapped = parts @ mapping.T
        return plain(home, mapped / np.linalg.norm(mapped, axis=1, keepdims=True), scope)

    return score


def with_title(weight: float) -> Scorer:
    def score(home: Home, parts: np.ndarray, scope: np.ndarray) -> np.ndarray:
        assert home.titles is not None, "title_vectors first"
        return (plain(home, parts, scope) + weight * (home.titles @ parts.mean(axis=0))) / (1 + weight)

    return score


def measure(
    name: str, entry: dict[str, Any], home: Home, embedder: Any, scorers: dict[str, Scorer]
) -> dict[str, float]:
    data = retrieval.SETS[name]("test")
    asked = {qid: (text, filters) for qid, text, filters in data["queries"]}
    if any(label.startswith("title") for label in scorers):
        home.titles = title_vectors(embedder, data, home)
    rows: dict[str, list[float]] = {}
    for query in fusion_loso.judged(entry):
        if query["qid"] not in asked:
            continue
        text, filters = asked[query["qid"]]
        parts = query_part_vectors(embedder, home, text, filters)
        scope = home.in_scope(filters)
        for label, scorer in {"plain": plain, **scorers}.items():
            vector = home.ranked(scorer(home, parts, scope), scope)
            rows.setdefault(f"{label}: vectors", []).append(
                retrieval.ndcg([key for key, _ in vector], query["relevant"])
            )
            replayed = {**query, "lists": {**query["lists"], "vector": vector}}
            rows.setdefault(f"{label}: default", []).append(
                retrieval.ndcg(fusion_loso.ranked(replayed, DEFAULT_PARAMS), query["relevant"])
            )
    return {label: round(statistics.fmean(values), 4) for label, values in rows.items()}


def main() -> None:
    parser = fusion_loso.replay_parser(__doc__)
    parser.add_argument("--model", required=True, help="the MiniLM GGUF the homes were indexed with")
    parser.add_argument("--work", required=True, help="the homes bench/retrieval.py built (one per set)")
    parser.add_argument("--transform", choices=("centre", "adapter", "title"), help="default: all three")
    args = parser.parse_args()
    dump, names = fusion_loso.read_dump(parser, args)
    work = Path(args.work)
    # the adapter trains on stdlib-code's home
    fusion_loso.require_homes(
        parser, work, [*names, "stdlib-code"] if args.transform in (None, "adapter") else names
    )
    from cmem_index.embedder import Embedder

    embedder = Embedder.load(Path(args.model))
    scorers: dict[str, Scorer] = {}
    if args.transform in (None, "centre"):
        scorers.update({f"centre alpha={a}": centred(a) for a in ALPHAS})
    if args.transform in (None, "adapter"):
        scorers.update({label: adapted(m) for label, m in stdlib_adapters(embedder, work).items()})
    if args.transform in (None, "title"):
        scorers.update({f"title w={w}": with_title(w) for w in TITLE_WEIGHTS})
    results = {}
    for name in names:
        home = Home(work / name)
        try:
            results[name] = measure(name, dump[name], home, embedder, scorers)
        finally:
            home.store.close()
        print(name, results[name], file=sys.stderr)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
