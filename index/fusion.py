"""Fusing ranked lists from different retrievers into one ranking with a calibrated 0..1 score.

Reciprocal rank fusion throws the scores away: a document that BM25 finds with a huge margin (a rare name,
an identifier) counts the same as one it barely prefers, so a weak second signal drags a confident first one
down. That is why plain RRF of BM25 and a small embedding model scores *below* BM25 alone on short memories
full of names and dates. Here each list's raw scores are mapped to 0..1 on a scale that means the same from
query to query, and the signals are combined as a weighted sum:

* keyword (BM25, higher is better): ``s / (s + K)``, a saturating transform of the raw score. BM25 grows with
  the number and rarity of matched terms, so the transform keeps "matched several rare terms" near 1 and "one
  common word" near 0 instead of stretching every list to [0, 1].
* vector (cosine): ``(cos - floor) / (ceiling - floor)`` clipped, with floor/ceiling set for the model family
  (small sentence encoders put unrelated text around 0.1-0.2 and paraphrases at 0.6-0.9).

Lists of the same kind (the index's BM25 over chunks and the store's BM25 over observations) describe the same
evidence, so within a kind the best normalised score counts, not the sum. A key missing from a list scores 0
for it. The weights and constants are tuned once on benchmark training data (bench/retrieval.py) and fixed;
nothing is tuned per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

KEYWORD = "keyword"
VECTOR = "vector"


@dataclass(frozen=True)
class FusionParams:
    """Constants of the score-aware fusion (see module docstring); defaults measured in docs/retrieval.md."""

    keyword_weight: float = 0.5
    vector_weight: float = 0.5
    bm25_half: float = 8.0  # raw BM25 that maps to 0.5
    cos_floor: float = 0.15
    cos_ceiling: float = 0.75
    rrf_k: float = 60.0


DEFAULT_PARAMS = FusionParams()


@dataclass
class SignalScore:
    """One signal's view of a hit: 1-based rank in its list, raw score, and normalised 0..1 score."""

    rank: int
    raw: float
    norm: float


@dataclass
class FusedHit:
    key: str
    score: float
    signals: dict[str, SignalScore] = field(default_factory=dict)


def normalise(kind: str, raw: float, params: FusionParams = DEFAULT_PARAMS) -> float:
    """A raw score of a ``kind`` signal on the fixed 0..1 scale."""
    if kind == VECTOR:
        span = params.cos_ceiling - params.cos_floor
        return min(1.0, max(0.0, (raw - params.cos_floor) / span))
    strength = max(0.0, raw)
    return strength / (strength + params.bm25_half)


def fuse(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    kinds: Mapping[str, str] | None = None,
    *,
    params: FusionParams = DEFAULT_PARAMS,
    method: str = "score",
) -> list[FusedHit]:
    """Fuse ``{signal: [(key, raw_score), ...]}`` (each list best first) into hits, best first.

    ``kinds`` maps a signal name to ``keyword`` or ``vector`` (default: ``vector`` for a signal named
    ``vector``, else ``keyword``). ``method="rrf"`` is plain reciprocal rank fusion, kept as the baseline.
    """
    kinds = dict(kinds or {})
    hits: dict[str, FusedHit] = {}
    for signal, items in lists.items():
        kind = kinds.get(signal) or (VECTOR if signal == VECTOR else KEYWORD)
        rank = 0
        for key, raw in items:
            hit = hits.setdefault(key, FusedHit(key, 0.0))
            if signal in hit.signals:
                continue  # a list may repeat a key; its first (best) entry counts
            rank += 1
            hit.signals[signal] = SignalScore(rank, float(raw), normalise(kind, float(raw), params))
    for hit in hits.values():
        if method == "rrf":
            hit.score = sum(1.0 / (params.rrf_k + s.rank) for s in hit.signals.values())
            continue
        best: dict[str, float] = {}
        for signal, score in hit.signals.items():
            kind = kinds.get(signal) or (VECTOR if signal == VECTOR else KEYWORD)
            best[kind] = max(best.get(kind, 0.0), score.norm)
        weights = {KEYWORD: params.keyword_weight, VECTOR: params.vector_weight}
        present = {kind for signal in lists for kind in [kinds.get(signal) or _default_kind(signal)]}
        total = sum(weights.get(kind, 0.0) for kind in present) or 1.0
        hit.score = sum(weights.get(kind, 0.0) * value for kind, value in best.items()) / total
    return sorted(hits.values(), key=lambda h: (-h.score, h.key))


def _default_kind(signal: str) -> str:
    return VECTOR if signal == VECTOR else KEYWORD
