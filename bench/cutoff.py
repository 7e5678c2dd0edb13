"""Calibrating search's evidence cut-off (``FusionParams.cutoff``, the default ``--min-score``).

For every set built by bench/retrieval.py (``--work DIR``), runs each real query and a fixed list of nonsense
queries through ``cmem_cli.services.read.search_pipeline.search`` (hybrid, no cut-off) and reports:

- the best score any nonsense query reaches with no cut-off at all (``nonsense_best``: the score bar alone
  need not sit above it, because a query none of whose words occurs in the searched documents is judged by
  the rules for that case, ``model_reads`` and ``stands_out`` in index/hybrid.py), and how many nonsense
  searches list anything with the product's defaults, in hybrid and in vector mode (``nonsense_listed``:
  it must be 0 on every set, a query that matches nothing returns nothing);
- nDCG@10 of the real queries with candidate cut-offs (it must not drop);
- how many of the real queries' relevant documents in the top 10 a cut-off would remove.

    python -m bench.cutoff --model MODEL.gguf --work /tmp/cmem-bench [--sets scifact,madial]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bench import retrieval  # the sets, metrics and built homes

NONSENSE = ["zzzqqqxx", "qwxzv bnmlk", "xyzzy plugh", "fjdksla qpwoeiru zmxncb", "ooooooo", "1234567890"]
CUTOFFS = [0.0, 0.05, 0.06, 0.07, 0.075, 0.08, 0.1]


def calibrate(name: str, work: Path, model: str, split: str) -> dict[str, object]:
    from cmem_cli.core.config import load_config
    from cmem_cli.core.query import Query
    from cmem_cli.services.read.search_pipeline import search
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.store.repository import Filters

    data = retrieval.SETS[name](split)
    info = retrieval.build_home(name, data, work / name, model)
    os.environ["CMEM_EMBED_MODEL"] = model
    memory = WriteService.open(load_config(work / name))
    id_map = info["ids"]
    scopes = [f for _, _, f in data["queries"] if f] or [None]
    nonsense_best = 0.0
    nonsense_listed = 0
    for text in NONSENSE:
        for scope in sorted({json.dumps(s) for s in scopes})[:3]:  # the same three every run
            page = search(memory, Query(text, limit=1, mode="hybrid", rerank=False, min_score=0.0),
                          Filters(**(json.loads(scope) or {})))  # fmt: skip
            nonsense_best = max([nonsense_best, *(r["score"] for r in page.to_json())])
            for mode in ("hybrid", "vector"):
                listed = search(memory, Query(text, limit=1, mode=mode, rerank=False),
                                Filters(**(json.loads(scope) or {}))).to_json()  # fmt: skip
                nonsense_listed += bool(listed)
    per_cut: dict[float, list[dict[str, float]]] = {c: [] for c in CUTOFFS}
    removed = {c: 0 for c in CUTOFFS}
    for qid, text, filters in data["queries"]:
        rows = search(memory, Query(text, limit=10, mode="hybrid", rerank=False, min_score=0.0),
                      Filters(**(filters or {}))).to_json()  # fmt: skip
        relevant = data["qrels"].get(qid, {})
        for cut in CUTOFFS:
            kept = [id_map.get(str(r["id"]), "") for r in rows if r["score"] >= cut]
            per_cut[cut].append(retrieval.metrics(kept, relevant))
            removed[cut] += sum(1 for r in rows if r["score"] < cut and id_map.get(str(r["id"])) in relevant)
    memory.close()
    return {
        "nonsense_best": round(nonsense_best, 4),
        "nonsense_listed": nonsense_listed,
        "ndcg@10": {str(c): retrieval.mean(v)["ndcg@10"] for c, v in per_cut.items()},
        "relevant_removed": {str(c): n for c, n in removed.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True, help="the homes bench/retrieval.py built (--work)")
    parser.add_argument("--sets", default="scifact,madial,locomo-obs,locomo-turns,cosqa,stdlib-code")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    report = {name: calibrate(name, Path(args.work), args.model, args.split) for name in args.sets.split(",")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
