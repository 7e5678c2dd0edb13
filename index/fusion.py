"""Fusing ranked lists from different retrievers into one ranking with a calibrated 0..1 score.

Reciprocal rank fusion throws the scores away: a document that BM25 finds with a huge margin (a rare name, an
identifier) counts the same as one it barely prefers, so a weak second signal drags a confident first one
down — which is why plain RRF of BM25 and a small embedding model scores *below* BM25 alone on short memories
full of names and dates. Here every signal is first put on an absolute 0..1 scale that means the same from
query to query, then the signals are combined as a weighted sum:

* keyword (BM25): ``1 - exp(-bm25 / (scale * idf_sum))``, where ``idf_sum`` is the summed IDF of the query's
  terms in the index — roughly what a document matching every term scores. Near 1 means "the query's
  information is matched", near 0.05 "one common word". This also adapts the mix to the query: a two-word query
  that matches is trusted, a fifty-word dialogue that shares a few words with a memory leaves the decision to
  the vectors, as it should.
* vector (cosine): ``(cos - floor) / (ceiling - floor)``, clipped.

Lists of the same kind (the index's BM25 over chunks, the store's BM25 over observations) describe the same
evidence: within a kind the best normalised score counts, not the sum. An extra keyword list without its own
``idf_sum`` is anchored to the index's keyword list (its best hit gets the index's best normalised score).
A key missing from a list scores 0 for it, and so does every key for a list that found nothing. The constants are fitted on SciFact's *train* split and MADial
(bench/fusion_tuning.py; SciFact's test split stays held out, MADial is cross-validated) and fixed.

That score is the *evidence* (what ``--min-score`` and the cut-off read). When both kinds found something,
hits are *ordered* per query by :func:`_relative_order` instead: each list's standardised scores, weighted by
how decisive the list is, because which signal to believe depends on the query and the kind of memory (issue
10). docs/retrieval.md has the numbers.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module (every search); here they are plain objects.

import math
from collections.abc import Callable, Mapping, Sequence, Set
from typing import NamedTuple

KEYWORD = "keyword"
VECTOR = "vector"


class FusionParams(NamedTuple):
    """Constants of the score-aware fusion (see the module docstring and docs/retrieval.md)."""

    keyword_weight: float = 0.6
    vector_weight: float = 0.4
    keyword_scale: float = 1.0
    cos_floor: float = 0.1
    cos_ceiling: float = 1.0
    fallback_half: float = 10.0  # raw BM25 mapped to 0.5 when a keyword list has no scale nor anchor
    decisive_at: int = 50  # a list's decisiveness: its best normalised score less the one at this rank
    code_keyword: float = 0.3  # how much a keyword list of code counts for a question in words (codelike)
    cutoff: float = 0.07  # default --min-score of hybrid search: below it, no real evidence
    unmatched_margin: float = 0.16  # no query word occurs: a hit's cosine must clear its neighbours' median
    unknown_pieces: float = 2.0  # no query word occurs and its words average more model pieces: no hits


DEFAULT_PARAMS = FusionParams()


class Signal(NamedTuple):
    """How to read one list: its kind and, for keyword lists, the query's IDF sum in that list's index and
    the share of its first hits that are source code matched by a question in words
    (:mod:`cmem_index.codelike`; 0 when the query names an identifier). ``evidence``: for a vector list
    found by the query embedded without some of its words (:mod:`cmem_index.scope_words`), each hit's
    cosine to the whole query, which the evidence score reads instead: the calibration was fitted on
    whole queries, and a shorter one lowers every cosine. ``scaled``: a keyword list whose raw scores are
    already BM25 over the query's IDF sum in its own table (the store's strengths, :mod:`cmem_cli.core.bm25`);
    with no list to anchor it, it is read on the calibrated keyword curve itself."""

    kind: str = KEYWORD
    idf_sum: float | None = None
    code_share: float = 0.0
    evidence: Mapping[str, float] | None = None
    scaled: bool = False


class SignalScore:
    """One signal's view of a hit: its 1-based rank, raw score and normalised 0..1 score; ``whole``, for a
    vector list searched with words left out, the hit's cosine to the whole query (what the score reads)."""

    __slots__ = ("rank", "raw", "norm", "whole")

    def __init__(self, rank: int, raw: float, norm: float, whole: float | None = None):
        self.rank, self.raw, self.norm, self.whole = rank, raw, norm, whole

    def __repr__(self) -> str:
        return f"SignalScore(rank={self.rank}, raw={self.raw!r}, norm={self.norm!r})"


