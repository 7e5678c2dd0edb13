"""Re-indexing one changed file in a 10,000-file collection (target: under 1 s for the whole `cmem index`).

Builds a temporary home with a user collection of N small markdown files, indexes it once, then measures:

* ``noop``: `cmem index` when nothing changed (process start + stat walk + comparison);
* ``one``: `cmem index` after one file's content changed (plus read, chunk, embed, write);
* the same two passes in-process (the library cost without Python start-up and model loading).

    python -m bench.reindex_one [--files 10000] [--model PATH.gguf] [--repeat 5]

Without ``--model`` the index is keyword-only; with it, the changed file is embedded too (and the model load
is part of the whole-process time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
]


def make_collection(root: Path, files: int) -> None:
    for i in range(files):
        directory = root / f"d{i // 500:03}"
        directory.mkdir(parents=True, exist_ok=True)
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(24))
        (directory / f"note-{i:05}.md").write_text(f"# Note {i}\n\nNote {i} is about {words}.\n")


def cmem(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cmem_cli", *args], env=env, cwd=REPO, capture_output=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode()[-2000:])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--model", help="GGUF embedding model (default: keyword-only)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cmem-reindex-"))
    home, notes = work / "home", work / "notes"
    make_collection(notes, args.files)
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_EMBED_MODEL": args.model or "none"}
    cmem(env, "collection", "add", str(notes), "--name", "notes")
    started = time.perf_counter()
    cmem(env, "index")
    print(f"initial index of {args.files} files: {time.perf_counter() - started:.1f}s", file=sys.stderr)

    target = notes / "d000" / "note-00000.md"
    noop, one = [], []
    for round_ in range(args.repeat):
        noop.append(cmem(env, "index"))
        target.write_text(f"# Note 0\n\nEdited in round {round_}: the note now talks about something else.\n")
        one.append(cmem(env, "index"))

    os.environ.update(env)
    from cmem_cli.core.config import load_config
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.loading import load_embedder
    from cmem_index.store import IndexStore

    config = load_config()
    embedder, _ = load_embedder(config)
    store = IndexStore.open(config.index_path)
    lib_noop, lib_one = [], []
    for round_ in range(args.repeat):
        started = time.perf_counter()
        Indexer(store, load_collections(config), embedder).run()
        lib_noop.append(time.perf_counter() - started)
        target.write_text(f"# Note 0\n\nIn-process edit {round_}.\n")
        started = time.perf_counter()
        report = Indexer(store, load_collections(config), embedder).run()
        lib_one.append(time.perf_counter() - started)
        assert report.chunked == 1, report
    store.close()

    def show(label: str, values: list[float]) -> None:
        print(
            f"{label:34} median {statistics.median(values) * 1000:7.0f} ms   max {max(values) * 1000:7.0f} ms"
        )

    print(f"files: {args.files}, model: {args.model or 'none (keyword-only)'}")
    show("`cmem index`, nothing changed", noop)
    show("`cmem index`, one file changed", one)
    show("update pass in-process, no change", lib_noop)
    show("update pass in-process, one file", lib_one)


if __name__ == "__main__":
    main()
