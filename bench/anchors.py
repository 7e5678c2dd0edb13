"""What code anchors cost: whole-process CPU and wall time of `cmem search` and of a `cmem hook PostToolUse`
call (a Read, and an Edit whose written text this cmem anchors as a region), run in pairs (A B A B ...) so
that a machine whose speed drifts still gives a fair ratio. This cmem cites half of its files with the lines
of one function (a region: a check of a changed file reads it and looks the region's lines up); a baseline
cmem is given the same files without ranges.

The observations are recorded inside a git work tree (each cites one to three of its files; a fifth were
recorded on a branch HEAD has not merged, so search has git's answer to keep; a tenth of the cited files
changed since), and, for "outside a repository", from a plain copy of the folder (no .git: nothing
anchored). Keyword search only (no model), the cheapest search and so the largest share for anchors.

Without ``--baseline``: this cmem inside the work tree (A) against this cmem in the plain copy (B).
With ``--baseline CMEM`` (another installation's console script, e.g. a venv at the commit before anchors):
this cmem (A) against it (B), each on homes it recorded itself, inside the work tree and outside one.
Compile both installations first (``python -m compileall``) where PYTHONDONTWRITEBYTECODE is set, or each
run pays for compiling. Usage:

    python -m bench.anchors [--runs 30] [--observations 2000] [--baseline /path/to/venv/bin/cmem] [--json]
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
from collections.abc import Callable
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


def this_cmem() -> list[str]:
    """The installed console script next to this interpreter, else `python -m cmem_cli`."""
    script = Path(sys.executable).with_name("cmem")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cmem_cli"]


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def cmem(
    command: list[str], args: list[str], home: Path, cwd: Path, stdin: bytes | None = None
) -> tuple[float, float]:
    """One whole cmem process: its CPU seconds (user + system, with any git it ran) and wall seconds."""
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": "none", "CMEM_RERANK_MODEL": "none"}
    env.pop("CMEM_PROJECT", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([*command, *args], cwd=cwd, env=env, input=stdin, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 10):
        raise SystemExit(f"cmem {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)
    for i in range(files):
        path = root / "src" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(f"def {rng.choice(WORDS)}_{j}(x):\n    return x + {j}\n" for j in range(60))
        path.write_text(body)


def records(n: int, files: int, *, seed: int, ranges: bool = False) -> list[dict[str, Any]]:
    """``ranges``: half of the cited files are cited with the lines of one function (``PATH:START-END``,
    so this cmem anchors a region there and a check of a changed file looks into it); a cmem before
    regions is given the same files without ranges."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.sample(WORDS, 3)
        cited = [f"src/mod_{rng.randrange(files)}.py" for _ in range(rng.randint(1, 3))]
        spans = [3 * rng.randrange(60) + 1 for _ in cited]
        if ranges:
            cited = [
                f"{p}:{a}-{a + 1}" if k % 2 == 0 else p
                for k, (p, a) in enumerate(zip(cited, spans, strict=True))
            ]
        out.append({"type": "discovery", "title": f"{' '.join(words)} note {i}", "files_read": cited,
                    "project": "app", "narrative": " ".join(rng.choices(WORDS, k=30))})  # fmt: skip
    return out


def seed_home(command: list[str], home: Path, cwd: Path, batch: list[dict[str, Any]]) -> None:
    cmem(command, ["add", "--json", "-"], home, cwd, "\n".join(json.dumps(r) for r in batch).encode())


