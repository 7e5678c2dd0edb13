"""A year of memory and more: cmem at 200,000 and 1,000,000 observations, every figure of issue 26 in one table.

Builds stores of synthetic observations (bench/scale_corpus.py: deterministic, two thirds hook captures, one
third written notes, Zipf-distributed words) and times whole processes, as hooks and scripts run them. Every
latency is taken in pairs with Python's own start-up (``python -c pass``, same interpreter, alternating), and
reported as the median of the pairwise ratios besides the median times: ratios stay meaningful on a busy
machine. Bytecode caching is on, as in an install; the interpreter is this one (``--python`` another).

    python -m bench.scale --work /tmp/scale --vectors /tmp/scale/vectors.npz   # 200k and 1M (hours)
    python -m bench.scale --work /tmp/scale --sizes 200000 --only search,maintenance

Phases (``--only``): ``import`` (10k records into an empty home three times, and ``--import-big`` records once,
each home removed after), ``search`` (keyword, filtered, context, get, hooks), ``index`` (keyword index: the
first build, then `cmem index` after 1,000 new observations), ``vectors`` (every chunk given a vector under the
real model's fingerprint, from real MiniLM vectors of other texts, cycled with noise: computing a million takes
a day on 2 cores; hybrid search, the query embedded by the model; recall@10 of compact against exact search on
that index; `cmem index` after 1,000 new observations, embedding them with the model), ``maintenance`` (doctor,
export --rebuild, a no-op sync to a local bare repository), ``disk``, ``embed`` (embedding rate of short
observations as the indexer gives them to the model, against every observation embedded whole), ``small``
(20k observations with a vector each: hybrid search), ``recall`` (compact against exact search on the real
vectors alone). The stores stay in ``--work`` for the next run (``--fresh`` rebuilds them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from bench.scale_corpus import PER_DAY, START_MS, ndjson, records  # noqa: E402

QUERIES = [
    "token refresh race",
    "deadlock in the worker pool",
    "webhook retry backoff",
    "kubernetes helm rollout",
    "parser error in the lexer",
]
FILTERED = ["deadlock", "--project", "api", "--type", "bugfix"]
NEW = 1_000  # observations added before the incremental `cmem index`
BATCH = 100_000  # records per `cmem add --json` when building a store larger than 200k
RECALL_QUERIES = 50  # real queries for recall@10 on a filled index (exact search of 1M vectors: ~1 s each)
PHASES = ("import", "search", "index", "vectors", "maintenance", "disk", "embed", "small", "recall")


class Run:
    """Whole processes of one interpreter against one home, with their wall and CPU time and peak memory."""

    def __init__(self, python: str, home: Path, runs: int, model: str = "none"):
        self.python = python
        self.home = home
        self.runs = runs
        self.cwd = home.parent  # not a git work tree: observations get no code anchors
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "CMEM_PROJECT")
        }
        # no background index pass: the benchmark times each `cmem index` itself
        self.env.update(
            CMEM_HOME=str(home), CMEM_EMBED_MODEL=model, HOME=str(home.parent), CMEM_INDEX_BACKGROUND="off"
        )

    def with_model(self, model: str) -> Run:
        return Run(self.python, self.home, self.runs, model)

    def once(
        self, args: list[str], stdin: Path | bytes | None = None, *, cmem: bool = True
    ) -> dict[str, float]:
        """One process: wall and CPU seconds, peak memory (MiB); a failure stops the benchmark."""
        argv = [self.python, "-m", "cmem_cli", *args] if cmem else [self.python, *args]
        with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as feed:
            if isinstance(stdin, bytes):
                feed.write(stdin)
                feed.seek(0)
            source = open(stdin, "rb") if isinstance(stdin, Path) else feed  # noqa: SIM115
            try:
                started = time.perf_counter()
                proc = subprocess.Popen(
                    argv, stdin=source, stdout=subprocess.DEVNULL, stderr=err, env=self.env, cwd=self.cwd
                )
                _, status, usage = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - started
            finally:
                if source is not feed:
                    source.close()
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode not in (0, 10):  # 10: search found nothing
                err.seek(0)
                raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {err.read().decode()[-1500:]}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024}

    def paired(self, args: list[str], stdin: bytes | None = None) -> dict[str, float]:
        """Median wall and CPU ms of ``cmem ARGS`` and of ``python -c pass`` run alternately, and the median
        of their pairwise ratios (after one warm-up of each)."""
        self.once(["-c", "pass"], cmem=False)
        self.once(args, stdin)
        pairs = []
        for _ in range(self.runs):
            floor = self.once(["-c", "pass"], cmem=False)
            cost = self.once(args, stdin)
            pairs.append((floor, cost))
        return {
            "ms": statistics.median(c["wall"] for _, c in pairs) * 1000,
            "cpu_ms": statistics.median(c["cpu"] for _, c in pairs) * 1000,
            "python_ms": statistics.median(f["wall"] for f, _ in pairs) * 1000,
            "ratio": statistics.median(c["wall"] / f["wall"] for f, c in pairs),
            "cpu_ratio": statistics.median(c["cpu"] / max(f["cpu"], 1e-3) for f, c in pairs),
        }


# -- building stores ----------------------------------------------------------------------------------------
def write_records(path: Path, count: int, start: int = 0) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(ndjson(count, start))
    return path


def import_records(run: Run, work: Path, count: int, start: int, batch: int) -> dict[str, float]:
    """`cmem add --json` of records ``start``.. in calls of ``batch``: observations per second of the whole
    (wall, and per CPU second of the process)."""
    wall = cpu = rss = 0.0
    for offset in range(start, start + count, batch):
        size = min(batch, start + count - offset)
        source = write_records(work / f"records-{os.getpid()}.ndjson", size, offset)
        took = run.once(["add", "--json", str(source)])
        wall, cpu, rss = wall + took["wall"], cpu + took["cpu"], max(rss, took["rss"])
        source.unlink()
        print(f"  imported {offset + size - start:,}/{count:,} ({(offset + size - start) / wall:,.0f}/s)",
              file=sys.stderr)  # fmt: skip
    return {"per_s": count / wall, "per_cpu_s": count / cpu, "rss": rss, "seconds": wall}


def marker(home: Path, name: str) -> Path:
    """Where the benchmark notes what a home already holds (beside it: the home stays as cmem keeps it)."""
    return home.with_name(f"{home.name}.{name}")


def new_home(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
    for old in home.parent.glob(f"{home.name}.*"):
        old.unlink()
    home.mkdir(parents=True, mode=0o700)


def ensure_store(run: Run, work: Path, n: int, fresh: bool) -> None:
    """A home of the first ``n`` records (built once: batches of 100k bound the import's memory)."""
    built = marker(run.home, "built")
    if built.exists() and not fresh:
        return
    new_home(run.home)
    result = import_records(run, work, n, 0, min(n, BATCH) if n > 200_000 else n)
    built.write_text(json.dumps(result))


def _extra(run: Run) -> int:
    """How many generator records beyond ``n`` the home holds already (earlier runs' additions)."""
    extra = marker(run.home, "extra")
    done = int(extra.read_text()) if extra.exists() else 0
    extra.write_text(str(done + NEW))
    return done


# -- phases --------------------------------------------------------------------------------------------------
def phase_import(python: str, work: Path, runs: int, big: int) -> dict[str, Any]:
    """10k records into an empty home, three times (the median rate), and ``big`` records once."""
    out: dict[str, Any] = {}
    home = work / "h-import"
    rates = []
    for _ in range(3):
        new_home(home)
        rates.append(import_records(Run(python, home, runs), work, 10_000, 0, 10_000))
    out["bulk import 10k"] = min(
        rates, key=lambda r: abs(r["per_s"] - statistics.median(x["per_s"] for x in rates))
    )
    if big:
        new_home(home)
        out[f"bulk import {big // 1000}k"] = import_records(Run(python, home, runs), work, big, 0, big)
    new_home(home)
    home.rmdir()
    return out


def since_recent(n: int, days: int = 30) -> str:
    newest = START_MS + n * (86_400_000 // PER_DAY)
    return time.strftime("%Y-%m-%d", time.gmtime((newest - days * 86_400_000) / 1000))


def hook_payload(event: str, n: int, cwd: str) -> bytes:
    base = {"session_id": f"s{n // 45:07d}", "cwd": f"{cwd}/api", "hook_event_name": event}
    if event == "PostToolUse":
        base.update(tool_name="Edit", tool_use_id=f"toolu_scale_{time.time_ns()}",
                    tool_input={"file_path": f"{cwd}/api/src/app.py", "old_string": "a", "new_string": "b"},
                    tool_response={})  # fmt: skip
    elif event == "UserPromptSubmit":
        base.update(prompt=f"Make the retry backoff configurable ({time.time_ns()})")
    elif event == "SessionStart":
        base.update(source="startup")
    return json.dumps(base).encode()


def phase_search(run: Run, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["--version"] = run.paired(["--version"])
    out["keyword search"] = _median_of([run.paired(["search", q, "--format", "plain"]) for q in QUERIES])
    out["filtered search"] = run.paired(
        ["search", *FILTERED, "--since", since_recent(n), "--format", "plain"]
    )
    out["filtered search, no window"] = run.paired(["search", *FILTERED, "--format", "plain"])
    out["context"] = run.paired(["context", "--project", "api"])
    out["get"] = run.paired(["get", str(n // 2)])
    for event in ("PostToolUse", "UserPromptSubmit", "SessionStart"):
        out[f"hook {event}"] = run.paired(["hook", event], hook_payload(event, n, str(run.cwd)))
    return out


def _median_of(results: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def phase_index(run: Run, work: Path, n: int) -> dict[str, Any]:
    """The keyword index (no model): first build, then `cmem index` after NEW more observations."""
    out: dict[str, Any] = {}
    first = marker(run.home, "index-first")
    if not (run.home / "index.db").exists():
        first.write_text(json.dumps(run.once(["index"])))
    if first.exists():
        out["index, first build (keyword)"] = json.loads(first.read_text())
    out["add 1,000 (one call)"] = import_records(run, work, NEW, n + _extra(run), NEW)
    out["index after 1,000 new (keyword)"] = run.once(["index"])
    out["index, nothing new (keyword)"] = run.once(["index"])
    return out


def phase_vectors(run: Run, work: Path, n: int, model: Path, vectors: Path) -> dict[str, Any]:
    """The index with the model (vectors lent: :class:`LentVectors`), then hybrid search, recall of compact against
    exact search, and an incremental index run that embeds NEW observations with the model."""
    out: dict[str, Any] = {}
    filled = marker(run.home, "vectors")
    if not filled.exists():
        filled.write_text(json.dumps(index_lent(run.home, model, vectors)))
    out["index with the model added (vectors lent)"] = {**json.loads(filled.read_text()), "rss": 0.0}
    with_model = run.with_model(str(model))
    out["hybrid search"] = _median_of(
        [with_model.paired(["search", q, "--format", "plain"]) for q in QUERIES]
    )
    out["hybrid search, filtered"] = with_model.paired(["search", *FILTERED, "--format", "plain"])
    out["recall@10, compact vs exact (this index)"] = index_recall(run.home / "index.db", vectors)
    import_records(run, work, NEW, n + _extra(run), NEW)
    took = with_model.once(["index"])
    report = _last_run(run.home)
    out["index after 1,000 new (embedded)"] = {**took, "embedded": report.get("embedded"),
                                               "embed_seconds": report.get("embed_seconds")}  # fmt: skip
    return out


def _last_run(home: Path) -> dict[str, Any]:
    from cmem_index.store import IndexStore

    store = IndexStore.open(home / "index.db", readonly=True)
    try:
        return store.settings.get_json("last_run") or {}
    finally:
        store.close()


class LentVectors:
    """The real model as the indexer sees it (its fingerprint, tokenizer and token budget, so documents are
    chunked exactly as `cmem index` with the model chunks them) except that its vectors are lent: real
    MiniLM vectors of other texts, drawn at random with a little noise. Embedding a million chunks would
    take a day on 2 cores; search costs the same whatever the vectors say."""

    def __init__(self, embedder: Any, vectors: Path):
        import numpy as np

        self._embedder = embedder
        self._real = np.load(vectors)["documents"]
        self._rng = np.random.default_rng(26)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_documents(self, items: Any) -> Any:
        import numpy as np

        picks = self._real[self._rng.integers(0, len(self._real), len(items))]
        noisy = picks + self._rng.normal(0, 0.02, picks.shape).astype(np.float32)
        return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def index_lent(home: Path, model: Path, vectors: Path) -> dict[str, Any]:
    """`cmem index` of ``home`` with the model, its vectors lent (:class:`LentVectors`): the index a user
    would have, built in the time it takes to read and chunk the collection."""
    from cmem_cli.core.config import load_config
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.loading import LazyEmbedder
    from cmem_index.refresh import remember_model
    from cmem_index.store import IndexStore

    saved = {k: os.environ.get(k) for k in ("CMEM_HOME", "CMEM_EMBED_MODEL")}
    os.environ.update(CMEM_HOME=str(home), CMEM_EMBED_MODEL=str(model))
    try:
        config = load_config()
        embedder = LazyEmbedder(model)
        started, cpu = time.perf_counter(), time.process_time()
        store = IndexStore.open(config.index_path)
        try:
            report = Indexer(store, load_collections(config), LentVectors(embedder, vectors)).run()
        finally:
            store.close()
        remember_model(config, embedder.describe())
        took = {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}
        print(f"  indexed with lent vectors: {report.to_json()}", file=sys.stderr)
        return took
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def index_recall(index_path: Path, vectors: Path, count: int = RECALL_QUERIES) -> dict[str, float]:
    """Recall@10 of cmem's compact search against exact float32 search on an index's own vectors, for real
    queries, and the CPU time of each (through cmem_index.retrieve, the code `cmem search` runs)."""
    import numpy as np

    from cmem_index import retrieve
    from cmem_index.retrieve import DocFilters
    from cmem_index.store import IndexStore

    queries = np.load(vectors)["queries"][:count]
    store = IndexStore.open(index_path, readonly=True)
    try:
        return _recall(store, queries, retrieve, DocFilters())
    finally:
        store.close()


def _recall(store: Any, queries: Any, retrieve: Any, filters: Any) -> dict[str, float]:
    hits, exact_s, compact_s = [], [], []
    for q in queries:
        started = time.process_time()
        truth = [r[0] for r in retrieve.exact_nearest(store, q.tobytes(), filters, 10)]
        exact_s.append(time.process_time() - started)
        started = time.process_time()
        found = [r[0] for r in retrieve.compact_nearest(store, q.tobytes(), filters, 10)]
        compact_s.append(time.process_time() - started)
        hits.append(len(set(found) & set(truth)) / len(truth))
    return {
        "recall": statistics.mean(hits),
        "queries": len(hits),
        "exact_ms": statistics.median(exact_s) * 1000,
        "compact_ms": statistics.median(compact_s) * 1000,
    }


def phase_recall(work: Path, vectors: Path, lent: int) -> dict[str, Any]:
    """Compact against exact search on the real MiniLM vectors alone (no synthetic copies), compact forced;
    and on an index of ``lent`` vectors drawn from them with noise (:class:`LentVectors`), as a million-chunk
    index holds: recall@10 and the CPU time of a query's vector search, exact and compact."""
    import numpy as np

    data = np.load(vectors)
    out = {
        f"recall@10, compact vs exact ({len(data['documents']):,} real vectors)": _recall_on(
            work, data["documents"], data["queries"][:500]
        )
    }
    if lent:
        rng = np.random.default_rng(26)
        picks = data["documents"][rng.integers(0, len(data["documents"]), lent)]
        picks += rng.normal(0, 0.02, picks.shape).astype(np.float32)
        picks /= np.linalg.norm(picks, axis=1, keepdims=True)
        name = f"recall@10 and vector search, {lent:,} chunks (lent vectors)"
        out[name] = _recall_on(work, picks, data["queries"][:RECALL_QUERIES])
    return out


def _recall_on(work: Path, documents: Any, queries: Any) -> dict[str, float]:
    from bench.compact_recall import build_index
    from cmem_index import retrieve
    from cmem_index.retrieve import DocFilters

    path = work / "recall-index.db"
    for old in work.glob("recall-index.db*"):
        old.unlink()
    store = build_index(path, documents)
    limit = retrieve.COMPACT_ABOVE
    try:
        retrieve.COMPACT_ABOVE = 0
        return _recall(store, queries, retrieve, DocFilters())
    finally:
        retrieve.COMPACT_ABOVE = limit
        store.close()
        for old in work.glob("recall-index.db*"):
            old.unlink()


def phase_maintenance(run: Run, work: Path, sync: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "doctor": run.once(["doctor"]),  # the quick check: files compared with cmem's record by stat
        "doctor --full": run.once(["doctor", "--full"]),  # every memory rendered and compared
        "export --rebuild": run.once(["export", "--rebuild"]),
    }
    if sync:
        remote = work / f"remote-{run.home.name}.git"
        first = marker(run.home, "sync-init")
        if not remote.exists():
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
            print("  cmem sync init (commits every file once)...", file=sys.stderr)
            first.write_text(json.dumps(run.once(["sync", "init", str(remote)])))
        if first.exists():
            out["sync init (first commit of every file)"] = json.loads(first.read_text())
        run.once(["sync"])
        out["sync, nothing new"] = _median_of([run.once(["sync"]) for _ in range(3)])
    return out


def phase_disk(home: Path, n: int) -> dict[str, Any]:
    def files(root: Path) -> Iterable[os.stat_result]:
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in names:
                yield os.stat(os.path.join(folder, name))

    export = list(files(home / "export"))
    return {
        "disk: store (cmem.db) B/obs": _sizes(home, "cmem.db") / n,
        "disk: export B/obs (file bytes)": sum(s.st_size for s in export) / n,
        "disk: export B/obs (blocks used)": sum(s.st_blocks * 512 for s in export) / n,
        "disk: index (index.db) B/obs": _sizes(home, "index.db") / n,
    }


def _sizes(home: Path, name: str) -> int:
    """Bytes of a database with its write-ahead log (not the backups a migration leaves beside it)."""
    paths = [home / name, home / f"{name}-wal", home / f"{name}-shm"]
    return sum(p.stat().st_size for p in paths if p.exists())


def phase_embed(model: Path, count: int = 2_000) -> dict[str, Any]:
    """Embedding rate of short observations as the indexer feeds them (captures by title alone, written notes
    by title and text, a repeated text once), against every observation embedded whole."""
    from cmem_index.embedder import Embedder
    from cmem_index.indexer import embedding_input

    embedder = Embedder.load(model)
    sample = list(records(count, 500_000))
    as_indexed, whole = [], []
    for r in sample:
        text = "\n".join(filter(None, [r.get("subtitle"), *r.get("facts", []), r.get("narrative")]))
        context, body = embedding_input(r["title"], r["title"], text)
        whole.append((context, body))
        as_indexed.append((context, "") if r.get("tools_used") else (context, body))
    embedder.embed_documents(as_indexed[:32])
    out: dict[str, Any] = {}
    for name, items in (("as indexed", as_indexed), ("every observation whole", whole)):
        distinct = list(dict.fromkeys(items))  # the cache embeds one text once
        started = time.perf_counter()
        cpu = time.process_time()
        for start in range(0, len(distinct), 64):
            embedder.embed_documents(distinct[start : start + 64])
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        out[f"embedding, {name}"] = {
            "obs_per_s": count / seconds,
            "cores_busy": cpu / seconds,
            "distinct": len(distinct),
            "hours_per_million": 1_000_000 / (count / seconds) / 3600,
        }
    return out


def phase_small(
    python: str, work: Path, runs: int, model: Path, vectors: Path, n: int = 20_000
) -> dict[str, Any]:
    """Hybrid search in a store of ``n`` observations each with a vector (exact search: below COMPACT_ABOVE)."""
    home = work / f"h{n // 1000}k-indexed"
    run = Run(python, home, runs)
    built = marker(home, "built")
    if not built.exists():
        new_home(home)
        import_records(run, work, n, 0, n)
        index_lent(home, model, vectors)
        built.write_text("done")
    with_model = run.with_model(str(model))
    per_query = [with_model.paired(["search", q, "--format", "plain"]) for q in QUERIES]
    return {f"hybrid search, {n // 1000}k indexed": _median_of(per_query)}


# -- report --------------------------------------------------------------------------------------------------
# The targets, by figure name; a ratio is to Python's start-up measured in the same pairs.
TARGETS: dict[str, tuple[str, Any]] = {
    "bulk import": (">= 2,000/s", lambda v: v["per_s"] >= 2000),
    "hook PostToolUse": ("<= 2.5x (200k)", lambda v: v["ratio"] <= 2.5),
    "hook UserPromptSubmit": ("<= 2.5x (200k)", lambda v: v["ratio"] <= 2.5),
    "hook SessionStart": ("<= 2.5x (200k)", lambda v: v["ratio"] <= 2.5),
    "keyword search": ("<= 6x at 200k, <= 10x at 1M", None),
    "filtered search": ("<= 3x", lambda v: v["ratio"] <= 3),
    "context": ("<= 4x (200k)", lambda v: v["ratio"] <= 4),
    "hybrid search, 20k indexed": ("<= 8x", lambda v: v["ratio"] <= 8),
    "hybrid search": ("< 1 s (1M)", lambda v: v["ms"] < 1000),
    "recall@10": (">= 0.95", lambda v: v["recall"] >= 0.95),
    "doctor --full": ("", None),
    "doctor": ("< 60 s (1M)", lambda v: v["wall"] < 60),
    "sync, nothing new": ("< 3 s (200k)", lambda v: v["wall"] < 3),
    "index after 1,000 new (embedded)": ("seconds + embedding", None),
}


def _target(name: str, n: int | None, value: Any) -> tuple[str, str]:
    for prefix, (text, check) in TARGETS.items():
        if name.startswith(prefix) and "no window" not in name:
            if prefix == "keyword search" and n:
                limit = 6 if n <= 200_000 else 10
                return text, "yes" if value["ratio"] <= limit else "**no**"
            if "(200k)" in text and n != 200_000 or "(1M)" in text and n != 1_000_000:
                return text, ""
            return text, ("yes" if check(value) else "**no**") if check else ""
    return "", ""


def print_table(rows: list[tuple[str, int | None, Any]]) -> None:
    print("| figure | store | target | measured | met |")
    print("|---|---:|---|---|---|")
    for name, n, value in rows:
        target, met = _target(name, n, value)
        print(f"| {name} | {f'{n:,}' if n else ''} | {target} | {_cell(value)} | {met} |")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        if "ratio" in value:
            return (f"{value['ms']:.0f} ms = {value['ratio']:.1f}x Python's {value['python_ms']:.0f} ms "
                    f"(CPU {value['cpu_ms']:.0f} ms = {value['cpu_ratio']:.1f}x)")  # fmt: skip
        if "per_s" in value:
            return (f"{value['per_s']:,.0f}/s wall, {value['per_cpu_s']:,.0f}/CPU-s "
                    f"({value['seconds']:.0f} s, peak {value['rss']:,.0f} MiB)")  # fmt: skip
        if "recall" in value:
            return (f"{value['recall']:.3f} ({value['queries']} queries; exact {value['exact_ms']:.0f} ms, "
                    f"compact {value['compact_ms']:.0f} ms CPU a query)")  # fmt: skip
        if "obs_per_s" in value:
            return (f"{value['obs_per_s']:,.0f} obs/s ({value['distinct']:,} distinct texts, "
                    f"{value['cores_busy']:.1f} cores busy): {value['hours_per_million']:.1f} h a million")  # fmt: skip
        if "wall" in value:
            extra = ""
            if value.get("embedded") is not None:
                extra = f"; {value['embedded']} embedded in {value.get('embed_seconds') or 0:.1f} s"
            peak = f", peak {value['rss']:,.0f} MiB" if value.get("rss") else ""
            return f"{value['wall']:.1f} s (CPU {value['cpu']:.1f} s{peak}{extra})"
        if "seconds" in value:
            return f"{value['seconds']:.0f} s"
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:,.0f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="folder for the homes (~15 GB at 1M)")
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--only", default=",".join(PHASES), help=f"phases, of: {', '.join(PHASES)}")
    parser.add_argument("--runs", type=int, default=7, help="timed pairs per command")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `-m cmem_cli`")
    parser.add_argument(
        "--vectors", type=Path, help="the .npz of bench/real_vectors.py (vectors, small, recall)"
    )
    parser.add_argument(
        "--import-big", type=int, default=200_000, help="records of the one large import (0: none)"
    )
    parser.add_argument(
        "--recall-lent", type=int, default=1_000_000, help="chunks of the lent-vector recall index"
    )
    parser.add_argument("--no-sync", action="store_true", help="skip the sync figures (git add of N files)")
    parser.add_argument("--fresh", action="store_true", help="rebuild the stores")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="print one table from the --json of earlier runs (a later file's figure replaces an earlier one)",
    )
    args = parser.parse_args()
    if args.merge:
        latest: dict[tuple[str, int | None], Any] = {}  # a figure measured again replaces the earlier one
        for path in args.merge:
            for name, n, value in json.loads(path.read_text()):
                latest[(name, n)] = value
        print_table([(name, n, value) for (name, n), value in latest.items()])
        return 0
    if args.work is None:
        parser.error("--work is required (unless --merge)")
    phases = set(args.only.split(","))
    if unknown := phases - set(PHASES):
        parser.error(f"unknown phase(s): {', '.join(sorted(unknown))}")
    if phases & {"vectors", "small", "recall"} and not args.vectors:
        parser.error(
            "phases vectors, small and recall need --vectors (python -m bench.real_vectors --out FILE)"
        )
    args.work.mkdir(parents=True, exist_ok=True)
    model = None
    if phases & {"vectors", "embed", "small"}:
        from tests.model_fixtures import build_minilm_gguf

        model = build_minilm_gguf(args.work)
    rows: list[tuple[str, int | None, Any]] = []
    load = [os.getloadavg()[0]]

    def add(figures: dict[str, Any], n: int | None) -> None:
        rows.extend((name, n, value) for name, value in figures.items())
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1, default=str))

    if "import" in phases:
        add(phase_import(args.python, args.work, args.runs, args.import_big), None)
    if "recall" in phases:
        add(phase_recall(args.work, args.vectors, args.recall_lent), None)
    if "embed" in phases and model is not None:
        add(phase_embed(model), None)
    if "small" in phases and model is not None:
        add(phase_small(args.python, args.work, args.runs, model, args.vectors), 20_000)
    for n in [int(s) for s in args.sizes.split(",") if s]:
        run = Run(args.python, args.work / f"h{n // 1000}k", args.runs)
        print(f"{n:,} observations in {run.home}", file=sys.stderr)
        ensure_store(run, args.work, n, args.fresh)
        if "search" in phases:
            add(phase_search(run, n), n)
        if "index" in phases:
            add(phase_index(run, args.work, n), n)
        if "vectors" in phases and model is not None:
            add(phase_vectors(run, args.work, n, model, args.vectors), n)
        if "maintenance" in phases:
            add(phase_maintenance(run, args.work, sync=not args.no_sync), n)
        if "disk" in phases:
            add(phase_disk(run.home, n), n)
        load.append(os.getloadavg()[0])
    print(f"\nload average (1 min) through the run: {', '.join(f'{x:.1f}' for x in load)}; "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