class FusedHit:
    """A key with its fused score, the signals that found it and what orders it among the query's hits.

    ``score`` is the calibrated 0..1 evidence (what ``--min-score`` cuts); ``order`` is the per-query
    ranking key (:func:`_relative_order`), equal to ``score`` when only one kind of list found anything.
    """

    __slots__ = ("key", "score", "signals", "order")

    def __init__(self, key: str, score: float, signals: dict[str, SignalScore] | None = None):
        self.key, self.score, self.order = key, score, score
        self.signals = signals if signals is not None else {}

    def __repr__(self) -> str:
        return f"FusedHit(key={self.key!r}, score={self.score!r}, signals={self.signals!r})"


def default_cutoff(mode: str, params: FusionParams = DEFAULT_PARAMS) -> float:
    """The default ``--min-score`` for a search ``mode`` (``keyword``, ``vector`` or ``hybrid``).

    Vectors always return nearest neighbours, evidence or not. ``params.cutoff`` is on the hybrid scale;
    in vector mode a hit's score is its vector score alone, so the bar is the vector score a hit needs to
    pass the cut-off in hybrid with no keyword match. Keyword hits always matched a word: no cut-off.
    docs/retrieval.md has the calibration (and :func:`stands_out` the case of a query no word of which
    occurs in the searched documents).
    """
    if mode == "hybrid":
        return params.cutoff
    if mode == "vector":
        return params.cutoff / params.vector_weight
    return 0.0


def stands_out(cosines: Sequence[float], params: FusionParams = DEFAULT_PARAMS) -> float:
    """The cosine a hit needs when not one word of the query occurs in the searched documents.

    Then the vectors are all the evidence there is, and MiniLM's absolute cosines cannot tell ``zzzqqqxx``
    (up to 0.38 against code) from a real question that shares no word with its answer (0.27-0.30 in a
    small home). What differs is whether a document stands out of the query's neighbourhood: its cosine must
    clear the median of the query's nearest documents (``cosines``, best first) by ``unmatched_margin``.
    """
    head = sorted(cosines[:100])
    if not head:
        return 1.0
    middle = len(head) // 2
    median = head[middle] if len(head) % 2 else (head[middle - 1] + head[middle]) / 2
    return median + params.unmatched_margin


def keyword_norm(raw: float, idf_sum: float, params: FusionParams = DEFAULT_PARAMS) -> float:
    """``1 - exp(-bm25 / (scale * idf_sum))``: 0..1, smooth, and never a tie between two BM25 scores."""
    if idf_sum <= 0:
        return 0.0
    return 1.0 - math.exp(-max(0.0, raw) / (params.keyword_scale * idf_sum))


def vector_norm(cosine: float, params: FusionParams = DEFAULT_PARAMS) -> float:
    span = params.cos_ceiling - params.cos_floor
    return min(1.0, max(0.0, (cosine - params.cos_floor) / span))


