"""Wall time of one scripted agent session with and without cmem installed, per agent, driven by the real
clients of tests/agents_real (installed by scripts/install_agents.sh) against the scripted model on 127.0.0.1:
read a file, edit it, run a command that passes and one that fails, record a note, answer.

Not a test: it prints the median of ``--runs`` sessions each way (the same machine, the same script; the
file the session edits is put back between runs) and what cmem adds. Usage, from the checkout's root:

    python -m bench.agent_sessions [--agents claude-code,codex] [--runs 10] [--no-mcp] [--interleave] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.agents_real import harness as h
from tests.agents_real.model_server import ModelServer

MODULES = {
    "claude-code": "tests.agents_real.test_claude_code",
    "codex": "tests.agents_real.test_codex",
    "gemini": "tests.agents_real.test_gemini",
    "opencode": "tests.agents_real.test_opencode",
    "qwen": "tests.agents_real.test_qwen",
    "droid": "tests.agents_real.test_droid",
    "copilot": "tests.agents_real.test_copilot",
    "kilo": "tests.agents_real.test_kilo",
    "cline": "tests.agents_real.test_cline",
}


def timings(
    spec: h.Client, runs: int, root: Path, mcp: bool = True, interleave: bool = False
) -> dict[str, Any]:
    """Session wall times without cmem, then with `cmem install AGENT` done, in one repository and HOME; or,
    ``interleave``, in two (one with cmem installed), a session of each in turn, the pair's order swapped
    every time, so that a shared machine's changing load weighs on both alike (each pair's ratio is kept)."""
    server = ModelServer().start()
    try:
        cmem = h.cmem_executable()
        seconds: dict[str, list[float]] = {"without": [], "with": []}
        load = [os.getloadavg()[0]]
        if interleave:
            homes = {phase: h.prepare(spec, root / phase, server)[0] for phase in ("without", "with")}
            homes["with"].cmem("install", spec.agent, *([] if mcp else ["--no-mcp"]))
            for n in range(runs):
                for phase in ("without", "with") if n % 2 == 0 else ("with", "without"):
                    seconds[phase].append(_session(spec, homes[phase], server, cmem))
            h.wait_for_hooks(homes["with"])
        else:
            run, _ = h.prepare(spec, root, server)
            for phase in ("without", "with"):
                if phase == "with":
                    run.cmem("install", spec.agent, *([] if mcp else ["--no-mcp"]))
                for _ in range(runs):
                    seconds[phase].append(_session(spec, run, server, cmem))
                h.wait_for_hooks(run)
        load.append(os.getloadavg()[0])
        without, with_cmem = statistics.median(seconds["without"]), statistics.median(seconds["with"])
        row = {
            "agent": spec.agent,
            "client": f"{spec.package} {h.pinned(spec.package)}",
            "runs": runs,
            "mcp": mcp,
            "median_without_s": round(without, 3),
            "median_with_s": round(with_cmem, 3),
            "added_s": round(with_cmem - without, 3),
            "added_pct": round(100 * (with_cmem - without) / without, 1),
            "load_1min": [round(x, 2) for x in load],  # at the start and at the end
        }
        if interleave:
            ratios = [w / o for w, o in zip(seconds["with"], seconds["without"], strict=True)]
            row["pair_ratio_median"] = round(statistics.median(ratios), 3)
            row["pair_ratios"] = [round(r, 3) for r in ratios]
        return row
    finally:
        server.stop()


def _session(spec: h.Client, run: h.Run, server: ModelServer, cmem: str) -> float:
    """One scripted session's wall time, the file it edits put back first (as git has it)."""
    subprocess.run(["git", "-C", str(run.repo), "checkout", "-q", "--", "src/batches.py"], check=True)
    return h.session(spec, run, server, h.FIRST_PROMPT, h.first_script(run.repo, cmem)).seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(MODULES), help="comma-separated: " + ", ".join(MODULES))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-mcp", action="store_true", help="install the hooks alone (no `cmem mcp` server)"
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="alternate sessions with and without cmem (a shared machine)",
    )
    args = parser.parse_args()
    rows = []
    for agent in args.agents.split(","):
        spec: h.Client = importlib.import_module(MODULES[agent]).CLIENT
        with tempfile.TemporaryDirectory() as tmp:
            try:
                rows.append(
                    timings(spec, args.runs, Path(tmp), mcp=not args.no_mcp, interleave=args.interleave)
                )
            finally:  # what a client leaves running (Cline's hub daemon), as the harness stops it
                h.stop_left_over(Path(tmp))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| agent | client | sessions each way | median without cmem | median with cmem | cmem adds |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['agent']} | {r['client']} | {r['runs']} | {r['median_without_s']:.2f} s "
            f"| {r['median_with_s']:.2f} s | {r['added_s']:+.2f} s ({r['added_pct']:+.1f} %) |"
        )


if __name__ == "__main__":
    main()
