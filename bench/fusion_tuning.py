"""Compare fusion functions on dumped candidates (bench/retrieval.py --dump) and fit their constants.

Each query's top-100 keyword (BM25) and vector (cosine) candidates with raw scores are fused offline by
several functions; nDCG@10 is reported per data set. Constants are fitted on one set (``--fit``, e.g.
SciFact's *train* split) and then reported, unchanged, on the others, so the numbers for the evaluation sets
are honest held-out numbers.

    python bench/fusion_tuning.py --fit /tmp/scifact_train.json:scifact \
        --eval /tmp/scifact_test.json:scifact --eval /tmp/madial.json:madial
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Query = dict[str, Any]
Fusion = Callable[[Query], list[str]]


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def score(queries: list[Query], fusion: Fusion) -> float:
    return statistics.fmean(ndcg10(fusion(q), q["relevant"]) for q in queries)


def rank_only(signal: str) -> Fusion:
    return lambda q: [d for d, _ in q[signal]]


def rrf(k: float = 60.0) -> Fusion:
    def run(q: Query) -> list[str]:
        total: dict[str, float] = {}
        for signal in ("keyword", "vector"):
            for rank, (doc, _) in enumerate(q[signal], 1):
                total[doc] = total.get(doc, 0.0) + 1.0 / (k + rank)
        return sorted(total, key=lambda d: -total[d])

    return run


def convex(kw_norm: Callable[[list[float]], list[float]], vec_norm: Callable[[list[float]], list[float]],
           alpha: float) -> Fusion:  # fmt: skip
    """alpha * keyword + (1 - alpha) * vector on normalised scores; a missing signal contributes 0."""

    def run(q: Query) -> list[str]:
        total: dict[str, float] = {}
        for signal, norm, weight in (("keyword", kw_norm, alpha), ("vector", vec_norm, 1 - alpha)):
            items = q[signal]
            if not items:
                continue
            for (doc, _), value in zip(items, norm([s for _, s in items]), strict=True):
                total[doc] = total.get(doc, 0.0) + weight * value
        return sorted(total, key=lambda d: -total[d])

    return run


# -- normalisations ------------------------------------------------------------------------------------
def max_norm(scores: list[float]) -> list[float]:
    top = max(scores) or 1.0
    return [s / top for s in scores]


def min_max(scores: list[float]) -> list[float]:
    lo, hi = min(scores), max(scores)
    return [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]


def zscore(scores: list[float]) -> list[float]:
    if len(scores) < 2:
        return [1.0 for _ in scores]
    mu, sd = statistics.fmean(scores), statistics.pstdev(scores) or 1.0
    return [(s - mu) / sd for s in scores]


def identity(scores: list[float]) -> list[float]:
    return scores


def cos_linear(floor: float, ceiling: float) -> Callable[[list[float]], list[float]]:
    return lambda scores: [min(1.0, max(0.0, (s - floor) / (ceiling - floor))) for s in scores]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fit", required=True, help="DUMP.json:SET used to choose constants")
    parser.add_argument(
        "--eval", action="append", default=[], help="DUMP.json:SET reported with fixed constants"
    )
    args = parser.parse_args()

    def load(spec: str) -> list[Query]:
        path, name = spec.rsplit(":", 1)
        return json.loads(Path(path).read_text())[name]["queries"]

    fit = load(args.fit)
    evals = {spec: load(spec) for spec in args.eval}
    families: dict[str, Callable[[float], Fusion]] = {
        "cc max/raw": lambda a: convex(max_norm, identity, a),
        "cc max/minmax": lambda a: convex(max_norm, min_max, a),
        "cc minmax/minmax": lambda a: convex(min_max, min_max, a),
        "cc z/z": lambda a: convex(zscore, zscore, a),
        "cc max/z": lambda a: convex(max_norm, zscore, a),
    }
    rows = [("keyword", rank_only("keyword")), ("vector", rank_only("vector")), ("rrf k=60", rrf())]
    for name, family in families.items():
        best = max((score(fit, family(a)), a) for a in [i / 20 for i in range(1, 20)])
        rows.append((f"{name} a={best[1]:.2f}", family(best[1])))
    header = f"{'fusion':28}{'fit':>8}" + "".join(f"{Path(s).stem[:14]:>16}" for s in evals)
    print(header)
    for name, fusion in rows:
        line = f"{name:28}{score(fit, fusion):8.4f}"
        line += "".join(f"{score(qs, fusion):16.4f}" for qs in evals.values())
        print(line)
    _ = itertools  # kept for ad-hoc grid searches


if __name__ == "__main__":
    main()