def fuse(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    signals: Mapping[str, Signal] | None = None,
    *,
    params: FusionParams = DEFAULT_PARAMS,
    unseen: Mapping[str, Set[str]] | None = None,
) -> list[FusedHit]:
    """Fuse ``{signal: [(key, raw_score), ...]}`` (each list best first, higher raw is better) into hits.

    ``signals`` says what each list is (default: ``vector`` for a list named ``vector``, else keyword).
    ``unseen``: per list, the keys its retriever could not judge (a memory the index does not hold yet,
    or holds without a vector): for such a key the list says nothing, where a key it judged and did not
    find scores 0. A kind none of whose lists judged a key leaves that key's score and order to the
    other kinds, as a search without that kind would.
    (Plain reciprocal rank fusion, the baseline the benchmarks compare with, lives in bench/retrieval.py.)
    """
    specs = {
        name: (signals or {}).get(name) or Signal(VECTOR if name == VECTOR else KEYWORD) for name in lists
    }
    lists, unseen = _imputed(lists, specs, unseen)
    norms = _normalised(lists, specs, params)
    hits: dict[str, FusedHit] = {}
    for name, items in lists.items():
        rank = 0
        for (key, raw), norm in zip(items, norms[name], strict=True):
            hit = hits.setdefault(key, FusedHit(key, 0.0))
            if name in hit.signals:
                continue  # a list may repeat a key; its first (best) entry counts
            rank += 1
            cosines = specs[name].evidence
            whole = cosines.get(key) if cosines is not None else None
            hit.signals[name] = SignalScore(rank, float(raw), norm, whole)
    weights = {KEYWORD: params.keyword_weight, VECTOR: params.vector_weight}
    # Every kind asked about counts, found or not: a query no keyword list matches gets no keyword credit,
    # so its vector-only hits score what they would beside keyword hits (the cut-off means the same).
    kinds_asked = {spec.kind for spec in specs.values()}
    total_weight = sum(weights.get(kind, 0.0) for kind in kinds_asked) or 1.0
    unjudged = _unjudged_kinds(hits, specs, unseen)
    for hit in hits.values():
        best: dict[str, float] = {}  # what orders the hits: each list's own scores
        evidence: dict[str, float] = {}  # what the score says: the whole query's, where a list has them
        for name, score in hit.signals.items():
            spec = specs[name]
            best[spec.kind] = max(best.get(spec.kind, 0.0), score.norm)
            norm = score.norm if score.whole is None else vector_norm(score.whole, params)
            evidence[spec.kind] = max(evidence.get(spec.kind, 0.0), norm)
        weight = total_weight
        if hit.key in unjudged:
            weight = sum(weights.get(kind, 0.0) for kind in kinds_asked - unjudged[hit.key]) or 1.0
        hit.score = sum(weights.get(kind, 0.0) * value for kind, value in evidence.items()) / weight
        hit.order = sum(weights.get(kind, 0.0) * value for kind, value in best.items()) / weight
    _relative_order(hits, lists, specs, norms, params.decisive_at, params.code_keyword, unseen, unjudged)
    return sorted(hits.values(), key=lambda h: (-h.order, -h.score, h.key))


def _imputed(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    specs: Mapping[str, Signal],
    unseen: Mapping[str, Set[str]] | None,
) -> tuple[Mapping[str, Sequence[tuple[str, float]]], Mapping[str, Set[str]] | None]:
    """A keyword list that could not see some keys (the index, for memories it does not hold yet) gets
    them back at the score another keyword list's words give them (the store's BM25 over the same
    memories), put on its scale by the best key both lists hold. Left out, such a key made the index's
    list shorter and its other hits stand out more, and the list's scale came from a weaker best hit:
    the order then was not the one `cmem index` gives. Keys no other list found stay unseen."""
    if not unseen:
        return lists, unseen
    out = dict(lists)
    left = dict(unseen)
    for name, items in lists.items():
        blind = unseen.get(name)
        if not blind or specs[name].kind != KEYWORD:
            continue
        own = dict(items[::-1])  # a repeated key: its first (best) entry
        for peer, peer_items in lists.items():
            if peer == name or specs[peer].kind != KEYWORD:
                continue
            theirs = dict(peer_items[::-1])
            shared = [key for key in theirs if key in own and key not in blind and theirs[key] > 0]
            missing = {key: raw for key, raw in theirs.items() if key in blind and raw > 0}
            if not shared or not missing:
                continue
            anchor = max(shared, key=lambda key: theirs[key])
            ratio = own[anchor] / theirs[anchor]
            added = [(key, raw * ratio) for key, raw in missing.items()]
            out[name] = sorted([*out[name], *added], key=lambda item: -item[1])
            left[name] = set(blind) - set(missing)
            break
    return out, left


