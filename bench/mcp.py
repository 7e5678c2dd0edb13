#!/usr/bin/env python3
"""Benchmark `cmem mcp`: time from process start to the first answered request, and what a search costs an
agent in tokens per row through MCP versus `cmem search`.

    python -m bench.mcp              # 10 runs, MADial's 160 memories as observations
    python -m bench.mcp --runs 20

The server is driven with raw JSON-RPC lines over its pipes (no client library in the timed path): the clock
starts just before the process is spawned and stops when the answer to `initialize`, then to a `search` tool
call, has been read. Tokens are cmem's estimate (characters / 4), the same for every output compared.
Store data: ../shared/data/madial/memories.jsonl, read at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent.parent / "shared" / "data" / "madial" / "memories.jsonl"
QUERIES = ["happy", "party", "school", "won first place", "sad", "birthday", "friends", "exam"]


def seed(home: Path, data: Path) -> int:
    """MADial's memories as observations (title: the first sentence's first 80 characters)."""
    from cmem_cli.api import Memory

    with Memory(home) as memory:
        count = 0
        for line in data.read_text().splitlines():
            m = json.loads(line)
            memory.add(
                m["text"][:80], type="discovery", narrative=m["text"], concepts=[m["scene"], m["emotion"]],
                project="madial", agent=m["user"],
            )  # fmt: skip
            count += 1
    return count


def _send(proc: subprocess.Popen[bytes], message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _read(proc: subprocess.Popen[bytes], want_id: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server closed its output")
        message = json.loads(line)
        if message.get("id") == want_id:
            return message


def first_answers(
    env: dict[str, str], query: str, python: str = sys.executable, listed: list[float] | None = None
) -> tuple[float, float, dict]:
    """(seconds to the initialize answer, seconds to the first search answer, that answer); the seconds to
    the `tools/list` answer are appended to ``listed``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "cmem_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=env["CMEM_HOME"],  # not the checkout: its cmem_cli
    )  # fmt: skip
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})  # fmt: skip
        _read(proc, 1)
        initialized = time.perf_counter() - start
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        _read(proc, 3)
        if listed is not None:
            listed.append(time.perf_counter() - start)
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "search", "arguments": {"query": query, "limit": 10}}})  # fmt: skip
        answer = _read(proc, 2)
        searched = time.perf_counter() - start
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    if "error" in answer or answer["result"].get("isError"):
        raise RuntimeError(f"search failed: {answer}")
    return initialized, searched, answer["result"]


def cli_search(env: dict[str, str], query: str, *extra: str) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "search", query, "--limit", "10", *extra],
        capture_output=True, text=True, env=env, check=False, cwd=env["CMEM_HOME"],  # 10: no match
    ).stdout  # fmt: skip
    return time.perf_counter() - start, out


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--baseline-python",
        help="another installation's interpreter (its own `pip install -e`): each run of `cmem mcp` is paired "
        "with one of it, alternately, and the ratios of the pairs are printed",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmem-bench-mcp-") as tmp:
        home = Path(tmp) / "home"
        count = seed(home, args.data)
        env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": "none"}
        if not args.baseline_python:
            env["PYTHONPATH"] = str(REPO)
        first_answers(env, "warm-up")  # bytecode caches written, as in a normal install
        cli_search(env, "warm-up")
        init_times, search_times, cli_times, list_times = [], [], [], []
        base: dict[str, list[float]] = {"init": [], "list": [], "search": []}
        for i in range(args.runs):
            initialized, searched, _ = first_answers(env, QUERIES[i % len(QUERIES)], listed=list_times)
            init_times.append(initialized)
            search_times.append(searched)
            cli_times.append(cli_search(env, QUERIES[i % len(QUERIES)])[0])
            if args.baseline_python:
                initialized, searched, _ = first_answers(
                    env, QUERIES[i % len(QUERIES)], args.baseline_python, listed=base["list"]
                )
                base["init"].append(initialized)
                base["search"].append(searched)

        rows = {
            "mcp text": [0, 0],
            "mcp structured": [0, 0],
            "cmem search (piped)": [0, 0],
            "cmem search --json": [0, 0],
        }
        for query in QUERIES:
            _, _, result = first_answers(env, query)
            hits = len(result["structuredContent"]["hits"])
            text = "".join(block["text"] for block in result["content"])
            plain = cli_search(env, query)[1]
            as_json = cli_search(env, query, "--json")[1]
            for name, out in (
                ("mcp text", text),
                ("mcp structured", json.dumps(result["structuredContent"])),
                ("cmem search (piped)", plain),
                ("cmem search --json", as_json),
            ):
                rows[name][0] += tokens(out)
                rows[name][1] += hits
    ms = lambda values: f"{statistics.median(values) * 1000:.0f} ms"  # noqa: E731
    print(f"{count} observations (MADial), {args.runs} runs, medians; keyword search (no index)\n")
    print("| measure | median |\n|---|---|")
    print(f"| `cmem mcp`: spawn -> `initialize` answered | {ms(init_times)} |")
    print(f"| `cmem mcp`: spawn -> `tools/list` answered | {ms(list_times)} |")
    print(f"| `cmem mcp`: spawn -> first `search` answered | {ms(search_times)} |")
    print(f"| `cmem search` whole process (for scale) | {ms(cli_times)} |")
    if args.baseline_python:
        print(f"\nPaired with {args.baseline_python} (this / baseline, median of the {args.runs} pairs):\n")
        print("| measure | baseline median | ratio |\n|---|---|---|")
        for name, mine, theirs in (
            ("initialize", init_times, base["init"]),
            ("tools/list", list_times, base["list"]),
            ("first search", search_times, base["search"]),
        ):
            ratio = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
            print(f"| {name} | {ms(theirs)} | {ratio:.2f} |")
    print(f"\n{len(QUERIES)} queries, limit 10\n")
    print("| output | tokens per row |\n|---|---|")
    for name, (total, hits) in rows.items():
        print(f"| {name} | {total / max(hits, 1):.1f} |")


if __name__ == "__main__":
    main()
