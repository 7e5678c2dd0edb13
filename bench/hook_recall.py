"""Whole-process time of the hooks an agent waits for, paired: a UserPromptSubmit that injects recall
against the same hook with ``[recall] prompt = false`` (issue 44: p95 within 1.3x at 10,000 memories), and
each hot hook against the interpreter's own start-up, ``python -c pass`` (issue 45: within 1.5x).

Not a test. The cases run in turn (A B A B ...), so a change in the machine's load moves both sides of a
pair alike; each figure is the median or the 95th percentile of the runs, each ratio the median of the
pairs' ratios (and the ratio of the two p95s). CPU is user + system of the process the agent waits for
(the detached child that records the event afterwards is not waited for, so it is not counted; it runs
between the pairs, as it does between an agent's calls). Usage (from the checkout's root):

    python -m bench.hook_recall [--memories 10000] [--runs 40] [--home DIR] [--recall-only] [--json]

``--recall-only`` times the injecting hooks alone: the prompt (UserPromptSubmit) and a file read
(PostToolUse on Read of a file three notes cite), each against itself with that recall point off.

``--home DIR`` keeps the seeded home there and reuses it on the next run (seeding 10,000 memories takes
a minute or two).
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

from bench.hooks import command

PROMPTS = [
    "why does the invoice cache keep stale totals",
    "retry the queue when the schema changes",
    "token limit for the parser",
    "fix the timezone in the nightly encoding job",
]
EVENTS = ("PostToolUse", "UserPromptSubmit", "SessionStart", "Stop")
RUN = f"{os.getpid()}-{int(time.time())}"  # a kept home's sessions are new each run (recall gives once)
CITED = "src/cache.py"  # the file the read recalls: three notes cite it


def seeded(root: Path, memories: int) -> tuple[dict[str, str], Path]:
    """The home under ``root`` with ``memories`` notes (made once; bench.recall_week's corpus)."""
    from bench.agent_week import environment
    from bench.recall_week import seed

    done = root / f"seeded-{memories}"
    if done.exists():
        env, repo = environment(root, "none", background=False), root / "work" / "shop"
    else:
        env, repo = seed(root, memories)
        answers(env, repo)
        done.write_text("ok\n")
    if not (root / "cited").exists():  # homes seeded before the file read was timed
        cited(env, repo)
        (root / "cited").write_text("ok\n")
    return env, repo


def cited(env: dict[str, str], repo: Path) -> None:
    """The file a timed read recalls, and three notes citing it (a decision, a bug cause, a gotcha)."""
    (repo / CITED).parent.mkdir(parents=True, exist_ok=True)
    (repo / CITED).write_text("def cached_total(invoice):\n    return invoice.total\n", encoding="utf-8")
    for kind, title in (("decision", "Cache totals per invoice, never per customer"),
                        ("bugfix", "Stale totals came from a cache key without the currency"),
                        ("discovery", "cached_total is read by the PDF renderer too")):  # fmt: skip
        subprocess.run([*command(), "add", "--type", kind, "-t", title, "--read", CITED], text=True, cwd=repo,
                       env={**env, "CMEM_HOOK_DETACH": "off"}, check=True, capture_output=True, timeout=120)  # fmt: skip


def answers(env: dict[str, str], repo: Path) -> None:
    """For each benchmark prompt, an earlier session that asked much the same and the note it wrote: what
    prompt recall injects (bench.recall_week's corpus alone holds nothing that clears the bar)."""
    for i, prompt in enumerate(PROMPTS):
        session = f"answered-{i}"
        asked = {"session_id": session, "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
                 "prompt": f"{prompt}?"}  # fmt: skip
        quiet = {**env, "CMEM_HOOK_DETACH": "off"}
        subprocess.run([*command(), "hook", "UserPromptSubmit"], input=json.dumps(asked), text=True, env=quiet,
                       cwd=repo, check=True, capture_output=True, timeout=120)  # fmt: skip
        subprocess.run([*command(), "add", "--type", "decision", "-t", f"Answer: {prompt}", "--narrative",
                        f"What we found when asked: {prompt}."], text=True, cwd=repo, check=True,
                       env={**quiet, "CMEM_SESSION": session}, capture_output=True, timeout=120)  # fmt: skip


def payload(event: str, n: int, repo: Path) -> dict[str, Any]:
    base = {"session_id": f"bench-{RUN}-{n}", "transcript_path": "/tmp/t.jsonl", "cwd": str(repo),
            "hook_event_name": event, "permission_mode": "default"}  # fmt: skip
    if event == "UserPromptSubmit":
        return {**base, "prompt": PROMPTS[n % len(PROMPTS)]}
    if event == "SessionStart":
        return {**base, "source": "startup"}
    if event == "Read":
        return {**base, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": f"toolu_r{n}",
                "tool_input": {"file_path": str(repo / CITED)}, "tool_response": {"type": "text"}}  # fmt: skip
    if event == "Stop":
        return {**base, "stop_hook_active": False, "last_assistant_message": f"Done with step {n}."}
    return {**base, "tool_name": "Bash", "tool_use_id": f"toolu_{n}",
            "tool_input": {"command": f"pytest tests/test_parser.py -k case_{n}"},
            "tool_response": {"stdout": "1 passed in 0.12s", "stderr": ""}}  # fmt: skip


def timed(argv: list[str], data: str | None, env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """(wall ms, CPU ms, stdout) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stderr[-1000:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, proc.stdout


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def paired(
    a: tuple[list[str], Any, dict[str, str]],
    b: tuple[list[str], Any, dict[str, str]],
    runs: int,
    cwd: Path,
) -> dict[str, Any]:
    """A against B, in turn; ``a``/``b``: (argv, payload maker or None, environment)."""
    samples: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    injected = 0
    for n in range(runs):
        for side, (argv, make, env) in (("a", a), ("b", b)) if n % 2 == 0 else (("b", b), ("a", a)):
            data = json.dumps(make(n)) if make is not None else None
            wall, cpu, out = timed(argv, data, env, cwd)
            samples[side].append((wall, cpu))
            injected += side == "a" and "additionalContext" in out and "cmem recalls" in out
        time.sleep(0.05)  # the detached children record between the pairs, as between an agent's calls
    result: dict[str, Any] = {"runs": runs, "injected": injected}
    for side, values in samples.items():
        wall, cpu = [w for w, _ in values], [c for _, c in values]
        result[side] = {"wall_p50_ms": round(statistics.median(wall), 1), "wall_p95_ms": round(p95(wall), 1),
                        "cpu_p50_ms": round(statistics.median(cpu), 1)}  # fmt: skip
    pairs = list(zip(samples["a"], samples["b"], strict=True))
    result["wall_ratio_p50"] = round(statistics.median(x[0] / y[0] for x, y in pairs), 3)
    result["cpu_ratio_p50"] = round(statistics.median(x[1] / max(y[1], 0.1) for x, y in pairs), 3)
    result["wall_ratio_p95"] = round(result["a"]["wall_p95_ms"] / result["b"]["wall_p95_ms"], 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--home", type=Path, help="keep the seeded home here (and reuse it)")
    parser.add_argument(
        "--recall-only", action="store_true", help="time the prompt hook with and without recall"
    )
    parser.add_argument(
        "--config", type=Path, help="a config file for the recall side (e.g. a longer budget_ms)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.home or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        env, repo = seeded(root, args.memories)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, as an install does
        off_config = root / "recall-off.toml"
        off_config.write_text("[recall]\nprompt = false\n", encoding="utf-8")
        off = {**env, "CMEM_CONFIG": str(off_config)}
        file_off_config = root / "file-recall-off.toml"
        file_off_config.write_text("[recall]\nfile = false\n", encoding="utf-8")
        file_off = {**env, "CMEM_CONFIG": str(file_off_config)}
        if args.config:
            env = {**env, "CMEM_CONFIG": str(args.config.resolve())}
        hook = [*command(), "hook"]
        prompt = lambda n: payload("UserPromptSubmit", n, repo)  # noqa: E731
        read = lambda n: payload("Read", n, repo)  # noqa: E731
        report: dict[str, Any] = {
            "memories": args.memories,
            "load_average_before": round(os.getloadavg()[0], 2),
            "recall vs recall off": paired(
                ([*hook, "UserPromptSubmit"], prompt, env), ([*hook, "UserPromptSubmit"], prompt, off),
                args.runs, repo,
            ),
            "file recall vs file recall off": paired(
                ([*hook, "PostToolUse"], read, env), ([*hook, "PostToolUse"], read, file_off), args.runs, repo,
            ),
        }  # fmt: skip
        floor = ([sys.executable, "-c", "pass"], None, env)
        for event in () if args.recall_only else EVENTS:
            maker = lambda n, event=event: payload(event, n, repo)  # noqa: E731
            report[f"{event} vs python -c pass"] = paired(
                ([*hook, event], maker, env), floor, args.runs, repo
            )
        report["load_average_after"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.memories} memories, {args.runs} pairs a case, load {report['load_average_before']}"
          f" -> {report['load_average_after']}")  # fmt: skip
    print(
        "| A vs B | A wall p50 / p95 ms | B wall p50 / p95 ms | wall ratio p50 | p95 ratio | CPU ratio p50 |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in report.items():
        if isinstance(row, dict):
            a, b = row["a"], row["b"]
            print(f"| {name} | {a['wall_p50_ms']} / {a['wall_p95_ms']} | {b['wall_p50_ms']} / {b['wall_p95_ms']}"
                  f" | {row['wall_ratio_p50']} | {row['wall_ratio_p95']} | {row['cpu_ratio_p50']} |")  # fmt: skip
    recall, file = report["recall vs recall off"], report["file recall vs file recall off"]
    print(f"(recall injected on {recall['injected']} of {recall['runs']} prompts, {file['injected']} of"
          f" {file['runs']} reads)")  # fmt: skip


if __name__ == "__main__":
    main()
