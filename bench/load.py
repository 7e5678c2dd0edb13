"""Eight writers on one home at once, for minutes: what a busy machine does to cmem's store.

Three `cmem add` loops, the hooks of three agents (Claude Code, Codex, Gemini CLI: a prompt, then a tool
call, each a new process fed its payload on stdin as the agent runs it), `cmem sync` against a bare git
repository and `cmem index`, all at once against one home. Every operation is a whole process, timed from
start to exit. At the end the spool is drained (one more hook) and every add and every prompt a hook was
given is looked for in the store: **lost** is what exited 0 and is not there, **failed** what exited non-zero.

With ``CMEM_LOCK_LOG`` the processes note every write transaction that held a database's write lock for
50 ms or more (``cmem_cli/core/db.py``); the longest holds are printed with the functions they ran in.

Not a test: it prints one row per operation (count, failed, p50, p99, max) and the totals. Run it niced,
the machine is shared:

    nice -n 10 python -m bench.load [--seconds 180] [--short] [--json]

``--short`` runs 20 seconds, a quick check. Targets (issue 42): hooks p99 <= 1 s, no add fails, nothing lost.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import apsw

from bench.hooks import command

ROOT = Path(__file__).resolve().parent.parent


class Tally:
    """Every operation's time and exit, by kind (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.failed: dict[str, list[str]] = defaultdict(list)

    def note(self, kind: str, seconds: float, code: int, stderr: str) -> None:
        with self.lock:
            self.times[kind].append(seconds)
            if code != 0:
                self.failed[kind].append(f"exit {code}: {stderr.strip()[:200]}")


