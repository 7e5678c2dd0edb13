"""Retrieval quality of cmem's search on five kinds of memory: nDCG@10, recall@10, MRR@10.

SciFact (BEIR test split: claims against abstracts), MADial (dialogues against dated personal memories),
LoCoMo's dev half (questions against extracted observations, and against raw conversation turns) and CoSQA's
dev set (questions against Python functions).

The whole product is measured: each corpus is loaded with ``cmem add --json`` into a temporary cmem home,
exported to markdown by cmem, indexed by ``cmem index`` (chunking, front matter, embeddings), and queried
through ``cmem_cli.services.read.search_pipeline.search`` — what ``cmem search --mode MODE`` runs in-process (the store's BM25
fused with the index's BM25 and vectors) — in keyword, vector and hybrid modes, plus ``rrf``: plain
reciprocal-rank fusion of the index's FTS5 BM25 and vector lists, the baseline to beat. The data is read from
../shared/data at run time and never copied into the repository.

    python -m bench.retrieval --model /path/to/minilm.gguf [--sets scifact,madial,...] [--work DIR]
                              [--split test] [--dump FILE] [--candidates N] [--loso]

``--work DIR`` keeps the built homes so a second run skips loading and embedding. ``--dump`` writes every
query's fusion input as hybrid search saw it (each list's candidates with raw scores) for
bench/fusion_loso.py and bench/fusion_tuning.py; ``--loso`` then prints bench/fusion_loso.py's
leave-one-set-out table for the sets just run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CMEM_BENCH_DATA") or REPO.parent / "shared" / "data")  # a worktree sets it

MODES = ("keyword", "vector", "hybrid", "rrf")


# -- data sets -------------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                out.setdefault(qid, {})[did] = int(score)
    return out


def scifact(split: str) -> dict[str, Any]:
    root = DATA / "scifact"
    docs = [
        (d["_id"], {"title": d["title"] or d["text"][:80], "narrative": d["text"], "type": "discovery",
                    "project": "scifact"})
        for d in _jsonl(root / "corpus.jsonl")
    ]  # fmt: skip
    qrels = _qrels(root / "qrels" / f"{split}.tsv")
    queries = [(q["_id"], q["text"], None) for q in _jsonl(root / "queries.jsonl") if q["_id"] in qrels]
    return {"docs": docs, "queries": queries, "qrels": qrels}


def madial(split: str, labels: bool = False) -> dict[str, Any]:
    """Each memory becomes an observation: text -> title, user -> project, date -> created_at; with
    ``labels`` also its annotated scene and emotion -> concepts (an ablation: ``madial-labels``)."""
    root = DATA / "madial"
    docs = []
    for m in _jsonl(root / "memories.jsonl"):
        record = {"title": m["text"], "type": "discovery", "project": m["user"], "created_at": m["date"]}
        if labels:
            record["concepts"] = [m["scene"], m["emotion"]]
        docs.append((m["id"], record))
    qrels = _qrels(root / "qrels.tsv")
    queries = [(q["id"], q["query"], {"project": q["scope"]}) for q in _jsonl(root / "queries.jsonl")]
    return {"docs": docs, "queries": queries, "qrels": qrels}


def _locomo_date(text: str, seconds: int = 0) -> str:
    """LoCoMo's session dates ("8:56 pm on 20 July, 2023") as ISO, what a user's import would store; a turn
    ``seconds`` after its session's start, so the turns keep their order."""
    from datetime import datetime, timedelta

    return (datetime.strptime(text, "%I:%M %p on %d %B, %Y") + timedelta(seconds=seconds)).isoformat()


def _locomo_order(item: dict[str, Any]) -> tuple[str, int, int]:
    """(conversation, session, turn): a turn's place in its dialogue (``D3:12``); observations keep their
    session's time (turn 0)."""
    turn = item.get("dia_id", "").partition(":")[2]
    return item["conversation"], int(item["session"]), int(turn) if turn.isdigit() else 0


def locomo(kind: str) -> dict[str, Any]:
    """LoCoMo dev half: each turn (``Speaker: text``) or extracted observation becomes an observation in the
    conversation's project and its session, dated by the session (turns a second apart, in order, as an
    import of the chat would store them); questions search their own conversation."""
    root = DATA / "locomo-dev"
    docs = []
    for item in sorted(_jsonl(root / f"{kind}.jsonl"), key=_locomo_order):
        text = f"{item['speaker']}: {item['text']}" if kind == "turns" else item["text"]
        record = {"title": text[:500], "type": "discovery", "project": item["conversation"],
                  "session": f"{item['conversation']}-s{item['session']}",
                  "created_at": _locomo_date(item["date"], _locomo_order(item)[2])}  # fmt: skip
        if len(text) > 500:
            record["narrative"] = text
        docs.append((item["id"], record))
    qrels = _qrels(root / f"qrels-{kind}.tsv")
    queries = [
        (q["id"], q["query"], {"project": q["scope"]})
        for q in _jsonl(root / "queries.jsonl")
        if q["id"] in qrels
    ]
    return {"docs": docs, "queries": queries, "qrels": qrels}


