"""`cmem sync` through a local bare repository (targets: nothing to do in a 10,000-file tree under 1 s;
adopting 1,000 incoming files under 5 s).

Builds two homes in a temporary folder: machine A imports N observations (bulk `cmem add --json`) and
runs `cmem sync init` against an empty bare repository; machine B runs `cmem sync init` and adopts them
all. Then it measures, as whole processes:

* ``noop``: `cmem sync` on B when nothing changed anywhere (git status + fetch + comparisons);
* ``adopt``: A adds K more observations and syncs; `cmem sync` on B fetches, merges and adopts the K files.

    python -m bench.sync [--files 10000] [--incoming 1000] [--repeat 5]
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


def cmem(env: dict[str, str], *args: str, stdin: bytes | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], env=env, cwd=REPO, input=stdin, capture_output=True
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode()[-2000:])
    return elapsed


def records(start: int, count: int, tag: str) -> bytes:
    lines = [
        json.dumps(
            {
                "title": f"{tag} observation {i}",
                "project": f"project-{i % 7}",
                "session": f"session-{tag}-{i // 50}",
                "narrative": f"Observation {i} from {tag}: the cache key includes the tenant and region {i}.",
                "facts": [f"fact {i}"],
                "concepts": ["caching"],
            }
        )
        for i in range(start, start + count)
    ]
    return ("\n".join(lines) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--incoming", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cmem-sync-bench-"))
    remote = work / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    base = {**os.environ, "CMEM_EMBED_MODEL": "none", "PYTHONPATH": str(REPO)}
    env_a = {**base, "CMEM_HOME": str(work / "a")}
    env_b = {**base, "CMEM_HOME": str(work / "b")}

    cmem(env_a, "add", "--json", "-", stdin=records(0, args.files, "a"))
    init_a = cmem(env_a, "sync", "init", str(remote))
    init_b = cmem(env_b, "sync", "init", str(remote))
    print(
        f"tree: {args.files} files; init on A (commit + push) {init_a:.1f}s, on B (adopt all) {init_b:.1f}s"
    )

    noop = [cmem(env_b, "sync") for _ in range(args.repeat)]
    adopt = []
    for round_ in range(args.repeat):
        start = args.files + round_ * args.incoming
        cmem(env_a, "add", "--json", "-", stdin=records(start, args.incoming, "a"))
        cmem(env_a, "sync")
        adopt.append(cmem(env_b, "sync"))

    def show(label: str, values: list[float]) -> None:
        print(f"{label:48} median {statistics.median(values):6.2f} s   max {max(values):6.2f} s")

    show(f"`cmem sync`, nothing to do ({args.files} files)", noop)
    show(f"`cmem sync`, adopting {args.incoming} incoming files", adopt)


if __name__ == "__main__":
    main()
