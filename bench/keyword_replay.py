"""Replay hybrid search with a rewritten keyword query, on the homes and dump bench/retrieval.py left.

For each judged query, both keyword lists (the store's BM25 over observations and the index's over chunks)
are fetched again from the set's home for the rewritten query. They are fused with the recorded vector
list, as ``cmem search`` fuses them (``cmem_index.fusion.fuse``, then the default cut-off), and scored by
nDCG@10. Vectors do not change, so no model is loaded. The rewrite ``identity`` must reproduce the
dump's figures: a check of the replay itself.

    python bench/retrieval.py --model M.gguf --work /tmp/cmem-bench --modes hybrid --dump /tmp/cand.json
    python bench/keyword_replay.py --work /tmp/cmem-bench --dump /tmp/cand.json --rewrite drop:python
    python bench/keyword_replay.py ... --rewrite mymodule:rewrite   # any importable (query: str) -> str

The benchmark homes hold observations only, so the store list here is its observations' BM25 (the
product's also holds summaries and prompts). Keys here are corpus ids, and the product's are ``obs:<uid>``:
hits the fusion ties are ordered by key, so the keyword-only column can differ from ``--mode keyword`` by
tied hits (the default order has almost no ties: vectors break them).
"""

from __future__ import annotations

import importlib
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusion_loso import ranked, read_dump, replay_parser, require_homes  # noqa: E402  (bench/fusion_loso.py, next to this file)
from retrieval import SETS, corpus_keys, ndcg  # noqa: E402  (bench/retrieval.py)

from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD  # noqa: E402
from cmem_index.search import CANDIDATES  # noqa: E402  (the index lists' depth)

STORE_DEPTH = 50  # the store list's depth for a 10-hit search (cmem_cli.services.search)

Rewrite = Callable[[str], str]


def rewriter(spec: str) -> Rewrite:
    """``identity``, ``drop:WORD[,WORD...]`` (whole words, any case) or ``module:function``."""
    if spec == "identity":
        return lambda query: query
    kind, _, arg = spec.partition(":")
    if kind == "drop" and arg:
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, arg.split(","))) + r")\b", re.IGNORECASE)
        return lambda query: pattern.sub(" ", query)
    if arg:
        try:
            return getattr(importlib.import_module(kind), arg)
        except (ImportError, AttributeError) as exc:
            raise SystemExit(f"cannot load the rewrite {spec!r}: {exc}") from None
    raise SystemExit(f"unknown rewrite {spec!r}: identity, drop:WORD[,WORD] or module:function")


class Home:
    """A benchmark home opened read-only: keyword lists for any query, keyed by corpus id."""

    def __init__(self, path: Path):
        from cmem_cli.core.config import load_config
        from cmem_cli.services.writes import Memory
        from cmem_index.store import IndexStore

        config = load_config(path)
        ids = json.loads((path / "bench-ids.json").read_text())["ids"]  # obs id -> corpus id
        self.corpus_of_key = corpus_keys(config, ids)  # obs:<uid> -> corpus id
        self.memory = Memory.open(config)
        self.index = IndexStore.open(config.index_path, readonly=True)
        self.uid_of_doc = dict(self.index.rows("SELECT id, uid FROM documents"))

    def keyword_lists(
        self, query: str, filters: dict[str, Any] | None
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], float, float]:
        """The store's list, the index's list, the query's IDF sum in the index and the share of code among
        the index list's first hits (what fusion reads)."""
        from cmem_cli.store.repository import Filters
        from cmem_index import retrieve
        from cmem_index.search import _code_share

        rows = self.memory.store.search_observations(query, Filters(**(filters or {})), limit=STORE_DEPTH)
        store = [(self.corpus_of_key.get(f"obs:{r['uid']}", ""), r["bm25"]) for r in rows]
        hits = retrieve.keyword(self.index, query, retrieve.DocFilters.coerce(filters), CANDIDATES)
        index = [(self.corpus_of_key.get(f"obs:{self.uid_of_doc.get(h.doc_id)}", ""), h.score) for h in hits]
        idf = retrieve.query_idf(self.index, query) if hits else 0.0
        return store, index, idf, _code_share(self.index, query, hits)

    def close(self) -> None:
        self.index.close()
        self.memory.close()


def replay(name: str, home: Home, recorded: list[dict[str, Any]], rewrite: Rewrite) -> dict[str, float]:
    """Keyword-only and default nDCG@10 of one set, as recorded and with the rewritten keyword query."""
    data = SETS[name]("test")
    by_qid = {q["qid"]: q for q in recorded}
    scores: dict[str, list[float]] = {
        "keyword": [],
        "keyword_replayed": [],
        "default": [],
        "default_replayed": [],
    }
    for qid, text, filters in data["queries"]:
        q = by_qid.get(qid)
        if q is None or not q["relevant"]:
            continue
        recorded_q = {
            "lists": {n: items[:CANDIDATES] for n, items in q["lists"].items()},
            "signals": q["signals"],
        }
        scores["keyword"].append(ndcg(ranked(recorded_q, DEFAULT_PARAMS, KEYWORD), q["relevant"]))
        scores["default"].append(ndcg(ranked(recorded_q, DEFAULT_PARAMS), q["relevant"]))
        store, index, idf, share = home.keyword_lists(rewrite(text), filters)
        replayed = {
            "lists": {
                n: (index if n == KEYWORD else store) if kind == KEYWORD else items
                for n, items in recorded_q["lists"].items()
                for kind in [q["signals"][n][0]]
            },
            "signals": {**q["signals"], KEYWORD: [KEYWORD, idf or None, share]},
        }
        scores["keyword_replayed"].append(ndcg(ranked(replayed, DEFAULT_PARAMS, KEYWORD), q["relevant"]))
        scores["default_replayed"].append(ndcg(ranked(replayed, DEFAULT_PARAMS), q["relevant"]))
    return {key: round(statistics.fmean(values), 4) for key, values in scores.items()}


def main() -> None:
    parser = replay_parser(__doc__)
    parser.add_argument("--work", required=True, help="the homes bench/retrieval.py --work built")
    parser.add_argument("--rewrite", default="identity", help="identity, drop:WORD[,WORD] or module:function")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dump, names = read_dump(parser, args)
    rewrite = rewriter(args.rewrite)
    require_homes(parser, Path(args.work), names)
    rows = {}
    for name in names:
        home = Home(Path(args.work) / name)
        try:
            rows[name] = replay(name, home, dump[name]["queries"], rewrite)
        finally:
            home.close()
        if not args.json:
            row = rows[name]
            print(
                f"{name:14} keyword {row['keyword']:.4f} -> {row['keyword_replayed']:.4f}   "
                f"default {row['default']:.4f} -> {row['default_replayed']:.4f}",
                flush=True,
            )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
