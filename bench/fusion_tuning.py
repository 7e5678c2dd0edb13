"""Compare fusion functions on dumped candidates (bench/retrieval.py --dump) and fit their constants.

Each query's top-100 keyword (BM25) and vector (cosine) candidates with raw scores are fused offline by
several functions; nDCG@10 is reported per data set. Constants are fitted on one set (``--fit``, e.g.
SciFact's *train* split) and then reported, unchanged, on the others, so the numbers for the evaluation sets
are honest held-out numbers.

    python -m bench.fusion_tuning --fit /tmp/scifact_train.json:scifact \
        --eval /tmp/scifact_test.json:scifact --eval /tmp/madial.json:madial
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.retrieval import ndcg
from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD, VECTOR, FusionParams, Signal, fuse

Query = dict[str, Any]
Fusion = Callable[[Query], list[str]]


def score(queries: list[Query], fusion: Fusion) -> float:
    return statistics.fmean(ndcg(fusion(q), q["relevant"]) for q in queries)


def index_lists(q: Query) -> Query:
    """The dumped query with the index's own lists and IDF sum as ``keyword``, ``vector`` and ``idf``: the
    two lists these fusions compare (the store's list is left out)."""
    keyword = q["signals"].get("keyword") or [KEYWORD, None]
    return {
        **q,
        "keyword": q["lists"].get("keyword", []),
        "vector": q["lists"].get("vector", []),
        "idf": keyword[1] or 0.0,
    }


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


def calibrated(params: FusionParams) -> Fusion:
    """cmem's calibrated evidence score (cmem_index.fusion) with the given constants, hits ordered by it:
    what these constants decide (the order of hybrid hits has been the relative order since issue 10; the
    evidence is what --min-score and the cut-off read, and the order when one kind of list found nothing)."""

    def run(q: Query) -> list[str]:
        lists = {"keyword": q["keyword"], "vector": q["vector"]}
        signals = {"keyword": Signal(KEYWORD, q.get("idf") or None), "vector": Signal(VECTOR)}
        hits = fuse(lists, signals, params=params)
        return [h.key for h in sorted(hits, key=lambda h: (-h.score, h.key))]

    return run


def fit_calibrated(sets: list[list[Query]]) -> tuple[float, FusionParams]:
    """The grid point with the best mean nDCG@10 over ``sets`` (each set weighs the same)."""
    grid = itertools.product(
        [0.3, 0.4, 0.5, 0.6, 0.7],  # keyword weight (vector weight = 1 - it)
        [0.25, 0.5, 1.0, 2.0],  # keyword scale
        [0.0, 0.1, 0.2, 0.3],  # cosine floor
    )
    best: tuple[float, FusionParams] | None = None
    for weight, scale, floor in grid:
        params = FusionParams(
            keyword_weight=weight, vector_weight=1 - weight, keyword_scale=scale, cos_floor=floor
        )
        value = statistics.fmean(score(queries, calibrated(params)) for queries in sets)
        if best is None or value > best[0]:
            best = (value, params)
    assert best is not None
    return best


def label(params: FusionParams) -> str:
    return f"w={params.keyword_weight:.1f} s={params.keyword_scale} f={params.cos_floor}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--fit", action="append", required=True, help="DUMP.json:SET used to choose constants"
    )
    parser.add_argument(
        "--eval", action="append", default=[], help="DUMP.json:SET reported with fixed constants"
    )
    parser.add_argument(
        "--cv",
        help="DUMP.json:SET also used for fitting, reported by 2-fold cross-validation (odd/even queries)",
    )
    args = parser.parse_args()

    def load(spec: str) -> list[Query]:
        path, name = spec.rsplit(":", 1)
        return [index_lists(q) for q in json.loads(Path(path).read_text())[name]["queries"]]

    fits = [load(spec) for spec in args.fit]
    evals = {f"{Path(spec.rsplit(':', 1)[0]).stem}": load(spec) for spec in args.eval}
    if args.cv:
        cv = load(args.cv)
        folds = [cv[0::2], cv[1::2]]
        held_out = []
        for index, fold in enumerate(folds):
            _, params = fit_calibrated([*fits, folds[1 - index]])
            held_out.append((score(fold, calibrated(params)), len(fold), params))
        cv_score = sum(v * n for v, n, _ in held_out) / len(cv)
        print(
            f"2-fold CV on {args.cv}: nDCG@10 {cv_score:.4f} (folds fitted as {[label(p) for *_, p in held_out]})"
        )
        fits.append(cv)
        evals[f"{Path(args.cv.rsplit(':', 1)[0]).stem} (in-sample)"] = cv
    _, fitted = fit_calibrated(fits)
    print(f"fitted on {len(fits)} set(s): {fitted}")

    families: dict[str, Callable[[float], Fusion]] = {
        "cc max/raw": lambda a: convex(max_norm, identity, a),
        "cc minmax/minmax": lambda a: convex(min_max, min_max, a),
        "cc z/z": lambda a: convex(zscore, zscore, a),
    }
    rows = [("keyword", rank_only("keyword")), ("vector", rank_only("vector")), ("rrf k=60", rrf())]
    rows.append((f"cmem default {label(DEFAULT_PARAMS)}", calibrated(DEFAULT_PARAMS)))
    rows.append((f"cmem fitted {label(fitted)}", calibrated(fitted)))
    for name, family in families.items():
        best = max(
            (statistics.fmean(score(f, family(a)) for f in fits), a) for a in [i / 20 for i in range(1, 20)]
        )
        rows.append((f"{name} a={best[1]:.2f}", family(best[1])))
    print(f"{'fusion':34}{'fit mean':>10}" + "".join(f"{name[:22]:>24}" for name in evals))
    for name, fusion in rows:
        line = f"{name:34}{statistics.fmean(score(f, fusion) for f in fits):10.4f}"
        line += "".join(f"{score(qs, fusion):24.4f}" for qs in evals.values())
        print(line)


if __name__ == "__main__":
    main()
