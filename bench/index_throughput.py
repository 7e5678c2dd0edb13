"""End-to-end indexing throughput against the embedder's raw rate (target: at least 80%).

Loads N SciFact abstracts into a temporary cmem home with `cmem add --json`, then:

1. runs the full update pass in-process (scan, read, parse front matter, chunk with the model's tokenizer,
   write chunks and FTS rows, embed in batches, write vectors) and times it;
2. times ``embed_documents`` alone on exactly the (context, text) items that pass embedded, in the same
   batch sizes — the raw rate of the model on the same work;
3. times ``embed_documents`` on the whole (title, abstract) pairs, truncated to the model's window — the
   "abstracts/s" figure usually quoted, which leaves the end of long abstracts unembedded.

The ratio of 1 and 2 is the indexer's efficiency; 3 shows the price of covering every token. The three
run interleaved for ``--rounds`` rounds (each round indexes into a fresh database) and the medians are
reported, as wall time and as this process's CPU time (which a busy machine disturbs much less). The model
tokens per abstract (prompt and special tokens included, cut to the window) are exact: the cost of
embedding is close to linear in them, so their ratio bounds what the indexer can reach against 3.

    python -m bench.index_throughput --model PATH.gguf [--docs 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="cmem-throughput-")) / "home"
    records = []
    with open(DATA, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            records.append(
                {"title": doc["title"], "narrative": doc["text"], "type": "discovery", "project": "p"}
            )
            if len(records) == args.docs:
                break
    source = home.parent / "docs.ndjson"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": "none"}
    subprocess.run([sys.executable, "-m", "cmem_cli", "add", "--json", str(source)], env=env, check=True,
                   capture_output=True)  # fmt: skip

    os.environ.update(CMEM_HOME=str(home), CMEM_EMBED_MODEL=args.model)
    from cmem_cli.core.config import load_config
    from cmem_index import indexer as indexer_module
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.loading import load_embedder
    from cmem_index.store import IndexStore

    config = load_config()
    embedder, why = load_embedder(config)
    if embedder is None:
        raise SystemExit(why)
    embedder.embed_documents([(None, "warm up")])
    abstracts = [(r["title"], r["narrative"]) for r in records]

    def timed(run) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        return time.perf_counter() - wall, time.process_time() - cpu

    def embed_in_pages(pairs) -> None:
        for start in range(0, len(pairs), indexer_module.EMBED_PAGE):
            embedder.embed_documents(pairs[start : start + indexer_module.EMBED_PAGE])

    rows: dict[str, list[tuple[float, float]]] = {"e2e": [], "raw": [], "truncated": []}
    items: list[tuple[str, str]] = []
    for round_ in range(args.rounds):  # interleaved, so a noisy neighbour hits every row alike
        path = home.parent / f"index-{round_}.db"
        store = IndexStore.open(path)
        indexer = Indexer(store, load_collections(config), embedder)
        rows["e2e"].append(timed(indexer.run))
        items = [
            indexer_module.embedding_input(title, context, text)
            for title, context, text in store.conn.execute(
                "SELECT d.title, d.context, c.text FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "ORDER BY c.id"
            ).fetchall()
        ]
        store.close()
        rows["raw"].append(timed(lambda pairs=items: embed_in_pages(pairs)))
        rows["truncated"].append(timed(lambda: embed_in_pages(abstracts)))

    def median(name: str) -> tuple[float, float]:
        walls = sorted(w for w, _ in rows[name])
        cpus = sorted(c for _, c in rows[name])
        return walls[len(walls) // 2], cpus[len(cpus) // 2]

    def model_tokens(pairs) -> int:  # what the model evaluates: prompt, special tokens, cut to the window
        return sum(len(embedder._sequence(embedder.prompt.format_document(t, x))) for t, x in pairs)

    n = args.docs
    chunk_tokens, abstract_tokens = model_tokens(items), model_tokens(abstracts)
    print(f"model {Path(args.model).name}, {n} abstracts -> {len(items)} chunks ({len(items) / n:.2f} per "
          f"abstract); model tokens per abstract: {chunk_tokens / n:.0f} indexed, {abstract_tokens / n:.0f} "
          f"truncated; median of {args.rounds} interleaved rounds")  # fmt: skip
    print(f"{'':22}{'wall s':>8}{'abstracts/s':>13}{'CPU s':>8}{'abstracts/CPU-s':>17}")
    labels = {"raw": "raw, same chunks", "e2e": "cmem index (e2e)", "truncated": "raw, truncated"}
    for name in ("raw", "e2e", "truncated"):
        wall, cpu = median(name)
        print(f"{labels[name]:22}{wall:8.1f}{n / wall:13.1f}{cpu:8.1f}{n / cpu:17.2f}")
    (e2e_wall, e2e_cpu), (raw_wall, raw_cpu) = median("e2e"), median("raw")
    trunc_wall, trunc_cpu = median("truncated")
    print(
        f"cmem index vs raw on the same chunks: {raw_wall / e2e_wall:.0%} (wall), {raw_cpu / e2e_cpu:.0%} (CPU)"
    )
    print(f"cmem index vs raw truncated abstracts: {trunc_wall / e2e_wall:.0%} (wall), "
          f"{trunc_cpu / e2e_cpu:.0%} (CPU); token bound {abstract_tokens / chunk_tokens:.0%}")  # fmt: skip


if __name__ == "__main__":
    main()