def setup(base: Path, n: int, files: int, commands: dict[str, list[str]]) -> dict[str, Path]:
    """The work tree, its plain copy, and for each command a home recorded in each."""
    repo, plain = base / "git" / "app", base / "plain" / "app"
    make_tree(repo, files)
    shutil.copytree(repo, plain)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "tree")
    homes = {(name, where): base / f"home-{name}-{where}" for name in commands for where in ("repo", "plain")}
    batches = {name: records(n, files, seed=1, ranges=name == "this") for name in commands}
    cut = n * 4 // 5
    for (name, where), home in homes.items():
        seed_home(commands[name], home, repo if where == "repo" else plain, batches[name][:cut])
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "feature.txt").write_text("feature\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "feature")
    for (name, where), home in homes.items():  # recorded on a branch main has not merged
        seed_home(commands[name], home, repo if where == "repo" else plain, batches[name][cut:])
    git(repo, "checkout", "-q", "main")
    for i in range(0, files, 10):  # a tenth of the cited files changed since
        for tree in (repo, plain):
            with open(tree / "src" / f"mod_{i}.py", "a") as handle:
                handle.write("# changed\n")
    return {
        "repo": repo,
        "plain": plain,
        **{f"{name}-{where}": home for (name, where), home in homes.items()},
    }


def read_payload(cwd: Path, n: int) -> bytes:
    """A Read of one of the tree's files; 50 reads per session, so none merges as a repeat."""
    path = cwd / "src" / f"mod_{n % 50}.py"
    return json.dumps({
        "session_id": f"bench-{n // 50 + 1}", "transcript_path": f"{cwd}/t.jsonl", "cwd": str(cwd),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Read",
        "tool_use_id": f"toolu_{n}", "tool_input": {"file_path": str(path)},
        "tool_response": {"type": "text", "file": {"filePath": str(path), "numLines": 120, "totalLines": 120}},
    }).encode()  # fmt: skip


def edit_payload(cwd: Path, n: int) -> bytes:
    """An Edit of one of the tree's files whose new text is one of its functions (the file is left as it
    is: the hook reads what it names), so this cmem anchors the region it wrote."""
    path = cwd / "src" / f"mod_{n % 50}.py"
    lines = path.read_text().splitlines()
    start = 3 * (n % 60)
    new = "\n".join(lines[start : start + 2])
    return json.dumps({
        "session_id": f"bench-edit-{n // 50 + 1}", "transcript_path": f"{cwd}/t.jsonl", "cwd": str(cwd),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Edit",
        "tool_use_id": f"toolu_e{n}", "tool_input": {"file_path": str(path), "old_string": "x",
                                                    "new_string": new},
        "tool_response": {"filePath": str(path)},
    }).encode()  # fmt: skip


Run = Callable[[int], tuple[float, float]]


def paired(runs: int, a: Run, b: Run) -> dict[str, float]:
    """Medians of A's and B's CPU and wall seconds, and the medians of the per-pair ratios A/B (one
    warm-up pair first, not counted)."""
    a(-1), b(-1)
    cpu_a, cpu_b, wall_a, wall_b, cpu_ratio, wall_ratio = [], [], [], [], [], []
    for i in range(runs):
        (ca, wa), (cb, wb) = a(i), b(i)
        cpu_a.append(ca), cpu_b.append(cb), wall_a.append(wa), wall_b.append(wb)
        cpu_ratio.append(ca / cb if cb else 1.0), wall_ratio.append(wa / wb)
    return {
        "a_cpu_ms": round(statistics.median(cpu_a) * 1000, 1),
        "b_cpu_ms": round(statistics.median(cpu_b) * 1000, 1),
        "cpu_ratio": round(statistics.median(cpu_ratio), 3),
        "a_wall_ms": round(statistics.median(wall_a) * 1000, 1),
        "b_wall_ms": round(statistics.median(wall_b) * 1000, 1),
        "wall_ratio": round(statistics.median(wall_ratio), 3),
    }


def measure(
    runs: int, where: dict[str, Path], commands: dict[str, list[str]], baseline: bool
) -> dict[str, Any]:
    queries = [f"{w} note" for w in WORDS]

    def search(name: str, place: str) -> Run:
        return lambda i: cmem(commands[name], ["search", queries[i % len(queries)]], where[f"{name}-{place}"],
                              where[place])  # fmt: skip

    def hook(name: str, place: str) -> Run:
        return lambda i: cmem(commands[name], ["hook", "PostToolUse"], where[f"{name}-{place}"], where[place],
                              read_payload(where[place], i + 1))  # fmt: skip

    def edit(name: str, place: str) -> Run:
        return lambda i: cmem(commands[name], ["hook", "PostToolUse"], where[f"{name}-{place}"], where[place],
                              edit_payload(where[place], i + 1))  # fmt: skip

    if not baseline:  # this cmem in the work tree (anchors) against the plain copy (none)
        return {
            "search": paired(runs, search("this", "repo"), search("this", "plain")),
            "hook PostToolUse (Read)": paired(runs, hook("this", "repo"), hook("this", "plain")),
        }
    results = {}
    for place, label in (("repo", "in a git work tree"), ("plain", "outside a repository")):
        results[f"search, {label}"] = paired(runs, search("this", place), search("base", place))
        results[f"hook PostToolUse (Read), {label}"] = paired(runs, hook("this", place), hook("base", place))
        results[f"hook PostToolUse (Edit), {label}"] = paired(runs, edit("this", place), edit("base", place))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--observations", type=int, default=2000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--baseline", metavar="CMEM", help="another installation's cmem to compare against")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.observations < 10 or args.files < 50:
        parser.error("--runs must be at least 1, --observations at least 10, --files at least 50")
    commands = {"this": this_cmem()}
    if args.baseline:
        if not (shutil.which(args.baseline) or os.access(args.baseline, os.X_OK)):
            parser.error(f"--baseline: {args.baseline} is not an executable")
        commands["base"] = [args.baseline]
    with tempfile.TemporaryDirectory(prefix="cmem-bench-anchors-") as tmp:
        where = setup(Path(tmp), args.observations, args.files, commands)
        results = measure(args.runs, where, commands, baseline=bool(args.baseline))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    a, b = ("this cmem", "baseline") if args.baseline else ("with anchors", "without")
    print(f"{args.observations} observations, {args.runs} pairs; medians, whole processes\n")
    print(f"| command | {a} CPU | {b} CPU | CPU ratio | {a} wall | {b} wall | wall ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| `cmem {name}` | {r['a_cpu_ms']} ms | {r['b_cpu_ms']} ms | {r['cpu_ratio']} | "
              f"{r['a_wall_ms']} ms | {r['b_wall_ms']} ms | {r['wall_ratio']} |")  # fmt: skip


if __name__ == "__main__":
    main()
