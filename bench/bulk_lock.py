"""How long a bulk `cmem add --json` and `cmem export --rebuild` hold the store's write lock (issue 42).

A fresh home gets N records in one import, then its export is rebuilt; ``CMEM_LOCK_LOG`` notes every hold
of 20 ms or more. Each command's longest hold is printed as wall ms and as the CPU ms the process spent in
it: on a shared, loaded machine the wall time stretches, the CPU time much less. Not a test. Run it
niced; ``--runs`` repeats it (a new home each time):

    nice -n 10 python -m bench.bulk_lock [--records 5000] [--runs 2] [--json]

Targets: no hold of a second or more; every other writer gets the lock between a rebuild's pages.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.hooks import command


def records(count: int) -> list[dict[str, Any]]:
    """Records shaped like an agent's history: a title, a narrative, a fact, a concept, a file read."""
    return [
        {
            "title": f"Bulk memory {i} about the parser",
            "project": "bulk-bench",
            "narrative": f"words of memory {i} " * 20,
            "facts": [f"fact {i}"],
            "concepts": ["bulk"],
            "files_read": [f"src/m{i % 50}.py"],
        }
        for i in range(count)
    ]


def longest(log: Path, command_words: str) -> dict[str, float]:
    """The longest hold of the command whose arguments start with ``command_words``: wall and CPU ms."""
    best = {"wall_ms": 0.0, "cpu_ms": 0.0, "holds": 0}
    if not log.is_file():
        return best
    for line in log.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) < 7 or fields[1] != "cmem.db" or not fields[4].startswith(command_words):
            continue
        best["holds"] += 1
        if float(fields[0]) > best["wall_ms"]:
            best["wall_ms"], best["cpu_ms"] = float(fields[0]), float(fields[6].removeprefix("cpu "))
    return best


def run_once(base: Path, count: int) -> dict[str, Any]:
    home, log = base / "home", base / "locks.tsv"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CMEM_")},
        "CMEM_HOME": str(home),
        "HOME": str(base / "user"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "CMEM_EMBED_MODEL": "none",
        "CMEM_LOCK_LOG": str(log),
        "CMEM_LOCK_LOG_MS": "20",
        "CMEM_INDEX_BACKGROUND": "off",  # the store's holds alone, not a background index pass's
    }
    source = base / "records.json"
    source.write_text(json.dumps(records(count)))
    subprocess.run([*command(), "add", "a first note"], env=env, check=True, capture_output=True)
    log.unlink(missing_ok=True)
    subprocess.run([*command(), "add", "--json", str(source)], env=env, check=True, capture_output=True)
    subprocess.run([*command(), "export", "--rebuild"], env=env, check=True, capture_output=True)
    return {"add --json": longest(log, "add --json"), "export --rebuild": longest(log, "export --rebuild")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="cmem-bulk-lock-") as tmp:
            results.append(run_once(Path(tmp), args.records))
    if args.json:
        print(json.dumps({"records": args.records, "runs": results}, indent=2))
        return 0
    print(f"{args.records} records, longest write-lock hold per command (load {os.getloadavg()[0]:.1f})")
    for i, result in enumerate(results, 1):
        for name, hold in result.items():
            print(
                f"run {i}  {name:<17} {hold['wall_ms']:>7.0f} ms wall  {hold['cpu_ms']:>6.0f} ms CPU  ({hold['holds']} holds)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