def _unjudged_kinds(
    hits: Mapping[str, FusedHit], specs: Mapping[str, Signal], unseen: Mapping[str, Set[str]] | None
) -> dict[str, set[str]]:
    """Each key's kinds none of whose lists could judge it (``unseen``), for the keys that have one."""
    if not unseen:
        return {}
    lists_of: dict[str, list[str]] = {}
    for name, spec in specs.items():
        lists_of.setdefault(spec.kind, []).append(name)
    out: dict[str, set[str]] = {}
    for key in hits:
        for kind, names in lists_of.items():
            if all(key in unseen.get(name, ()) for name in names):
                out.setdefault(key, set()).add(kind)
    return out


STANDARDISE_AT = 100  # a list's mean and spread come from its first hits, whatever the --limit
# A keyword list that matched fewer documents is standardised as if it had this many places, the rest
# holding what a document without the words scores (0): one match among many documents stands out as it
# should, where a list of one hit had no spread and gave its hit nothing (a weak vector neighbour then
# outranked an exact title match). Up to 20 no query of MADial or LoCoMo moves; completing lists up to 100
# cost LoCoMo turns 0.006 (docs/retrieval.md, issue 25).
STANDARDISE_FLOOR = 20


def _relative_order(
    hits: Mapping[str, FusedHit],
    lists: Mapping[str, Sequence[tuple[str, float]]],
    specs: Mapping[str, Signal],
    norms: Mapping[str, list[float]],
    decisive_at: int,
    code_keyword: float = 1.0,
    unseen: Mapping[str, Set[str]] | None = None,
    unjudged: Mapping[str, Set[str]] | None = None,
) -> None:
    """Order by how far a hit stands above each list's own crowd, weighted by how decisive that list is.

    Absolute scales (the evidence ``score``) say whether a hit is evidence at all, but not which signal to
    believe for this query: BM25 is confident on questions naming a person and misled by common words in
    questions against code, and vectors are the reverse. So each list's raw scores are standardised over
    its first hits (z-scores: a hit's distance above the list's mean in standard deviations; a key the list
    did not find, or found past its first hits, takes the list's lowest z). A kind with several lists (the
    index's BM25 and the store's over the same observations: two views of the words) takes their mean, and
    each kind is weighted by its decisiveness (best normalised score less the one at rank ``decisive_at``),
    so two kinds equally decisive weigh the same. In a short keyword list (under ``STANDARDISE_FLOOR``
    hits, standardised against non-matches) a hit keeps the share of its standing that its words cover of
    the query (:func:`_coverage`). A keyword list whose first hits are source code, for a
    question in words, counts ``code_keyword`` as much (in proportion to the share of code): there its words
    match by accident. The constants ``decisive_at`` and ``code_keyword`` are the best over every visible
    set; the figures reported for each set come from leave-one-set-out fits (bench/fusion_loso.py). With
    one kind of list (keyword or vector search, or a query one side found nothing for) the evidence order
    stands. docs/retrieval.md has the measurements.
    """
    per_list: dict[str, list[tuple[dict[str, float], float, Set[str]]]] = {}
    decisive: dict[str, float] = {}
    code: dict[str, float] = {}
    for name, items in lists.items():
        kind = specs[name].kind
        if not items:
            continue
        head = [float(raw) for _, raw in items[:STANDARDISE_AT]]
        if kind == KEYWORD:  # the documents it did not match complete a short list (STANDARDISE_FLOOR)
            head += [0.0] * (STANDARDISE_FLOOR - len(head))
        mean = sum(head) / len(head)
        spread = math.sqrt(sum((v - mean) ** 2 for v in head) / len(head)) or 1.0
        lowest = (min(head) - mean) / spread
        short = (
            kind == KEYWORD and len(items) < STANDARDISE_FLOOR
        )  # its head is compared with a non-match's 0
        covered = _coverage(specs[name]) if short else None
        z: dict[str, float] = {}  # a list may repeat a key: its first (best) entry counts
        for key, raw in items:
            if key not in z:
                gain = max(0.0, (float(raw) - mean) / spread - lowest)
                z[key] = lowest + gain * (covered(float(raw)) if covered else 1.0)
        per_list.setdefault(kind, []).append((z, lowest, (unseen or {}).get(name, frozenset())))
        decisive[kind] = max(decisive.get(kind, 0.0), _decisiveness(norms[name], decisive_at, short=short))
        code[kind] = max(code.get(kind, 0.0), specs[name].code_share)
    if len(per_list) < 2:
        return
    for kind, share in code.items():  # the index's list knows its hits' text; the kind is discounted
        decisive[kind] *= 1.0 - share * (1.0 - code_keyword)
    total = sum(decisive.values())
    weight = {kind: (d / total if total else 1.0 / len(per_list)) for kind, d in decisive.items()}
    for hit in hits.values():
        # a list that could not judge the key (``unseen``) says nothing of it; a kind no list of which
        # judged it leaves the order to the other kinds, their weights taken as the whole
        known = {kind: w for kind, w in weight.items() if kind not in (unjudged or {}).get(hit.key, ())}
        share = sum(known.values()) or 1.0
        hit.order = sum(
            w
            / share
            * _mean([z.get(hit.key, low) for z, low, blind in per_list[kind] if hit.key not in blind])
            for kind, w in known.items()
        )


