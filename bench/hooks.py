"""Whole-process time of `cmem hook EVENT`, the way Claude Code runs it: a new process per call, the JSON
payload on stdin, the installed `cmem` script (as `cmem install claude-code` writes it).

Not a test: it prints a table of medians and 90th percentiles per event against a store that already holds
some history, plus the interpreter's own start-up as a floor. Usage:

    python -m bench.hooks [--runs 40] [--history 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m cmem_cli`."""
    script = Path(sys.executable).with_name("cmem")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cmem_cli"]


def payloads(event: str, session: str, cwd: str, n: int) -> dict[str, Any]:
    base = {
        "session_id": session,
        "transcript_path": f"{cwd}/t.jsonl",
        "cwd": cwd,
        "hook_event_name": event,
        "permission_mode": "default",
    }
    if event == "SessionStart":
        return {**base, "source": "startup"}
    if event == "UserPromptSubmit":
        return {**base, "prompt": f"Refactor the parser, step {n}: keep error messages one line"}
    if event == "PostToolUse:Edit":
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_use_id": f"toolu_e{n}",
            "tool_input": {
                "file_path": f"{cwd}/src/parser_{n}.py",
                "old_string": "def parse(x):",
                "new_string": "def parse(x: str) -> Node:",
            },
            "tool_response": {"filePath": f"{cwd}/src/parser_{n}.py", "userModified": False},
        }
    if event == "PostToolUse:Bash":
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"toolu_b{n}",
            "tool_input": {"command": f"pytest tests/test_parser.py -k case_{n}", "description": "Run tests"},
            "tool_response": {"stdout": "1 passed in 0.12s", "stderr": "", "interrupted": False},
        }
    if event == "PostToolUse:Read":
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_use_id": f"toolu_r{n}",
            "tool_input": {"file_path": f"{cwd}/src/module_{n}.py"},
        }
    if event == "PostToolUseFailure":
        return {
            **base,
            "tool_name": "Bash",
            "tool_use_id": f"toolu_f{n}",
            "tool_input": {"command": "npm test"},
            "error": "Exit code 1\nFAIL src/app.test.ts",
        }
    if event == "Stop":
        return {**base, "stop_hook_active": False, "last_assistant_message": f"Done with step {n}."}
    if event == "SessionEnd":
        return {**base, "reason": "other"}
    raise ValueError(event)


EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse:Edit",
    "PostToolUse:Bash",
    "PostToolUse:Read",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
]


def timed(cmd: list[str], data: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one whole process; CPU time (user + system) is what load on the machine
    disturbs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=data, env=env, capture_output=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"hook exited {proc.returncode}: {proc.stderr.decode()[:500]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def seed(env: dict[str, str], cwd: str, history: int) -> None:
    """A store with `history` observations and some sessions, so SessionStart builds real context."""
    types = ["decision", "bugfix", "discovery", "change", "feature", "insight"]
    lines = []
    for i in range(history):
        lines.append(
            json.dumps(
                {
                    "type": types[i % len(types)],
                    "title": f"Observation {i} about the parser",
                    "narrative": "Details " * 20,
                    "facts": [f"fact {i}"],
                    "project": "benchproj",
                    "session": f"old-{i // 50}",
                }
            )
        )
    subprocess.run(
        [sys.executable, "-m", "cmem_cli", "add", "--json", "-"],
        input="\n".join(lines).encode(),
        env=env,
        check=True,
        capture_output=True,
        cwd=cwd,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cmem_cli",
            "summary",
            "add",
            "--session",
            "old-0",
            "--request",
            "Speed up parsing",
            "--completed",
            "Cached the tokenizer",
            "--next-steps",
            "Profile the lexer",
        ],
        env=env,
        check=False,
        capture_output=True,
        cwd=cwd,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--history", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "benchproj"
        (cwd / ".git").mkdir(parents=True)
        env = {**os.environ, "CMEM_HOME": str(home), "HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/config"}
        env.pop("CMEM_PROJECT", None)
        # Byte-compile once, as an install does; a developer shell may forbid writing .pyc files.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "cmem_cli"), str(ROOT / "export")],
            env=env,
            check=False,
            capture_output=True,
        )
        seed(env, str(cwd), args.history)
        cmd = command()
        cases: dict[str, tuple[list[str], Any]] = {
            "python -c pass (floor)": ([sys.executable, "-c", "pass"], None),
            "cmem --version": ([*cmd, "--version"], None),
        }
        for event in EVENTS:
            cases[event] = ([*cmd, "hook", event.split(":")[0]], event)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        load_before = os.getloadavg()[0]
        # Round-robin over the cases, so that changing load on the machine affects all of them alike.
        for n in range(args.runs):
            for name, (argv, event) in cases.items():
                data = json.dumps(payloads(event, f"bench-{n % 5}", str(cwd), n)).encode() if event else b""
                results[name].append(timed(argv, data, env))
        load_after = os.getloadavg()[0]
        log = home / "logs" / "hooks.log"
        errors = [
            line for line in (log.read_text() if log.exists() else "").splitlines() if " slow " not in line
        ]

    def pct(values: list[float], q: float) -> float:
        return round(sorted(values)[max(0, int(len(values) * q) - 1)], 1)

    rows = {}
    for name, samples in results.items():
        wall = [w for w, _ in samples]
        cpu = [c for _, c in samples]
        rows[name] = {
            "median_ms": round(statistics.median(wall), 1),
            "p90_ms": pct(wall, 0.9),
            "cpu_median_ms": round(statistics.median(cpu), 1),
        }
    meta = {
        "command": " ".join(cmd),
        "runs": args.runs,
        "history": args.history,
        "cpus": os.cpu_count(),
        "load_average": [round(load_before, 2), round(load_after, 2)],
    }
    if args.json:
        print(json.dumps({**meta, "results": rows}, indent=2))
    else:
        print(
            f"command: {meta['command']}   runs: {args.runs}   history: {args.history} observations   "
            f"cpus: {meta['cpus']}   load average: {load_before:.1f} -> {load_after:.1f}"
        )
        floor = rows["python -c pass (floor)"]["median_ms"]
        print(
            f"| {'case':26} | {'wall median ms':>14} | {'wall p90 ms':>11} | {'over floor ms':>13} "
            f"| {'CPU median ms':>13} |"
        )
        print(f"|{'-' * 28}|{'-' * 15}:|{'-' * 12}:|{'-' * 14}:|{'-' * 14}:|")
        for key, row in rows.items():
            over = round(row["median_ms"] - floor, 1)
            print(
                f"| {key:26} | {row['median_ms']:>14} | {row['p90_ms']:>11} | {over:>13} "
                f"| {row['cpu_median_ms']:>13} |"
            )
    if errors:
        print("hooks.log has errors:\n" + "\n".join(errors), file=sys.stderr)


if __name__ == "__main__":
    main()
