"""`cmem sync` through a local bare repository (targets: nothing to do in a 10,000-file tree under 1 s;
adopting 1,000 incoming files under 5 s).

Builds two homes in a temporary folder: machine A imports N observations (bulk `cmem add --json`) and
runs `cmem sync init` against an empty bare repository; machine B runs `cmem sync init` and adopts them
all. Then it measures, as whole processes (wall time, and CPU: user + system of the process and the git
processes it waited for):

* ``noop``: `cmem sync` on B when nothing changed anywhere (git status + fetch + comparisons);
* ``adopt``: A adds K more observations and syncs; `cmem sync` on B fetches, merges and adopts the K files.

    python -m bench.sync [--files 10000] [--incoming 1000] [--repeat 5] [--python PY] [--vs PY]

``--python PY`` runs cmem with another interpreter (a venv with another checkout installed); ``--vs PY``
builds a second world with that interpreter and measures both in turn, pair by pair (A B, then B A, ...),
printing the median of the pairwise ratios: on a shared machine whose speed drifts, only the ratio of
runs made side by side means something.
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

Run = tuple[float, float]  # (wall seconds, CPU seconds)


def cmem(python: str, home: Path, *args: str, stdin: bytes | None = None) -> Run:
    """One whole `cmem` process (cwd outside any checkout, so the interpreter's own install is used)."""
    env = {**os.environ, "CMEM_EMBED_MODEL": "none", "CMEM_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        [python, "-m", "cmem_cli", *args],
        env=env,
        cwd=tempfile.gettempdir(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stderr is not None
    if stdin:
        proc.stdin.write(stdin)
    proc.stdin.close()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)  # reaped here, for the CPU it and its children used
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{python} {' '.join(args)}: exit {proc.returncode}: {err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


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


class World:
    """Two homes and a bare remote, built and synced by one interpreter."""

    def __init__(self, root: Path, python: str, files: int):
        self.root, self.python, self.files, self.rounds = root, python, files, 0
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(root / "team.git")], check=True)
        cmem(python, root / "a", "add", "--json", "-", stdin=records(0, files, "a"))
        self.init_a = cmem(python, root / "a", "sync", "init", str(root / "team.git"))
        self.init_b = cmem(python, root / "b", "sync", "init", str(root / "team.git"))

    def noop(self) -> Run:
        return cmem(self.python, self.root / "b", "sync")

    def incoming(self, count: int) -> None:
        """A adds ``count`` observations and pushes them (not measured)."""
        start = self.files + self.rounds * count
        cmem(self.python, self.root / "a", "add", "--json", "-", stdin=records(start, count, "a"))
        cmem(self.python, self.root / "a", "sync")
        self.rounds += 1

    def adopt(self) -> Run:
        return cmem(self.python, self.root / "b", "sync")


def show(label: str, runs: list[Run]) -> None:
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    print(
        f"{label:50} wall median {statistics.median(walls):6.2f} s  max {max(walls):6.2f} s   "
        f"CPU median {statistics.median(cpus):6.2f} s"
    )


def ratios(label: str, a: list[Run], b: list[Run]) -> None:
    wall = [x[0] / y[0] for x, y in zip(a, b, strict=True)]
    cpu = [x[1] / y[1] for x, y in zip(a, b, strict=True)]
    print(
        f"{label:50} A/B wall {statistics.median(wall):.3f} ({min(wall):.2f}-{max(wall):.2f})   "
        f"CPU {statistics.median(cpu):.3f} ({min(cpu):.2f}-{max(cpu):.2f}), {len(wall)} pairs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--incoming", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs cmem (A)")
    parser.add_argument("--vs", default=None, help="a second interpreter (B), measured in turn with A")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cmem-sync-bench-"))
    sides = {"A": args.python, **({"B": args.vs} if args.vs else {})}
    worlds = {name: World(work / name, python, args.files) for name, python in sides.items()}
    for name, world in worlds.items():
        print(
            f"{name}: {world.python}: tree {args.files} files; init on A (commit + push) "
            f"{world.init_a[0]:.1f} s, on B (adopt all) {world.init_b[0]:.1f} s"
        )
    noop: dict[str, list[Run]] = {name: [] for name in worlds}
    adopt: dict[str, list[Run]] = {name: [] for name in worlds}
    for round_ in range(args.repeat):
        order = list(worlds) if round_ % 2 == 0 else list(reversed(worlds))
        for name in order:
            noop[name].append(worlds[name].noop())
    for round_ in range(args.repeat):
        for world in worlds.values():
            world.incoming(args.incoming)
        order = list(worlds) if round_ % 2 == 0 else list(reversed(worlds))
        for name in order:
            adopt[name].append(worlds[name].adopt())
    for name in worlds:
        show(f"{name}: `cmem sync`, nothing to do ({args.files} files)", noop[name])
        show(f"{name}: `cmem sync`, adopting {args.incoming} incoming files", adopt[name])
    if args.vs:
        ratios("`cmem sync`, nothing to do", noop["A"], noop["B"])
        ratios(f"`cmem sync`, adopting {args.incoming} incoming files", adopt["A"], adopt["B"])


if __name__ == "__main__":
    main()