def _coverage(spec: Signal) -> Callable[[float], float] | None:
    """How much of the query a keyword hit covers, 0..1, from its raw score: BM25 over the query's IDF sum
    (about 1 for a document that holds every word of the query once; a rare word counts for more of it
    than a common one). A short list stands its hits against documents that match nothing, so each hit's
    standing is this share of it: one common word of three is not a match of the query. None when the
    list's scale is unknown."""
    if spec.scaled:
        return lambda raw: min(1.0, max(0.0, raw))
    if spec.idf_sum:
        idf_sum = spec.idf_sum
        return lambda raw: min(1.0, max(0.0, raw / idf_sum))
    return None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _decisiveness(values: Sequence[float], depth: int, *, short: bool = False) -> float:
    """A list's best normalised score less the one at ``depth``: how far its head stands above the rest
    of what it found (0 when flat). A ``short`` keyword list (under ``STANDARDISE_FLOOR`` hits) compares its
    head with what it did not match, 0."""
    if short:
        return max(0.0, values[0])
    return max(0.0, values[0] - values[min(depth, len(values)) - 1])


def _normalised(
    lists: Mapping[str, Sequence[tuple[str, float]]], specs: Mapping[str, Signal], params: FusionParams
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    anchor: float | None = None  # the best keyword "strength" (BM25 over scaled IDF sum) of a scaled list
    for name, items in lists.items():  # keyword lists that know their scale first: they anchor the others
        spec = specs[name]
        if spec.kind == VECTOR:
            out[name] = [vector_norm(raw, params) for _, raw in items]
        elif spec.idf_sum:
            out[name] = [keyword_norm(raw, spec.idf_sum, params) for _, raw in items]
            if items:
                strength = max(max(0.0, raw) for _, raw in items) / (params.keyword_scale * spec.idf_sum)
                anchor = max(anchor or 0.0, strength)
    for name, items in lists.items():
        if name in out:
            continue
        raws = [max(0.0, raw) for _, raw in items]
        top = max(raws, default=0.0)
        if anchor is not None and top > 0:
            # Same curve as the index's keyword list, with this list's best hit at the index's best strength.
            out[name] = [1.0 - math.exp(-anchor * raw / top) for raw in raws]
        elif specs[name].scaled:  # strengths: the curve itself (a prompt the index does not hold)
            out[name] = [keyword_norm(raw, 1.0, params) for raw in raws]
        else:
            out[name] = [raw / (raw + params.fallback_half) for raw in raws]
    return out