def cosqa(split: str) -> dict[str, Any]:
    """CoSQA dev: each Python function is an observation titled by its name, the code as narrative."""
    root = DATA / "cosqa-dev"
    docs = [
        (
            c["id"],
            {
                "title": c["function"] or c["code"].split("\n", 1)[0][:200],
                "narrative": c["code"],
                "type": "discovery",
                "project": "code",
            },
        )
        for c in _jsonl(root / "code.jsonl")
    ]
    qrels = _qrels(root / "qrels.tsv")
    queries = [(q["id"], q["query"], None) for q in _jsonl(root / "queries.jsonl") if q["id"] in qrels]
    return {"docs": docs, "queries": queries, "qrels": qrels}


STDLIB_SKIP = {"test", "tests", "idlelib", "lib2to3", "site-packages", "turtledemo", "ensurepip", "pydoc_data",
               "tkinter", "distutils"}  # fmt: skip


def stdlib_code(split: str, max_docs: int = 4000, n_queries: int = 400, seed: int = 13) -> dict[str, Any]:
    """Python's own standard library as a second set of code (CodeSearchNet's construction): each function
    with a docstring becomes an observation titled by its name, its code without the docstring as
    narrative; the docstring's first sentence is the question. Built from the running interpreter's
    library (PSF licence) at run time; a fixed seed picks the functions and the questions."""
    import ast
    import random
    import re
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    found: dict[str, tuple[str, str, str, str]] = {}  # lower case (unique) -> (id, name, code, question)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if STDLIB_SKIP & set(rel.parts) or rel.name.startswith("test_"):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            if not doc or not isinstance(node.body[0], ast.Expr) or node.end_lineno is None:
                continue
            paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
            sentence = re.match(r"(.+?[.!?])(\s|$)", paragraph)
            question = (sentence.group(1) if sentence else paragraph).strip()
            if len(question.split()) < 4 or len(question) > 300 or question.lower() in found:
                continue
            first = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            docstring = node.body[0]
            body = lines[first : docstring.lineno - 1] + lines[docstring.end_lineno or 0 : node.end_lineno]
            indent = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
            code = "\n".join(line[indent:] for line in body)
            if sum(1 for line in body if line.strip()) < 3 or len(code) > 4000:
                continue
            found[question.lower()] = (f"{rel.as_posix()}:{node.lineno}", node.name, code, question)
    rng = random.Random(seed)
    picked = rng.sample(sorted(found.values()), min(max_docs, len(found)))
    docs = [(i, {"title": name, "narrative": code, "type": "discovery", "project": "code"})
            for i, name, code, _ in picked]  # fmt: skip
    asked = rng.sample(picked, min(n_queries, len(picked)))
    queries = [(f"q{n}", question, None) for n, (_, _, _, question) in enumerate(asked)]
    qrels = {f"q{n}": {i: 1} for n, (i, _, _, _) in enumerate(asked)}
    return {"docs": docs, "queries": queries, "qrels": qrels}


SETS: dict[str, Callable[[str], dict[str, Any]]] = {
    "scifact": scifact,
    "madial": madial,
    "madial-labels": lambda split: madial(split, labels=True),
    "locomo-obs": lambda split: locomo("observations"),
    "locomo-turns": lambda split: locomo("turns"),
    "cosqa": cosqa,
    "stdlib-code": stdlib_code,
}


# -- building a home through the CLI -----------------------------------------------------------------------
def cmem(home: Path, *args: str, model: str | None = None) -> str:
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": model or "none", "NO_COLOR": "1"}
    env.pop("CMEM_RERANK_MODEL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=env, cwd=REPO
    )
    if proc.returncode != 0:
        raise SystemExit(f"cmem {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def build_home(name: str, data: dict[str, Any], home: Path, model: str) -> dict[str, Any]:
    """Load the corpus with `cmem add --json` and index it; returns corpus id -> observation id and timings."""
    marker = home / "bench-ids.json"
    if marker.exists():  # a reused home: bring its index up to date (new chunker, new embedding input)
        report = json.loads(cmem(home, "index", "--json", model=model))
        if report["chunked"] or report["embedded"]:
            print(f"{name}: re-chunked {report['chunked']}, embedded {report['embedded']}", file=sys.stderr)
        return json.loads(marker.read_text())
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False, encoding="utf-8") as fh:
        for _, record in data["docs"]:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        source = fh.name
    try:
        started = time.perf_counter()
        ids = cmem(home, "add", "--json", source).split()
        add_seconds = time.perf_counter() - started
    finally:
        os.unlink(source)
    started = time.perf_counter()
    report = json.loads(cmem(home, "index", "--json", model=model))
    index_seconds = time.perf_counter() - started
    info = {
        "ids": {str(obs): corpus for obs, (corpus, _) in zip(ids, data["docs"], strict=True)},
        "add_seconds": round(add_seconds, 2),
        "index_seconds": round(index_seconds, 2),
        "docs": len(data["docs"]),
        "chunks": report["chunks_written"],
        "embedded": report["embedded"],
    }
    marker.write_text(json.dumps(info))
    print(
        f"{name}: added {len(ids)} in {add_seconds:.1f}s; indexed {report['chunks_written']} chunks "
        f"in {index_seconds:.1f}s ({len(ids) / index_seconds:.1f} docs/s end to end)",
        file=sys.stderr,
    )
    return info


