"""Real all-MiniLM-L6-v2 vectors for measuring compact (quantised) vector search against exact search.

Texts: the evaluation sets' documents read at run time from ``../shared/data`` (never copied): SciFact
abstracts cut into sentences, CoSQA functions, LoCoMo turns and observations, BEAM messages, MADial
memories; queries: every set's questions. Embedded with cmem's own importer and ``Embedder`` (document and
query prompts as the index uses them), cached in an ``.npz`` file so the slow part runs once.

    python -m bench.real_vectors --out /tmp/vectors.npz [--limit 60000]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def documents(data: Path = DATA) -> list[str]:
    """Short real texts, of the lengths memories have (a sentence to a function)."""
    texts: list[str] = []
    for row in _jsonl(data / "scifact" / "corpus.jsonl"):
        texts += [s for s in _SENTENCE_END.split(row.get("text") or "") if len(s) > 20]
    texts += [row["code"] for row in _jsonl(data / "cosqa-dev" / "code.jsonl")]
    texts += [row["text"] for row in _jsonl(data / "locomo-dev" / "turns.jsonl")]
    texts += [row["text"] for row in _jsonl(data / "locomo-dev" / "observations.jsonl")]
    texts += [row["text"] for row in _jsonl(data / "beam-ku-dev" / "messages.jsonl")]
    texts += [row["text"] for row in _jsonl(data / "madial" / "memories.jsonl")]
    return [t for t in dict.fromkeys(t.strip() for t in texts) if t]


def queries(data: Path = DATA) -> list[str]:
    found = [row["text"] for row in _jsonl(data / "scifact" / "queries.jsonl")]
    for name in ("locomo-dev", "cosqa-dev", "beam-ku-dev"):
        found += [row["query"] for row in _jsonl(data / name / "queries.jsonl")]
    found += [row["query"].strip().splitlines()[-1] for row in _jsonl(data / "madial" / "queries.jsonl")]
    return list(dict.fromkeys(found))


def embed(
    texts: list[str], *, as_queries: bool, model: Path, page: int = 256, partial: Path | None = None
) -> object:
    """Vectors of ``texts``; with ``partial``, saved there every few pages and resumed from it (an hour of
    embedding on a busy machine should survive an interruption)."""
    import numpy as np

    from cmem_index.embedder import Embedder

    embedder = Embedder.load(model)
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    done = 0
    if partial is not None and partial.exists():
        saved = np.load(partial)
        done = min(len(saved), len(texts))
        out[:done] = saved[:done]
    started, first = time.monotonic(), done
    for start in range(done, len(texts), page):
        part = texts[start : start + page]
        if as_queries:
            out[start : start + len(part)] = np.array(embedder.query_vectors(part), dtype=np.float32)
        else:
            out[start : start + len(part)] = embedder.embed_documents([(None, t) for t in part])
        done = start + len(part)
        if partial is not None and (done // page) % 20 == 0:
            np.save(partial, out[:done])
        rate = (done - first) / max(time.monotonic() - started, 1e-9)
        print(f"\r{'queries' if as_queries else 'documents'} {done}/{len(texts)} ({rate:.0f}/s)", end="",
              file=sys.stderr, flush=True)  # fmt: skip
    print(file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the .npz file to write")
    parser.add_argument("--limit", type=int, default=60_000, help="documents at most")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"evaluation data not found: {DATA}", file=sys.stderr)
        return 2
    import numpy as np

    from tests.model_fixtures import build_minilm_gguf

    model = build_minilm_gguf(args.out.parent)
    docs = documents()[: args.limit]
    asked = queries()
    partial = args.out.with_name(args.out.stem + ".partial.npy")
    doc_vectors = embed(docs, as_queries=False, model=model, partial=partial)
    np.savez(args.out, documents=doc_vectors, queries=embed(asked, as_queries=True, model=model))
    partial.unlink(missing_ok=True)
    print(f"{len(docs)} documents, {len(asked)} queries -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
