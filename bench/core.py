#!/usr/bin/env python3
"""Benchmark the core: whole-process latency of `cmem add/search/get/--version` at several store sizes,
bulk import rate (including the markdown export) and database size.

    python -m bench.core                 # 1k, 10k and 100k observations
    python -m bench.core --sizes 1000    # quicker

Each command runs as a fresh process, as hooks and scripts run it. Bytecode caching is enabled (as in a normal
install), and each timing is the median of --runs runs after one warm-up. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "auth",
    "token",
    "cache",
    "refresh",
    "race",
    "retry",
    "queue",
    "worker",
    "deploy",
    "rollback",
    "migration",
    "schema",
    "index",
    "query",
    "planner",
    "parser",
    "lexer",
    "config",
    "env",
    "secret",
    "vault",
    "webhook",
    "payment",
    "invoice",
    "ledger",
    "cron",
    "scheduler",
    "timeout",
    "socket",
    "pool",
    "deadlock",
    "mutex",
    "thread",
    "async",
    "await",
    "promise",
    "callback",
    "handler",
    "router",
    "middleware",
    "session",
    "cookie",
    "jwt",
    "oauth",
    "login",
    "logout",
    "signup",
    "email",
    "smtp",
    "template",
    "render",
    "layout",
    "css",
    "grid",
    "flex",
    "bundle",
    "webpack",
    "vite",
    "build",
    "test",
    "fixture",
    "mock",
    "snapshot",
    "coverage",
    "lint",
    "format",
    "typecheck",
    "compiler",
    "linker",
    "docker",
    "image",
    "kubernetes",
    "helm",
]
TYPES = ["decision", "bugfix", "feature", "refactor", "discovery", "change", "error", "insight", "question"]


def synthetic(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    records = []
    start = 1_735_689_600_000  # 2025-01-01
    for i in range(n):
        words = rng.sample(WORDS, 8)
        records.append(
            {
                "type": rng.choice(TYPES),
                "title": f"{words[0].title()} {words[1]} {words[2]} in {words[3]}Handler",
                "subtitle": f"{words[4]} {words[5]}",
                "narrative": " ".join(rng.choice(WORDS) for _ in range(60)),
                "facts": [" ".join(rng.sample(WORDS, 5)) for _ in range(3)],
                "concepts": words[6:8],
                "files_modified": [f"src/{words[0]}/{words[1]}_{i % 97}.ts"],
                "project": f"proj{i % 5}",
                "session": f"session-{i // 40}",
                "agent": "bench",
                "created_at": start + i * 60_000,
            }
        )
    return records


PYTHON = [sys.executable]  # --python: the interpreter whose cmem is timed


def run(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*PYTHON, "-m", "cmem_cli", *args],
        env=env,
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"cmem {' '.join(args)} failed: {proc.stderr.decode()}")
    return elapsed


def median_ms(args: list[str], env: dict[str, str], runs: int) -> float:
    run(args, env)
    return statistics.median(run(args, env) for _ in range(runs)) * 1000


def bench_size(n: int, runs: int, base_env: dict[str, str]) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"cmem-bench-{n}-"))
    env = {**base_env, "CMEM_HOME": str(home)}
    try:
        payload = "\n".join(json.dumps(r) for r in synthetic(n)).encode()
        t0 = time.perf_counter()
        run(["add", "--json", "-"], env, stdin=payload)
        import_s = time.perf_counter() - t0
        row = {
            "observations": n,
            "import_per_s": n / import_s,
            "version_ms": median_ms(["--version"], env, runs),
            "add_ms": median_ms(
                ["add", "--title", "Benchmark add of one observation", "--project", "proj1"], env, runs
            ),
            "search_ms": median_ms(["search", "token refresh race", "--format", "plain"], env, runs),
            "search_filtered_ms": median_ms(
                ["search", "deadlock", "--project", "proj2", "--type", "bugfix", "--since", "2025-01-02"],
                env,
                runs,
            ),
            "get_ms": median_ms(["get", str(max(1, n // 2))], env, runs),
            "db_mb": (home / "cmem.db").stat().st_size / 1e6,
            "export_mb": sum(p.stat().st_size for p in (home / "export").rglob("*.md")) / 1e6,
        }
        return row
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs `-m cmem_cli` (default: this one); e.g. a venv with a regular install",
    )
    args = parser.parse_args()
    PYTHON[:] = [args.python]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CMEM_EMBED_MODEL"] = "none"
    rows = [bench_size(int(s), args.runs, env) for s in args.sizes.split(",")]
    print(
        "| observations | bulk import (obs/s) | `--version` ms | `add` ms | `search` ms | filtered search ms "
        "| `get` ms | cmem.db MB | export MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['observations']:,} | {r['import_per_s']:,.0f} | {r['version_ms']:.0f} | {r['add_ms']:.0f} | "
            f"{r['search_ms']:.0f} | {r['search_filtered_ms']:.0f} | {r['get_ms']:.0f} | {r['db_mb']:.1f} | "
            f"{r['export_mb']:.1f} |"
        )


if __name__ == "__main__":
    main()