# -- metrics --------------------------------------------------------------------------------------------
def ndcg(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (gain 2^grade - 1); the fusion tools score with it too."""
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def metrics(ranked: list[str], relevant: dict[str, int], k: int = 10) -> dict[str, float]:
    top = ranked[:k]
    hits = [d for d in top if d in relevant]
    rr = next((1.0 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    return {"ndcg@10": ndcg(top, relevant, k), "recall@10": len(hits) / len(relevant), "mrr@10": rr}


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]} if rows else {}


# -- running -------------------------------------------------------------------------------------------
def evaluate(
    name: str, data: dict[str, Any], home: Path, model: str, modes: list[str], dump: dict[str, Any] | None
) -> dict[str, Any]:
    from cmem_cli.core.config import load_config
    from cmem_cli.core.query import Query
    from cmem_cli.services.read.search_pipeline import search
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.store.filters import Filters
    from cmem_index.hybrid import hybrid
    from cmem_index.trace import Trace

    info = build_home(name, data, home, model)
    os.environ["CMEM_EMBED_MODEL"] = model
    config = load_config(home)
    memory = WriteService.open(config)
    id_map: dict[str, str] = info["ids"]
    results: dict[str, Any] = {}
    recorded: list[dict[str, Any]] = []  # hybrid's fusion input per query, for --dump
    by_key = corpus_keys(config, id_map)  # the index's hit keys (obs:<uid>) -> corpus ids
    for mode in modes:
        per_query, seconds = [], 0.0
        for qid, text, filters in data["queries"]:
            started = time.perf_counter()
            trace = Trace()
            if mode == "rrf":  # the baseline: plain RRF of the index's FTS5 BM25 and vector lists
                hybrid(config, text, mode="hybrid", limit=10, filters=filters, rerank=False, trace=trace)
                ranked = [by_key.get(key, "") for key in rrf(trace.lists)[:10]]
            else:  # what `cmem search --mode MODE` runs: store BM25 + index BM25 + vectors, fused
                ask = Query(text, limit=10, mode=mode, rerank=False)
                rows = search(memory, ask, Filters(**(filters or {})), trace=trace).to_json()
                ranked = [id_map.get(str(r["id"]), "") for r in rows]
                if dump is not None and mode == "hybrid":
                    recorded.append(
                        {"lists": trace.lists, "signals": {n: list(s) for n, s in trace.signals.items()}}
                    )
            seconds += time.perf_counter() - started
            per_query.append(metrics(ranked, data["qrels"].get(qid, {})))
        results[mode] = {**mean(per_query), "ms/query": round(1000 * seconds / len(data["queries"]), 1)}
        print(f"{name:8} {mode:8} {results[mode]}", file=sys.stderr)
    if dump is not None:
        dump[name] = candidates(config, data, id_map, recorded)
        dump[name]["replies"] = reply_pairs(memory.store, id_map)
    memory.close()
    return {"results": results, "build": {k: v for k, v in info.items() if k != "ids"}}


def rrf(lists: dict[str, list[tuple[str, float]]], k: float = 60.0) -> list[str]:
    """Plain reciprocal rank fusion, the baseline: each list's ranks (a key's first place in a list), scores
    thrown away; ties by key."""
    total: dict[str, float] = {}
    for items in lists.values():
        seen: set[str] = set()
        for key, _ in items:
            if key not in seen:
                seen.add(key)
                total[key] = total.get(key, 0.0) + 1.0 / (k + len(seen))
    return sorted(total, key=lambda key: (-total[key], key))


def corpus_keys(config: Any, id_map: dict[str, str]) -> dict[str, str]:
    """The index's hit key for each observation (``obs:<uid>``; front matter carries the uid, not the
    local id) -> its corpus id."""
    import apsw

    db = apsw.Connection(str(config.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = db.execute("SELECT id, uid FROM observations").fetchall()
    finally:
        db.close()
    return {f"obs:{uid}": id_map.get(str(obs), "") for obs, uid in rows}


def _corpus_signal(spec: list[Any], corpus: dict[str, str]) -> list[Any]:
    """A recorded Signal with its per-hit evidence (``Signal.evidence``) keyed by corpus id like the lists."""
    if len(spec) > 3 and spec[3]:
        return [*spec[:3], {corpus.get(key, key): value for key, value in spec[3].items()}]
    return spec


def reply_pairs(store: Any, id_map: dict[str, str]) -> dict[str, str]:
    """Every bare question's reply (the search's reply rule, cmem_cli.services.read.search_pipeline.with_replies), as
    corpus ids, so the fusion tools can replay that step too."""
    from cmem_cli.store.filters import Filters

    pairs = store.listing.replies(store.observations.all_ids(), Filters())
    return {id_map[str(q)]: id_map[str(r)] for q, r in pairs.items() if str(q) in id_map and str(r) in id_map}


def candidates(
    config: Any, data: dict[str, Any], id_map: dict[str, str], recorded: list[dict[str, Any]]
) -> dict[str, Any]:
    """Every query's fusion input as the default search saw it (fusion tuning input): each list's top
    candidates with raw scores (the store's and the index's BM25, the vectors) and what kind each list is,
    keyed by corpus id."""
    corpus = corpus_keys(config, id_map)
    out = []
    for (qid, _text, _filters), seen in zip(data["queries"], recorded, strict=True):
        lists = {
            name: [(corpus.get(key, key), raw) for key, raw in items] for name, items in seen["lists"].items()
        }
        signals = {name: _corpus_signal(spec, corpus) for name, spec in seen["signals"].items()}
        out.append(
            {
                "qid": qid,
                "relevant": data["qrels"].get(qid, {}),
                "lists": lists,
                "signals": signals,
            }
        )
    return {"queries": out}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", required=True, help="GGUF embedding model (e.g. MiniLM from cmem models import)"
    )
    parser.add_argument("--sets", default="scifact,madial,locomo-obs,locomo-turns,cosqa,stdlib-code")
    parser.add_argument("--split", default="test", help="SciFact qrels split (test or train)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--work", help="keep built homes here (reused by later runs)")
    parser.add_argument("--dump", help="write each query's fusion input (hybrid mode) to this JSON file")
    parser.add_argument(
        "--candidates",
        type=int,
        help="depth of the index's keyword and vector lists (default: the product's, 100); the default "
        "order reads only the first 100, so a deeper --dump shows what lies past them without changing "
        "the figures",
    )
    parser.add_argument(
        "--loso",
        action="store_true",
        help="then choose the fusion constants leave-one-set-out on the sets run (bench/fusion_loso.py)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args()
    if (args.dump or args.loso) and "hybrid" not in args.modes.split(","):
        parser.error("--dump and --loso record the hybrid mode's fusion input: include hybrid in --modes")
    if args.candidates is not None and args.candidates < 1:
        parser.error("--candidates must be at least 1")
    if args.candidates:
        import cmem_index.hybrid

        cmem_index.hybrid.CANDIDATES = args.candidates
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cmem-bench-"))
    dump: dict[str, Any] | None = {} if args.dump or args.loso else None
    report: dict[str, Any] = {}
    for name in args.sets.split(","):
        data = SETS[name](args.split)
        report[name] = evaluate(name, data, work / name, args.model, args.modes.split(","), dump)
    if dump is not None and args.dump:
        Path(args.dump).write_text(json.dumps(dump))
    loso = leave_one_set_out(dump or {}) if args.loso else None
    if args.json:
        print(json.dumps({**report, "leave_one_set_out": loso} if loso else report, indent=2))
        return
    for name, entry in report.items():
        print(f"\n{name} ({entry['build']})")
        print(f"{'mode':10}{'nDCG@10':>10}{'R@10':>8}{'MRR':>8}{'ms/q':>8}")
        for mode, row in entry["results"].items():
            print(
                f"{mode:10}{row['ndcg@10']:>10.3f}{row['recall@10']:>8.3f}{row['mrr@10']:>8.3f}"
                f"{row['ms/query']:>8.1f}"
            )
    if loso:
        from bench import fusion_loso

        print("\nleave one set out (each query's recorded hybrid lists, re-fused):")
        fusion_loso.print_report(loso)


def leave_one_set_out(dump: dict[str, Any]) -> dict[str, Any]:
    """bench/fusion_loso.py's report on the fusion input just recorded."""
    from bench import fusion_loso

    return fusion_loso.report({name: fusion_loso.judged(entry) for name, entry in dump.items()})


if __name__ == "__main__":
    main()
