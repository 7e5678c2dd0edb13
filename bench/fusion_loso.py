"""Leave-one-set-out choice of the fusion constants, on the fusion input the product saw.

Input: files written by ``bench/retrieval.py --dump``: for each query, every list hybrid search fused (the
store's BM25, the index's BM25, the vectors: candidates with raw scores) and what kind each list is. Each
query is re-fused here exactly as ``cmem search`` does (``cmem_index.fusion.fuse``, then the default evidence
cut-off), under every point of a family of constants, and scored by nDCG@10. Then, for each set, the point
with the best mean over the *other* sets is chosen and its score on the held-out set reported: the figure
for a set comes from a fit that never saw it. Two families, each varying one thing:

* ``relative``: today's default order (z-scores weighted by each list's decisiveness); its constant here is
  the decisiveness depth ``decisive_at`` (best normalised score less the one at that rank).
* ``code``: the same order with ``code_keyword``, how much a keyword list whose head is source code counts
  for a question in words (cmem_index.codelike).

(A third family, the order before issue 10 with a per-query ``trust`` weight, was measured and not kept:
docs/retrieval.md, "What bench/ no longer holds".)

After fusion, the search's reply step is replayed (a bare question's reply, when a hit, moves to just
before it; ``replies_first``), from the question -> reply pairs the dump records.

Runs in a minute or two, so fusion can be iterated on without re-running the product. ``--bootstrap N``
instead counts how often each code factor is the best in N resamples of every set's questions.

    python -m bench.fusion_loso /tmp/cand.json [more dumps] [--json | --bootstrap 500]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench.retrieval import ndcg
from cmem_cli.services.read.search_pipeline import replies_first
from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD, VECTOR, FusionParams, Signal, fuse

Query = dict[str, Any]
DEPTHS = (5, 10, 20, 30, 50, 75, 100)
PAGE, DEPTH = 10, 50  # a 10-row search fuses 50 hits; the page's questions bring replies found among them
# how much a keyword list of code counts for a question in words
CODE_KEYWORD = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.75, 1.0)


def ranked(q: Query, params: FusionParams, kind: str | None = None) -> list[str]:
    """The query's hits as hybrid search orders them under ``params`` (or one ``kind``'s lists alone)."""
    signals = {name: Signal(*spec) for name, spec in q["signals"].items()}  # older dumps: kind and idf
    lists = {name: items for name, items in q["lists"].items() if kind in (None, signals[name].kind)}
    hits = fuse(lists, signals, params=params)
    if kind is None:
        hits = [h for h in hits if h.score >= params.cutoff]
    keys = [h.key for h in hits][:DEPTH]
    asking = set(keys[:PAGE])
    return replies_first(keys, {k: v for k, v in q.get("replies", {}).items() if k in asking})


def evaluate(queries: list[Query], params: FusionParams, kind: str | None = None) -> float:
    return statistics.fmean(ndcg(ranked(q, params, kind), q["relevant"]) for q in queries)


def families() -> dict[str, list[FusionParams]]:
    relative = [DEFAULT_PARAMS._replace(decisive_at=depth) for depth in DEPTHS]
    code = [DEFAULT_PARAMS._replace(code_keyword=share) for share in CODE_KEYWORD]
    return {"relative": relative, "code": code}


def load(paths: list[str]) -> dict[str, list[Query]]:
    sets: dict[str, list[Query]] = {}
    for path in paths:
        for name, entry in json.loads(Path(path).read_text()).items():
            if entry["queries"] and "lists" not in entry["queries"][0]:
                raise SystemExit(
                    f"{path}: an older dump without the fused lists; re-run bench/retrieval.py --dump"
                )
            sets[name] = judged(entry)
    return sets


def judged(entry: dict[str, Any]) -> list[Query]:
    """A dumped set's queries that have relevance judgements, each with the set's question -> reply pairs
    (none in older dumps) so the search's reply step is replayed too."""
    replies = entry.get("replies", {})
    return [{**q, "replies": replies} for q in entry["queries"] if q["relevant"]]


def leave_one_out(table: dict[str, list[float]]) -> dict[str, int]:
    """For each set, the index of the point with the best mean score over the other sets."""
    return {
        name: max(range(len(scores)), key=lambda i: statistics.fmean(table[n][i] for n in table if n != name))
        for name, scores in table.items()
    }


def report(sets: dict[str, list[Query]]) -> dict[str, Any]:
    """Per set: keyword, vector and the default, then each family's leave-one-set-out figure and constants."""
    out: dict[str, Any] = {
        name: {
            "keyword": round(evaluate(qs, DEFAULT_PARAMS, KEYWORD), 4),
            "vector": round(evaluate(qs, DEFAULT_PARAMS, VECTOR), 4),
            "default": round(evaluate(qs, DEFAULT_PARAMS), 4),
        }
        for name, qs in sets.items()
    }
    for family, points in families().items():
        table = {name: [evaluate(qs, p) for p in points] for name, qs in sets.items()}
        for name, best in leave_one_out(table).items():
            out[name][f"{family}_loso"] = round(table[name][best], 4)
            out[name][f"{family}_in_sample_best"] = round(max(table[name]), 4)
            out[name][f"{family}_constants"] = _constants(points[best], family)
        if family == "relative":
            for name in sets:
                out[name]["by_depth"] = dict(zip(DEPTHS, (round(v, 4) for v in table[name]), strict=True))
    return out


