"""Recall of compact vector search (bits, then exact re-ranking of the head) against exact float32 search,
on real all-MiniLM-L6-v2 vectors (bench/real_vectors.py), through cmem's own search code.

Builds an index database holding only vectors (one chunk per text), forces the compact path, and for every
query compares the 10 (and 100) nearest chunks of ``cmem_index.retrieve.compact_nearest`` with those of
``exact_nearest``. Prints recall@10 and recall@100 per index size and head size, and the time per query.

    python -m bench.compact_recall --vectors /tmp/vectors.npz [--sizes 10000,30000,57931] [--heads 100,400]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FINGERPRINT = "real-minilm"


def build_index(path: Path, vectors: object) -> object:
    """An index.db with one document and one chunk per vector, its bits built as `cmem index` builds them."""
    import numpy as np

    from cmem_index.store import IndexStore

    store = IndexStore.open(path)
    vectors = np.asarray(vectors, dtype=np.float32)
    store.vectors.use_model(FINGERPRINT, vectors.shape[1])
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO documents(id, collection, path, docid, size, mtime_ns, hash, chunked_with, title, "
            "context, indexed_at) VALUES (?, 'memories', ?, ?, 0, 0, '', 'bench', '', '', 0)",
            [(i + 1, f"d{i}.md", f"{i:06x}") for i in range(len(vectors))],
        )
        store.conn.executemany(
            "INSERT INTO chunks(id, doc_id, seq, start_line, hash, text) VALUES (?, ?, 0, 1, ?, '')",
            [(i + 1, i + 1, f"h{i}") for i in range(len(vectors))],
        )
        for start in range(0, len(vectors), 5_000):
            part = vectors[start : start + 5_000]
            store.vectors.write(
                [(start + i + 1, f"h{start + i}", part[i].tobytes()) for i in range(len(part))],
                FINGERPRINT,
                cache=True,
            )
    store.vectors.build_bits(FINGERPRINT)
    with store.transaction():
        store.settings.set("vector_count", str(len(vectors)))
    return store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=Path, required=True, help="the .npz of bench/real_vectors.py")
    parser.add_argument("--sizes", default="10000,30000,0", help="index sizes (0: every vector)")
    parser.add_argument("--heads", default="100,200,400,800", help="chunks the bits pick for re-ranking")
    parser.add_argument("--queries", type=int, default=500, help="queries per measurement")
    args = parser.parse_args()
    import numpy as np

    from cmem_index import retrieve
    from cmem_index.retrieve import DocFilters

    data = np.load(args.vectors)
    documents, queries = data["documents"], data["queries"][: args.queries]
    work = Path(tempfile.mkdtemp(prefix="cmem-recall-"))
    print(f"{len(queries)} queries; recall against exact float32 search, through cmem_index.retrieve\n")
    print("| vectors | head | recall@10 | recall@100 | exact ms/query | compact ms/query |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in [int(s) or len(documents) for s in args.sizes.split(",")]:
        store = build_index(work / f"index-{size}.db", documents[:size])
        retrieve.COMPACT_ABOVE = 0
        exact, exact_s = [], []
        for q in queries:
            started = time.process_time()
            exact.append([r[0] for r in retrieve.exact_nearest(store, q.tobytes(), DocFilters(), 100)])
            exact_s.append(time.process_time() - started)
        for head in [int(h) for h in args.heads.split(",")]:
            retrieve.COMPACT_HEAD = head
            r10, r100, compact_s = [], [], []
            for q, truth in zip(queries, exact, strict=True):
                started = time.process_time()
                found = [r[0] for r in retrieve.compact_nearest(store, q.tobytes(), DocFilters(), 100)]
                compact_s.append(time.process_time() - started)
                r10.append(len(set(found[:10]) & set(truth[:10])) / 10)
                r100.append(len(set(found) & set(truth)) / len(truth))
            print(f"| {size:,} | {head} | {statistics.mean(r10):.3f} | {statistics.mean(r100):.3f} | "
                  f"{statistics.median(exact_s) * 1000:.1f} | {statistics.median(compact_s) * 1000:.1f} |")  # fmt: skip
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
