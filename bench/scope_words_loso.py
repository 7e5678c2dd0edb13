"""Leave-one-set-out choice of the scope-words constants (``cmem_index.scope_words``).

The rule leaves out of the query's embedding the words held by ``SPLIT_FROM`` to ``SPLIT_UNTIL`` of the chunks
searched. Changing them changes the vector list itself, so ``bench/fusion_loso.py`` (which re-fuses recorded
lists) cannot replay it. This script takes a ``bench/retrieval.py --dump`` and its homes (``--work``), and for
every point of a grid recomputes each query's vector list the way search does (the product's own
``splitting_words``, ``without_words``, query embedding and sqlite-vec search, the evidence reading the
whole query's cosines), re-fuses it with the recorded keyword lists (``fusion_loso.ranked``: the default
order, cut-off and reply step) and scores nDCG@10. For each set, the point with the best mean over the other sets is chosen and its figure on the held-out set reported.
"off" is the search without the rule.

    python -m bench.scope_words_loso /tmp/D.json --work /tmp/cmem-bench --model MODEL.gguf [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import fusion_loso, retrieval

FROM = (0.1, 0.2, 0.3, 0.4)
UNTIL = (0.7, 0.8, 0.9, 1.01)
OFF = (2.0, 2.0)  # no word is ever in twice the chunks: the rule is off


def vector_lists(name: str, work: Path, model: str, points: list[tuple[float, float]]) -> dict[Any, Any]:
    """{point: {qid: vector list keyed by corpus id}} for one set's queries."""
    os.environ["CMEM_HOME"] = str(work / name)
    os.environ["CMEM_EMBED_MODEL"] = model
    from cmem_cli.core.config import load_config
    from cmem_index import retrieve, scope_words
    from cmem_index.hybrid import CANDIDATES, embed_search_query, query_vector_scale
    from cmem_index.loading import load_embedder
    from cmem_index.retrieve import DocFilters
    from cmem_index.store import IndexStore

    config = load_config(work / name)
    ids = json.loads((work / name / "bench-ids.json").read_text())["ids"]
    corpus = retrieval.corpus_keys(config, ids)
    embedder, why = load_embedder(config)
    if embedder is None:
        raise SystemExit(f"{name}: {why}")
    store = IndexStore.open(config.index_path, readonly=True)
    uid_of = dict(store.conn.execute("SELECT id, uid FROM documents").fetchall())
    cache: dict[tuple[str, str], list[tuple[str, float]]] = {}
    out: dict[Any, Any] = {}
    try:
        queries = retrieval.SETS[name]("test")["queries"]
        for point in points:
            scope_words.SPLIT_FROM, scope_words.SPLIT_UNTIL = point
            out[point] = {}
            for qid, text, filters in queries:
                doc_filters = DocFilters.coerce(filters)
                embedded = scope_words.without_words(
                    text, scope_words.splitting_words(store, text, doc_filters)
                )
                key = (embedded, text, json.dumps(filters, sort_keys=True))
                if key not in cache:
                    vector = embed_search_query(embedder, embedded)
                    scale = query_vector_scale(vector)
                    hits = retrieve.vector(store, vector, doc_filters, CANDIDATES)
                    found = [(corpus.get(f"obs:{uid_of.get(h.doc_id)}", ""), h.score * scale) for h in hits]
                    evidence = None  # as search does: the evidence reads the whole query's cosines
                    if embedded != text:
                        whole = embed_search_query(embedder, text)
                        cos = retrieve.cosines(store, whole, [h.chunk_id for h in hits])
                        evidence = {
                            corpus.get(f"obs:{uid_of.get(h.doc_id)}", ""): cos[h.chunk_id]
                            * query_vector_scale(whole)
                            for h in hits
                            if h.chunk_id in cos
                        }
                    cache[key] = (found, evidence)
                out[point][qid] = cache[key]
    finally:
        store.close()
    return out


def report(dump: dict[str, Any], work: Path, model: str) -> dict[str, Any]:
    points = [OFF, *itertools.product(FROM, UNTIL)]
    table: dict[str, list[float]] = {}
    for name, entry in dump.items():
        queries = fusion_loso.judged(entry)
        lists = vector_lists(name, work, model, points)
        table[name] = []
        for point in points:
            scores = []
            for q in queries:
                recorded = {k: v for k, v in q["lists"].items() if q["signals"][k][0] != fusion_loso.VECTOR}
                found, evidence = lists[point][q["qid"]]
                signals = {**q["signals"], fusion_loso.VECTOR: [fusion_loso.VECTOR, None, 0.0, evidence]}
                replay = {**q, "lists": {**recorded, fusion_loso.VECTOR: found}, "signals": signals}
                scores.append(
                    retrieval.ndcg(fusion_loso.ranked(replay, fusion_loso.DEFAULT_PARAMS), q["relevant"])
                )
            table[name].append(statistics.fmean(scores))
        print(f"{name}: " + " ".join(f"{v:.4f}" for v in table[name]), file=sys.stderr)
    chosen = fusion_loso.leave_one_out(table)
    label = ["off" if p == OFF else f"{p[0]}-{p[1]}" for p in points]
    overall = max(range(len(points)), key=lambda i: statistics.fmean(t[i] for t in table.values()))
    return {
        "points": label,
        "table": {name: [round(v, 4) for v in row] for name, row in table.items()},
        "held_out": {
            name: {"point": label[i], "ndcg@10": round(table[name][i], 4)} for name, i in chosen.items()
        },
        "best_mean": label[overall],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dump")
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = report(json.loads(Path(args.dump).read_text()), args.work, args.model)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'set':14}" + "".join(f"{p:>10}" for p in rows["points"]))
    for name, row in rows["table"].items():
        print(f"{name:14}" + "".join(f"{v:>10.4f}" for v in row))
    print("\nheld out (point chosen by the other sets):")
    for name, held in rows["held_out"].items():
        print(f"  {name:14}{held['point']:>10}  {held['ndcg@10']:.4f}")
    print(f"best mean over all sets: {rows['best_mean']}")


if __name__ == "__main__":
    main()