def print_report(rows: dict[str, Any]) -> None:
    print(
        f"{'set':14}{'keyword':>9}{'vector':>9}{'default':>9}{'rel LOSO':>10}{'code LOSO':>11}  LOSO constants"
    )
    for name, row in rows.items():
        print(
            f"{name:14}{row['keyword']:>9.4f}{row['vector']:>9.4f}{row['default']:>9.4f}"
            f"{row['relative_loso']:>10.4f}{row['code_loso']:>11.4f}"
            f"  relative: {row['relative_constants']}; code: {row['code_constants']}"
        )
    print("\nrelative order by decisiveness depth (nDCG@10):")
    print(f"{'set':14}" + "".join(f"{d:>8}" for d in DEPTHS))
    for name, row in rows.items():
        print(f"{name:14}" + "".join(f"{v:>8.4f}" for v in row["by_depth"].values()))


def code_factor_bootstrap(
    sets: dict[str, list[Query]], draws: int, seed: int = 0
) -> dict[str, dict[str, int]]:
    """How often each code factor is the best when every set's questions are drawn again with replacement:
    by the mean nDCG@10 over the sets, and by the smallest margin over a set's better single signal (the
    issue's rule). Says how firmly the data picks the product's factor."""
    import numpy as np

    def per_query(qs: list[Query], params: FusionParams, kind: str | None = None) -> list[float]:
        return [ndcg(ranked(q, params, kind), q["relevant"]) for q in qs]

    fused = {n: np.array([per_query(qs, DEFAULT_PARAMS._replace(code_keyword=c)) for c in CODE_KEYWORD])
             for n, qs in sets.items()}  # fmt: skip
    single = {n: np.array([per_query(qs, DEFAULT_PARAMS, kind) for kind in (KEYWORD, VECTOR)])
              for n, qs in sets.items()}  # fmt: skip
    rng = np.random.default_rng(seed)
    best: dict[str, dict[str, int]] = {"mean": {}, "smallest margin": {}}
    for _ in range(draws):
        means, margins = [], []
        for name, table in fused.items():
            drawn = rng.integers(0, table.shape[1], table.shape[1])
            means.append(table[:, drawn].mean(axis=1))
            margins.append(means[-1] - single[name][:, drawn].mean(axis=1).max())
        for label, rows in (("mean", np.mean(means, axis=0)), ("smallest margin", np.min(margins, axis=0))):
            factor = str(CODE_KEYWORD[int(np.argmax(rows))])
            best[label][factor] = best[label].get(factor, 0) + 1
    order = [str(c) for c in CODE_KEYWORD]  # by factor, not by first win
    return {label: {f: wins[f] for f in order if f in wins} for label, wins in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--bootstrap", type=int, metavar="N", help="instead: how often each code factor wins in N resamples"
    )
    args = parser.parse_args()
    if args.bootstrap is not None and args.bootstrap < 1:
        parser.error(f"--bootstrap: at least one draw, not {args.bootstrap}")
    try:
        sets = load(args.dumps)
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the dump: {exc}")
    if args.bootstrap:
        print(json.dumps(code_factor_bootstrap(sets, args.bootstrap), indent=2))
        return
    rows = report(sets)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_report(rows)


def replay_parser(doc: str | None) -> argparse.ArgumentParser:
    """The parser of a script that replays a ``bench/retrieval.py --dump``: ``--dump`` and ``--sets``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", required=True, help="the fusion input bench/retrieval.py --dump wrote")
    parser.add_argument("--sets", help="comma-separated; default: every set in the dump")
    return parser


def read_dump(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """The dump ``--dump`` names and the sets asked for (``--sets``, or all of it); a usage error if not."""
    try:
        dump = json.loads(Path(args.dump).read_text())
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the dump {args.dump}: {exc}")
    names = args.sets.split(",") if args.sets else list(dump)
    missing = [name for name in names if name not in dump]
    if missing:
        parser.error(f"not in the dump {args.dump}: {', '.join(missing)}")
    return dump, names


def require_homes(parser: argparse.ArgumentParser, work: Path, names: list[str]) -> None:
    """A usage error unless ``work`` holds a home bench/retrieval.py built for each of these sets."""
    missing = [name for name in dict.fromkeys(names) if not (work / name / "bench-ids.json").exists()]
    if missing:
        parser.error(f"no benchmark home in {work} for: {', '.join(missing)}")


def _constants(p: FusionParams, family: str) -> str:
    if family == "relative":
        return f"decisive_at={p.decisive_at}"
    return f"code_keyword={p.code_keyword}"


if __name__ == "__main__":
    main()