class Run:
    """One load run: a home, a bare remote, the writers' threads and what they sent."""

    def __init__(self, base: Path, seconds: float):
        self.base = base
        self.seconds = seconds
        self.project = base / "work" / "load-app"
        (self.project / ".git").mkdir(parents=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CMEM_")},
            "CMEM_HOME": str(base / "home"),
            "HOME": str(base / "user"),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_CACHE_HOME": str(base / "cache"),
            "CMEM_EMBED_MODEL": "none",
            "CMEM_MACHINE": "load-bench",
            "CMEM_LOCK_LOG": str(base / "locks.tsv"),
            "GIT_AUTHOR_NAME": "Load",
            "GIT_AUTHOR_EMAIL": "load@example.com",
            "GIT_COMMITTER_NAME": "Load",
            "GIT_COMMITTER_EMAIL": "load@example.com",
            "NO_COLOR": "1",
            # bytecode cached, as an installed cmem has it (a process compiling cmem holds locks longer)
            "PYTHONPYCACHEPREFIX": str(base / "pycache"),
        }
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.tally = Tally()
        self.deadline = 0.0
        self.added: list[str] = []  # titles whose add exited 0
        self.prompted: list[str] = []  # prompts whose hook exited 0
        self.sent_lock = threading.Lock()

    def cmem(
        self, *args: str, stdin: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.project,
            timeout=timeout,
        )

    def timed(self, kind: str, *args: str, stdin: str | None = None) -> bool:
        start = time.perf_counter()
        try:
            done = self.cmem(*args, stdin=stdin)
            code, err = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            code, err = -1, "timed out after 120 s"
        self.tally.note(kind, time.perf_counter() - start, code, err)
        return code == 0

    # -- set-up ------------------------------------------------------------------------------------------
    def prepare(self, history: int) -> None:
        """A home with some history, connected to an empty bare repository."""
        folders = [str(ROOT / name) for name in ("cmem_cli", "index", "export")]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], env=self.env, check=True)
        remote = self.base / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, env=self.env)
        records = "".join(
            json.dumps(
                {"title": f"history note {i}", "narrative": f"older decision {i}", "project": "load-app"}
            )
            + "\n"
            for i in range(history)
        )
        for args, stdin in (
            (("add", "--json", "-"), records),
            (("sync", "init", str(remote)), None),
            (("index",), None),
        ):
            done = self.cmem(*args, stdin=stdin, timeout=600)
            if done.returncode != 0:
                raise SystemExit(f"set-up `cmem {' '.join(args)}` failed: {done.stderr.strip()}")
        Path(self.env["CMEM_LOCK_LOG"]).unlink(missing_ok=True)  # the set-up's holds are not the load's

    # -- the writers -------------------------------------------------------------------------------------
    def going(self) -> bool:
        return time.monotonic() < self.deadline

    def adds(self, worker: int) -> None:
        for i in itertools.count():
            if not self.going():
                return
            title = f"load add {worker}-{i}"
            if self.timed(
                "add", "add", "--title", title, "--project", "load-app", "--fact", f"w{worker} n{i}"
            ):
                with self.sent_lock:
                    self.added.append(title)

    def hooks(self, agent: str) -> None:
        session = f"load-{agent}-session"
        for i in itertools.count():
            if not self.going():
                return
            prompt = f"load prompt {agent} {i}: keep the parser's errors on one line"
            event, payload = hook_payload(agent, "prompt", session, str(self.project), i, prompt)
            if self.timed(f"hook {agent}", "hook", "--agent", agent, event, stdin=json.dumps(payload)):
                with self.sent_lock:
                    self.prompted.append(prompt)
            event, payload = hook_payload(agent, "tool", session, str(self.project), i, prompt)
            self.timed(f"hook {agent}", "hook", "--agent", agent, event, stdin=json.dumps(payload))

    def loop(self, kind: str, *args: str, pause: float) -> None:
        while self.going():
            self.timed(kind, *args)
            time.sleep(pause)

    def run(self) -> None:
        self.deadline = time.monotonic() + self.seconds
        writers = [
            *(threading.Thread(target=self.adds, args=(w,)) for w in range(3)),
            *(threading.Thread(target=self.hooks, args=(a,)) for a in ("claude-code", "codex", "gemini")),
            threading.Thread(target=self.loop, args=("sync", "sync"), kwargs={"pause": 2.0}),
            threading.Thread(target=self.loop, args=("index", "index"), kwargs={"pause": 2.0}),
        ]
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join()

    # -- the count ---------------------------------------------------------------------------------------
    def lost(self) -> dict[str, Any]:
        """Drain the spool (a hook replays it), then look for every add and prompt that exited 0."""
        event, payload = hook_payload("claude-code", "end", "load-drain", str(self.project), 0, "")
        self.cmem("hook", "--agent", "claude-code", event, stdin=json.dumps(payload))
        conn = apsw.Connection(str(self.base / "home" / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
        titles = {
            row[0] for row in conn.execute("SELECT title FROM observations WHERE title LIKE 'load add %'")
        }
        prompts = {
            row[0] for row in conn.execute("SELECT text FROM user_prompts WHERE text LIKE 'load prompt %'")
        }
        spool = self.base / "home" / "spool"
        return {
            "adds_lost": sorted(set(self.added) - titles),
            "prompts_lost": sorted(set(self.prompted) - prompts),
            "adds": len(self.added),
            "prompts": len(self.prompted),
            "spool_left": len(list(spool.glob("*.json"))) if spool.is_dir() else 0,
        }

    def longest_holds(self, n: int = 8) -> list[str]:
        path = Path(self.env["CMEM_LOCK_LOG"])
        if not path.is_file():
            return []
        rows = [line.split("\t") for line in path.read_text().splitlines() if line.count("\t") >= 5]
        rows.sort(key=lambda r: -float(r[0]))
        # the CPU the process spent in the hold (its last field, when the log has it): a loaded machine
        # stretches the wall time, not the work
        return [f"{r[0]:>6} ms ({r[6] if len(r) > 6 else '-'})  {r[1]}  {r[4]:<14} {r[5]}" for r in rows[:n]]

    def holds_over(self, ms: float) -> int:
        path = Path(self.env["CMEM_LOCK_LOG"])
        if not path.is_file():
            return 0
        return sum(1 for line in path.read_text().splitlines() if float(line.split("\t")[0]) > ms)


def hook_payload(
    agent: str, step: str, session: str, cwd: str, i: int, prompt: str
) -> tuple[str, dict[str, Any]]:
    """The event name and payload ``agent`` sends for a prompt, a tool call, or the end of a session."""
    base = {"session_id": session, "cwd": cwd, "transcript_path": f"{cwd}/.t/{session}.jsonl"}
    command_line = f"pytest -q tests/test_parser.py -k case_{agent.replace('-', '_')}_{i}"
    if agent == "gemini":
        if step == "prompt":
            return "BeforeAgent", {**base, "hook_event_name": "BeforeAgent", "prompt": prompt}
        if step == "tool":
            return "AfterTool", {
                **base,
                "hook_event_name": "AfterTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": command_line},
                "tool_response": {"llmContent": "1 passed", "returnDisplay": "1 passed"},
            }
        return "SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}
    if step == "prompt":
        return "UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    if step == "tool":
        return "PostToolUse", {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"call_{agent}_{i}",
            "tool_input": {"command": command_line},
            "tool_response": {"stdout": "1 passed in 0.12s", "stderr": "", "interrupted": False}
            if agent == "claude-code"
            else "1 passed in 0.12s",
        }
    return "SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--short", action="store_true", help="20 seconds: a quick check")
    parser.add_argument("--history", type=int, default=500, help="memories in the home before the load")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (its lock log)")
    args = parser.parse_args(argv)
    seconds = 20.0 if args.short else args.seconds
    base = Path(tempfile.mkdtemp(prefix="cmem-load-"))
    try:
        run = Run(base, seconds)
        run.prepare(args.history)
        before = load_average()
        started = time.monotonic()
        run.run()
        wall = time.monotonic() - started
        after = load_average()
        lost = run.lost()
        table = {
            kind: {
                "count": len(times),
                "failed": len(run.tally.failed.get(kind, [])),
                "p50_s": round(percentile(times, 0.50), 3),
                "p99_s": round(percentile(times, 0.99), 3),
                "max_s": round(max(times), 3),
            }
            for kind, times in sorted(run.tally.times.items())
        }
        result = {
            "seconds": round(wall, 1),
            "cpus": os.cpu_count(),
            "load_average_before": before,
            "load_average_after": after,
            "operations": table,
            "failures": {k: v[:5] for k, v in run.tally.failed.items()},
            "lost": {k: v if isinstance(v, int) else len(v) for k, v in lost.items()},
            "lock_holds_over_1s": run.holds_over(1000),
            "longest_lock_holds": run.longest_holds(),
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"{wall:.0f} s, {os.cpu_count()} CPUs, load average {before} before, {after} after")
            print(f"{'operation':<18}{'count':>7}{'failed':>8}{'p50 s':>8}{'p99 s':>8}{'max s':>8}")
            for kind, row in table.items():
                print(
                    f"{kind:<18}{row['count']:>7}{row['failed']:>8}{row['p50_s']:>8.3f}"
                    f"{row['p99_s']:>8.3f}{row['max_s']:>8.3f}"
                )
            print(
                f"lost: {len(lost['adds_lost'])} of {lost['adds']} adds, {len(lost['prompts_lost'])} of "
                f"{lost['prompts']} hook prompts; spool left {lost['spool_left']}"
            )
            print(f"write-lock holds over 1 s: {result['lock_holds_over_1s']}; longest:")
            for line in result["longest_lock_holds"]:
                print(f"  {line}")
            for kind, errors in result["failures"].items():
                print(f"failed {kind}: {errors[0]}")
        return 0
    finally:
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
