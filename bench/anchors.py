"""What code anchors cost: whole-process time of `cmem search` and of a `cmem hook PostToolUse` call with
anchors against without, run in pairs (A B A B ...) so that a machine whose speed drifts still gives a fair
ratio.

With anchors: a home whose observations were recorded inside a git work tree (each cites one to three of
its files; a fifth were recorded on a branch HEAD has not merged, so search asks git once; a tenth of the
cited files changed since), searched and hooked from inside that work tree. Without: the same observations
recorded from a plain copy of the folder (no .git: nothing anchored), searched and hooked from there.
Keyword search only (no model), the cheapest search and so the largest share for anchors. Usage:

    python bench/anchors.py [--runs 30] [--observations 2000] [--json]
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
from typing import Any

WORDS = [
    "auth",
    "token",
    "cache",
    "retry",
    "queue",
    "parser",
    "schema",
    "config",
    "deploy",
    "invoice",
    "webhook",
    "session",
]


def command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m cmem_cli`."""
    script = Path(sys.executable).with_name("cmem")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cmem_cli"]


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def cmem(args: list[str], home: Path, cwd: Path, stdin: bytes | None = None) -> float:
    """One whole cmem process; its wall time in seconds."""
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": "none", "CMEM_RERANK_MODEL": "none"}
    env.pop("CMEM_PROJECT", None)
    started = time.perf_counter()
    proc = subprocess.run([*command(), *args], cwd=cwd, env=env, input=stdin, capture_output=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 10):
        raise SystemExit(f"cmem {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)
    for i in range(files):
        path = root / "src" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(f"def {rng.choice(WORDS)}_{j}(x):\n    return x + {j}\n" for j in range(60))
        path.write_text(body)


def records(n: int, files: int, *, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.sample(WORDS, 3)
        cited = [f"src/mod_{rng.randrange(files)}.py" for _ in range(rng.randint(1, 3))]
        out.append({"type": "discovery", "title": f"{' '.join(words)} note {i}", "files_read": cited,
                    "project": "app", "narrative": " ".join(rng.choices(WORDS, k=30))})  # fmt: skip
    return out


def seed_home(home: Path, cwd: Path, batch: list[dict[str, Any]]) -> None:
    cmem(["add", "--json", "-"], home, cwd, "\n".join(json.dumps(r) for r in batch).encode())


def setup(base: Path, n: int, files: int) -> dict[str, Path]:
    repo, plain = base / "git" / "app", base / "plain" / "app"
    make_tree(repo, files)
    shutil.copytree(repo, plain)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "tree")
    with_home, without_home = base / "home-anchors", base / "home-plain"
    batch = records(n, files, seed=1)
    cut = n * 4 // 5
    seed_home(with_home, repo, batch[:cut])
    seed_home(without_home, plain, batch[:cut])
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "feature.txt").write_text("feature\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "feature")
    seed_home(with_home, repo, batch[cut:])  # recorded on a branch main has not merged
    seed_home(without_home, plain, batch[cut:])
    git(repo, "checkout", "-q", "main")
    for i in range(0, files, 10):  # a tenth of the cited files changed since
        for tree in (repo, plain):
            with open(tree / "src" / f"mod_{i}.py", "a") as handle:
                handle.write("# changed\n")
    return {"repo": repo, "plain": plain, "with": with_home, "without": without_home}


def hook_payload(cwd: Path, n: int) -> bytes:
    path = cwd / "src" / f"mod_{n % 50}.py"
    return json.dumps({
        "session_id": "bench", "transcript_path": f"{cwd}/t.jsonl", "cwd": str(cwd), "permission_mode": "default",
        "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": f"toolu_{n}",
        "tool_input": {"file_path": str(path), "old_string": "return x", "new_string": "return x"},
        "tool_response": {"filePath": str(path)},
    }).encode()  # fmt: skip


def paired(runs: int, a: Any, b: Any) -> dict[str, float]:
    """Median seconds of A and of B, and the median of the per-pair ratios A/B (one warm-up pair first)."""
    a(-1), b(-1)
    times_a, times_b, ratios = [], [], []
    for i in range(runs):
        ta, tb = a(i), b(i)
        times_a.append(ta), times_b.append(tb), ratios.append(ta / tb)
    return {
        "with_ms": round(statistics.median(times_a) * 1000, 1),
        "without_ms": round(statistics.median(times_b) * 1000, 1),
        "ratio": round(statistics.median(ratios), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--observations", type=int, default=2000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.observations < 10 or args.files < 10:
        parser.error("--runs must be at least 1, --observations and --files at least 10")
    with tempfile.TemporaryDirectory(prefix="cmem-bench-anchors-") as tmp:
        where = setup(Path(tmp), args.observations, args.files)
        queries = [f"{w} note" for w in WORDS]
        results = {
            "search": paired(
                args.runs,
                lambda i: cmem(["search", queries[i % len(queries)]], where["with"], where["repo"]),
                lambda i: cmem(["search", queries[i % len(queries)]], where["without"], where["plain"]),
            ),
            "hook PostToolUse Edit": paired(
                args.runs,
                lambda i: cmem(["hook", "PostToolUse"], where["with"], where["repo"], hook_payload(where["repo"], i)),
                lambda i: cmem(["hook", "PostToolUse"], where["without"], where["plain"], hook_payload(where["plain"], i)),
            ),
        }  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.observations} observations, {args.runs} pairs; medians, whole processes\n")
    print("| command | with anchors | without | ratio (median of pairs) |")
    print("|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| `cmem {name}` | {r['with_ms']} ms | {r['without_ms']} ms | {r['ratio']} |")


if __name__ == "__main__":
    main()
