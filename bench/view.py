#!/usr/bin/env python3
"""Benchmark `cmem view`: the time to write the page and its size per observation for pages of 1,000, 2,000
(the default cap) and 10,000 observations out of a large store, and the page's time to first render in
headless Chromium.

    python -m bench.view                          # a 1,000,000-observation store (built once, a few minutes)
    python -m bench.view --store 20000 --runs 3   # quicker
    python -m bench.view --home DIR               # build the store in DIR (kept), or reuse one built there

The store is synthetic and deterministic: one year of work, 90% of it in the project the page shows (so its
last 30 days hold ~74,000 observations at 1M and the default page is capped), sessions of 40 observations
with a prompt and a summary each, a link every 20 observations; records as hooks and agents write them (a
title, a subtitle, a 30-word narrative, three facts, two concepts, a file). It is written into the database
directly (no markdown export: `cmem view` reads only the database). Each `cmem view` runs as a fresh process
(median of --runs after one warm-up; wall time and CPU time, user + system, which does not grow when other
processes share the cores), with `python -c pass` timed alongside as the yardstick. Rendering: the
page opens in a fresh tab of one headless Chromium (tests/chromium.py); "rows built" is when the page's
script had put every row in the document, "first frame with rows" when the first frame showing them was
painted (the page's own performance marks), both from the start of the navigation; median of --runs. Prints a markdown table (docs/view.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROJECT = "webapp"
DAY_MS = 86_400_000
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
    "config",
    "secret",
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
    "handler",
    "router",
    "middleware",
    "session",
    "cookie",
    "jwt",
    "oauth",
    "login",
    "email",
    "template",
    "render",
    "layout",
    "bundle",
    "build",
    "test",
    "fixture",
    "mock",
    "snapshot",
    "coverage",
    "lint",
    "compiler",
    "docker",
    "image",
    "kubernetes",
]
TYPES = ("decision", "bugfix", "feature", "refactor", "discovery", "change", "error", "insight", "question")
PAGES = (1_000, 2_000, 10_000)  # 2,000: the default --limit


def build_store(home: Path, count: int, seed: int = 7) -> None:
    """``count`` synthetic observations over the year before now, written straight into the store."""
    from cmem_cli.core.config import load_config
    from cmem_cli.store.repository import Store

    config = load_config(home)
    config.ensure_home()
    store = Store.open(config.db_path)
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    start = now - 365 * DAY_MS
    step = (now - start) // count
    observations, sessions, prompts, summaries, links = [], [], [], [], []
    for i in range(count):
        words = rng.sample(WORDS, 8)
        when = start + i * step
        project = PROJECT if i % 10 else "billing"
        session = f"bench-session-{i // 40:07d}"
        if i % 40 == 0:
            sessions.append((session, "claude-code", project, f"Work on {words[0]}", when, when))
            prompts.append(
                (f"P{i:025d}", session, 1, f"why does the {words[0]} {words[1]} fail?", project, when)
            )
        if i % 40 == 39:
            summaries.append(
                (f"S{i:025d}", session, project, f"fixed {words[2]}", f"check {words[3]}", when + 1)
            )
        if i % 20 == 19:
            links.append((i + 1, i, "led_to", when))
        observations.append(
            (
                f"O{i:025d}", rng.choice(TYPES), f"{words[0].title()} {words[1]} {words[2]} in {words[3]}Handler",
                f"{words[4]} {words[5]}", " ".join(rng.choice(WORDS) for _ in range(30)),
                json.dumps([" ".join(rng.sample(WORDS, 4)) for _ in range(3)]), json.dumps(words[6:8]),
                json.dumps([f"src/{words[0]}/{words[1]}_{i % 97}.ts"]), project, session, "claude-code",
                when, when, 120, f"{project}/{session}/{i}.md",
            )
        )  # fmt: skip
    conn = store.db.conn
    with store.db.transaction():
        conn.executemany(
            "INSERT INTO observations (uid, type, title, subtitle, narrative, facts, concepts, files_modified, "
            "project, session, agent, created_at, updated_at, tokens, path) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            observations,
        )
        conn.executemany(
            "INSERT INTO sessions (session_id, agent, project, label, started_at, last_activity_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            sessions,
        )
        conn.executemany(
            "INSERT INTO user_prompts (uid, session, prompt_number, text, project, agent, created_at) "
            "VALUES (?, ?, ?, ?, ?, 'claude-code', ?)",
            prompts,
        )
        conn.executemany(
            "INSERT INTO session_summaries (uid, session, project, agent, learned, next_steps, created_at) "
            "VALUES (?, ?, ?, 'claude-code', ?, ?, ?)",
            summaries,
        )
        conn.executemany(
            "INSERT INTO observation_links (from_id, to_id, type, created_at) VALUES (?, ?, ?, ?)", links
        )
    store.close()


def observation_count(home: Path) -> int:
    import apsw

    conn = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(next(conn.execute("SELECT count(*) FROM observations"))[0])
    finally:
        conn.close()


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds: user + system, stdout) of one run of ``command``. The CPU time does not
    grow when other processes share the cores; the wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu, done.stdout


def render_times(path: Path, runs: int) -> tuple[float, float]:
    """Median seconds from the start of navigation until the page's script had built every row (ready) and
    until the first frame showing them was painted (drawn), in fresh tabs of one Chromium."""
    from tests.chromium import Browser

    readies, drawns = [], []
    with Browser() as browser:
        for _ in range(runs + 1):  # the first is a warm-up
            tab = browser.new_page(width=1280, height=800)
            tab.goto(path.as_uri())
            ready, drawn = tab.evaluate(
                "new Promise(done => { const check = () => {"
                " const [r, d] = ['cmem:ready', 'cmem:drawn'].map(n => performance.getEntriesByName(n)[0]);"
                " if (r && d) done([r.startTime, d.startTime]); else setTimeout(check, 20); }; check(); })"
            )
            readies.append(ready / 1000)
            drawns.append(drawn / 1000)
            tab.close()
    return statistics.median(readies[1:]), statistics.median(drawns[1:])


def ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=int, default=1_000_000, help="observations in the store")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command (after a warm-up)")
    parser.add_argument("--home", type=Path, help="build the store here and keep it (reused when present)")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="cmem-bench-view-")) / "home"
    if not (home / "cmem.db").exists():
        print(f"building a {args.store:,}-observation store in {home} ...", file=sys.stderr)
        started = time.perf_counter()
        build_store(home, args.store)
        print(f"built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    stored = observation_count(home)
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_PROJECT": PROJECT, "CMEM_EMBED_MODEL": "none"}
    python = [sys.executable, "-c", "pass"]
    rows = []
    for limit in PAGES:
        out = home / f"bench-{limit}.html"
        command = [sys.executable, "-m", "cmem_cli", "view", "--no-open", "--json", "--limit", str(limit)]
        command += ["--output", str(out)]
        if limit > 2_000:
            command += ["--since", "400d"]  # a window holding 10,000 even in a small store
        timed(command, env)  # warm-up
        times, cpus, starts, start_cpus = [], [], [], []
        for _ in range(args.runs):
            elapsed, cpu, stdout = timed(command, env)
            times.append(elapsed)
            cpus.append(cpu)
            elapsed, cpu, _ = timed(python, env)
            starts.append(elapsed)
            start_cpus.append(cpu)
        summary = json.loads(stdout)
        size = out.stat().st_size
        ready, drawn = render_times(out, args.runs)
        rows.append(
            f"| {summary['observations']:,} | {summary['total_observations']:,}"
            f"{'+' if summary['total_bounded'] else ''} | {ms(times)} ({ms(cpus)} CPU) "
            f"| {ms(starts)} ({ms(start_cpus)} CPU) | {size / 1e6:.2f} MB | "
            f"{size / max(summary['observations'], 1):,.0f} B | {ready * 1000:.0f} ms | {drawn * 1000:.0f} ms |"
        )
    print(f"\nstore: {stored:,} observations; median of {args.runs} runs\n")
    print(
        "| observations on the page | matching | `cmem view` (whole process) | `python -c pass` "
        "| page | per observation | rows built | first frame with rows |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
