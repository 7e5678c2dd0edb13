"""Leave-one-set-out fitting of the fusion constants on cached candidate lists.

Input: files written by ``bench/retrieval.py --dump`` (each query's top-100 index BM25 and vector candidates
with raw scores and the query's IDF sum), one or more sets per file. Every grid point of
:func:`grid` is scored once per set (nDCG@10, index lists only); then for each set the point with the best
mean over the *other* sets is chosen and its score on the held-out set reported. So the figure for a set comes
from a fit that never saw it. The grid fits the evidence order (``relative=False``, the default before issue
10); ``default`` is today's default, the relative order of ``index.fusion``, which has no fitted constant. Runs in seconds, so fusion can be iterated on without re-running the product.

    python bench/fusion_loso.py bench/results/cand-*.json [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD, VECTOR, FusionParams, Signal, fuse  # noqa: E402

Query = dict[str, Any]


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def evaluate(queries: list[Query], params: FusionParams | None, signal: str | None = None) -> float:
    """Mean nDCG@10 of cmem's fusion with ``params`` (or of one ``signal``'s list alone)."""
    scores = []
    for q in queries:
        if signal is not None:
            ranked = [d for d, _ in q[signal]]
        else:
            lists = {"keyword": q["keyword"], "vector": q["vector"]}
            signals = {"keyword": Signal(KEYWORD, q.get("idf") or None), "vector": Signal(VECTOR)}
            ranked = [h.key for h in fuse(lists, signals, params=params)[:10]]
        scores.append(ndcg10(ranked, q["relevant"]))
    return statistics.fmean(scores)


def grid() -> list[FusionParams]:
    points = []
    for weight, scale, floor, trust in itertools.product(
        [0.5, 0.6, 0.7], [1.0], [0.1, 0.2, 0.3], [0.0, 0.5, 1.0, 2.0]
    ):
        points.append(
            DEFAULT_PARAMS._replace(
                relative=False,
                keyword_weight=weight,
                vector_weight=1 - weight,
                keyword_scale=scale,
                cos_floor=floor,
                trust=trust,
            )
        )
    return list(dict.fromkeys(points))


def load(paths: list[str]) -> dict[str, list[Query]]:
    sets: dict[str, list[Query]] = {}
    for path in paths:
        for name, entry in json.loads(Path(path).read_text()).items():
            sets[name] = [q for q in entry["queries"] if q["relevant"]]
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sets = load(args.dumps)
    points = grid()
    table = {name: [evaluate(qs, p) for p in points] for name, qs in sets.items()}
    report: dict[str, Any] = {}
    for name, queries in sets.items():
        others = [n for n in sets if n != name]
        best = max(range(len(points)), key=lambda i: statistics.fmean(table[n][i] for n in others))
        report[name] = {
            "keyword": round(evaluate(queries, None, "keyword"), 4),
            "vector": round(evaluate(queries, None, "vector"), 4),
            "evidence": round(evaluate(queries, DEFAULT_PARAMS._replace(relative=False)), 4),
            "default": round(evaluate(queries, DEFAULT_PARAMS), 4),
            "loso": round(table[name][best], 4),
            "loso_params": points[best]._asdict(),
            "in_sample_best": round(max(table[name]), 4),
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{'set':14}{'keyword':>9}{'vector':>9}{'evidence':>9}{'default':>9}{'LOSO':>9}{'in-sample':>11}"
        "  LOSO constants"
    )
    for name, row in report.items():
        p = row["loso_params"]
        constants = ", ".join(
            f"{k}={v}" for k, v in p.items() if k not in ("rrf_k", "fallback_half", "cutoff")
        )
        print(
            f"{name:14}{row['keyword']:>9.3f}{row['vector']:>9.3f}{row['evidence']:>9.3f}{row['default']:>9.3f}{row['loso']:>9.3f}"
            f"{row['in_sample_best']:>11.3f}  {constants}"
        )


if __name__ == "__main__":
    main()
