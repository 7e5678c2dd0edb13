"""An independent re-run of issue 42's reliability probes on the merged code (round 5): a crash, a hostile
teammate and a busy minute, through real processes and a bare git repository as the remote. Not a test.

Kinds of trial (each counted; a trial that breaks a promise is a finding, printed with what it saw):
- ``hook-kill``: a detached hook killed with SIGKILL at a random point (its own process after a random
  delay, its detached child found by an environment mark, or the child's test points); after the next hooks
  replay the spool, an event whose hook answered is stored exactly once, a killed one at most once, and no
  claim or temporary file is left behind.
- ``hostile``: every recorded payload of the nine agents with extra hooks (tests/fixtures/agents) mutated
  (secrets and ``<private>`` text in values and keys, NUL, wrong types, deep nesting, a huge field); the
  hook exits 0 with no stderr, and no secret or private text reaches the spool, the store or the export.
- ``bulk-kill`` / ``rebuild-kill``: ``add --json`` (all-or-nothing) and ``export --rebuild`` killed at a
  random time; then no record is half there, ``doctor`` quick and ``--full`` agree, and ``doctor --fix``
  leaves a clean home whose export has one file per memory.
- ``sync-kill``: two homes on one bare remote, a sync killed at a random time; after the next syncs both
  homes hold the same memories, none doubled.
- ``git-link``: a teammate commits a symbolic link to a local file; a sync never adopts its target's text.
- ``tree-link``: a hard link and a FIFO put into the export tree; neither is read or waited on by
  ``doctor``, ``doctor --full`` or a sync.
- ``sessions``: the shell-sessions folder and files a hook writes are 0700/0600.

    nice -n 10 python -m bench.probe_round5 [--hook-kills 60] [--hostile-rounds 1] [--bulk-kills 6]
        [--sync-kills 6] [--seed 5] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.hooks import command

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agents"
AGENTS = ("claude-code", "codex", "gemini", "cursor", "copilot", "qwen", "droid", "kilo", "cline")
SECRETS = ("AKIAIOSFODNN7EXAMPLE", "ghp_" + "1234567890" * 3 + "123456", "PRIVMARK")
MARK = "CMEM_PROBE_TRIAL"


class Home:
    """One cmem home with a git repository to work in."""

    def __init__(self, root: Path, name: str = "home") -> None:
        self.root, self.home = root, root / name
        self.work = root / f"{name}-work" / "orders-api"
        self.work.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.work)], check=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CMEM_")},
            "CMEM_HOME": str(self.home),
            "HOME": str(root / f"{name}-user"),
            "XDG_CONFIG_HOME": str(root / f"{name}-config"),
            "CMEM_EMBED_MODEL": "none",
            "CMEM_INDEX_BACKGROUND": "off",
            "CMEM_HOOK_DETACH": "on",
            "GIT_AUTHOR_NAME": "probe",
            "GIT_AUTHOR_EMAIL": "probe@example.com",
            "GIT_COMMITTER_NAME": "probe",
            "GIT_COMMITTER_EMAIL": "probe@example.com",
        }

    def run(
        self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
    ):
        return subprocess.run(
            [*command(), *args],
            input=stdin,
            env={**self.env, **(env or {})},
            cwd=self.work,
            capture_output=True,
            timeout=timeout,
        )

    def start(
        self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        proc = subprocess.Popen(
            [*command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**self.env, **(env or {})},
            cwd=self.work,
        )
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # a hook killed before it read its payload
                proc.stdin.write(stdin)  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
        return proc

    def sql(self, query: str, params: tuple = ()) -> list[tuple]:
        import apsw

        conn = apsw.Connection(str(self.home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
        conn.setbusytimeout(30_000)
        try:
            return list(conn.execute(query, params))
        finally:
            conn.close()

    def spool_debris(self) -> list[str]:
        folder = self.home / "spool"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def flush(self, rounds: int = 20) -> None:
        """Hooks until the spool is empty (each replays what is left)."""
        for i in range(rounds):
            self.run("hook", "SubagentStop", stdin=json.dumps(claude("SubagentStop", f"flush-{i}", self.work)).encode(),
                     env={"CMEM_HOOK_DETACH": "off"})  # fmt: skip
            if not [n for n in self.spool_debris() if not n.endswith(".tmp")]:
                return
            time.sleep(0.3)

    def doctor(self, *extra: str) -> tuple[int, dict[str, str]]:
        out = self.run("doctor", "--json", *extra)
        try:
            data = json.loads(out.stdout)
        except ValueError:
            return out.returncode, {"unparsed": out.stderr.decode(errors="replace")[:200]}
        checks = {c["name"]: c["status"] for c in data.get("checks", []) if c["name"] != "bytecode"}
        return out.returncode, checks


def claude(event: str, session: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(cwd), "hook_event_name": event, "transcript_path": "/nonexistent",
            **fields}  # fmt: skip


def kill_child(trial: str, delay: float) -> bool:
    """SIGKILL the detached hook child carrying ``MARK=trial`` in its environment, ``delay`` seconds after
    it is seen (the hook's own process, a child of this one, carries the mark too and is left alone)."""
    needle, mine = f"{MARK}={trial}".encode(), os.getpid()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if needle not in fh.read().split(b"\0"):
                        continue
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    parent = int(fh.read().rpartition(b")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == mine:
                continue  # the hook's own process
            time.sleep(delay)
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
                return True
            return False
        time.sleep(0.005)
    return False


def hook_kills(root: Path, trials: int, rng: random.Random, found: list[str]) -> Counter:
    home = Home(root, "hooks")
    home.run("add", "Retries back off", "--type", "decision")
    kinds: Counter = Counter()
    answered: dict[str, bool] = {}
    for i in range(trials):
        session = f"k-{i}"
        kind = rng.choice(["parent", "child", "before-claim", "in-transaction", "none"])
        kinds[kind] += 1
        data = claude("PostToolUse", session, home.work, tool_name="Bash", tool_input={"command": f"make deploy-{i}"},
                      tool_response={"stdout": f"deployed {i}"})  # fmt: skip
        env = {MARK: session}
        if kind in ("before-claim", "in-transaction"):
            env["CMEM_HOOK_TEST_DIE"] = kind
        proc = home.start("hook", "PostToolUse", stdin=json.dumps(data).encode(), env=env)
        if kind == "parent":
            time.sleep(rng.uniform(0, 0.25))
            proc.send_signal(signal.SIGKILL)
        elif kind == "child":
            kinds["child-killed"] += kill_child(session, rng.uniform(0, 0.1))
        proc.wait(timeout=60)
        answered[session] = proc.returncode == 0
        if rng.random() < 0.3:
            home.flush(1)
    home.flush()
    time.sleep(1)
    home.flush()
    counts = dict(
        home.sql("SELECT session, count(*) FROM observations WHERE session LIKE 'k-%' GROUP BY session")
    )
    for session, ok in answered.items():
        n = counts.get(session, 0)
        if n > 1 or (ok and n != 1):
            found.append(f"hook-kill {session}: answered={ok} stored {n} times")
    debris = home.spool_debris()
    if debris:
        found.append(f"hook-kill: spool debris after the replays: {debris[:5]}")
    quick, full = home.doctor(), home.doctor("--full")
    if quick != full or quick[0] != 0:
        found.append(f"hook-kill: doctor quick {quick} vs full {full}")
    kinds["answered"] = sum(answered.values())
    kinds["stored"] = sum(1 for s in answered if counts.get(s))
    return kinds


def _poison(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """Secrets and private text into every string and every object (as keys too)."""
    aws, token, private = SECRETS
    if isinstance(value, str):
        return value + rng.choice([f" {aws}", f" token={token}", f" <private>{private} x</private>"])
    if isinstance(value, list):
        return [_poison(v, rng, depth + 1) for v in value]
    if isinstance(value, dict):
        out = {k: (v if k in ("session_id", "sessionId", "conversation_id", "hook_event_name", "hookEventName",
                              "taskId", "cwd") else _poison(v, rng, depth + 1)) for k, v in value.items()}  # fmt: skip
        out[rng.choice([aws, f"<private>{private}</private>", token])] = rng.choice(["v", 1, [token]])
        return out
    return value


MUTATIONS = ("poison", "nul", "wrong-type", "deep", "huge", "not-json", "empty")


def mutate(data: dict[str, Any], kind: str, rng: random.Random) -> bytes:
    aws, token, private = SECRETS
    data = _poison(data, rng)
    keys = [k for k in data if k not in ("session_id", "sessionId", "conversation_id", "taskId")]
    key = rng.choice(keys) if keys else "x"
    if kind == "nul":
        data[key] = f"a\u0000b <private>{private}</private> {aws}"
    elif kind == "wrong-type":
        data[key] = rng.choice([[1, 2, aws], 3.5, None, True, {"k": token}])
    elif kind == "deep":
        deep: Any = f"{aws} bottom"
        for _ in range(rng.choice([50, 500, 5000])):
            deep = {"d": deep}
        data[key] = deep
    elif kind == "huge":
        data[key] = ("x" * 1_000_000) + f" {token} <private>{private}</private>"
    if kind == "not-json":
        return (
            b'{"session_id": "' + aws.encode() + b'", "prompt": "<private>' + private.encode() + b"</private>"
        )
    if kind == "empty":
        return b""
    try:
        return json.dumps(data).encode()
    except RecursionError:
        return json.dumps({**data, key: "too deep to encode"}).encode()


def fixtures() -> list[tuple[str, str, dict[str, Any]]]:
    """(agent, event, payload) for every recorded payload, and Claude Code's own shapes."""
    found = []
    for agent in AGENTS[1:]:
        for path in sorted((FIXTURES / agent).glob("*.json")):
            try:
                found.append((agent, path.name.split(".")[0], json.loads(path.read_text())))
            except ValueError:
                continue
    cwd = Path("/tmp/project")
    found += [
        ("claude-code", "SessionStart", claude("SessionStart", "c-1", cwd, source="startup")),
        ("claude-code", "UserPromptSubmit", claude("UserPromptSubmit", "c-1", cwd, prompt="fix the retry")),
        ("claude-code", "PostToolUse", claude("PostToolUse", "c-1", cwd, tool_name="Bash",
                                               tool_input={"command": "make"}, tool_response={"stdout": "ok"})),
        ("claude-code", "PostToolUse", claude("PostToolUse", "c-1", cwd, tool_name="Edit",
                                               tool_input={"file_path": "/tmp/project/a.py", "old_string": "a",
                                                           "new_string": "b"}, tool_response={})),
        ("claude-code", "Stop", claude("Stop", "c-1", cwd, last_assistant_message="done")),
        ("claude-code", "SessionEnd", claude("SessionEnd", "c-1", cwd)),
    ]  # fmt: skip
    return found


def leaked(home: Path) -> list[str]:
    hits = []
    for path in sorted(home.rglob("*")):
        if not path.is_file() or "logs" in path.parts:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for secret in SECRETS:
            at = data.find(secret.encode())
            if at >= 0:
                hits.append(f"{path.relative_to(home)}: {data[max(0, at - 80) : at + 24]!r}")
    return hits


def hostile(root: Path, rounds: int, rng: random.Random, found: list[str]) -> Counter:
    home = Home(root, "hostile")
    home.run("add", "Retries back off", "--type", "decision")
    kinds: Counter = Counter()
    for _ in range(rounds):
        for agent, event, data in fixtures():
            for kind in MUTATIONS:
                kinds[kind] += 1
                body = mutate(json.loads(json.dumps(data)), kind, rng)
                die = rng.choice(["before-claim", "in-transaction", ""])  # leave some events in the spool
                out = home.run("hook", "--agent", agent, event, stdin=body, env={"CMEM_HOOK_TEST_DIE": die})
                if out.returncode != 0 or out.stderr:
                    found.append(
                        f"hostile {agent} {event} {kind}: exit {out.returncode} {out.stderr[:200]!r}"
                    )
                if out.stdout.strip():
                    try:
                        json.loads(out.stdout)
                    except ValueError:
                        found.append(f"hostile {agent} {event} {kind}: stdout not JSON {out.stdout[:100]!r}")
                hits = leaked(home.home)
                if hits:
                    found.append(f"hostile {agent} {event} {kind}: leaked {hits[:3]}")
                    for path in (home.home / "spool").glob("*"):
                        path.unlink()
    home.flush()
    hits = leaked(home.home)
    if hits:
        found.append(f"hostile after the replays: leaked {hits[:3]}")
    kinds["payloads"] = sum(kinds[m] for m in MUTATIONS)
    return kinds


def bulk_records(count: int, tag: str) -> bytes:
    return json.dumps([{"title": f"{tag} bulk memory {i}", "project": "orders-api", "narrative": f"{tag} words {i} " * 30,
                        "facts": [f"fact {i}"], "concepts": ["bulk"]} for i in range(count)]).encode()  # fmt: skip


def bulk_kills(root: Path, trials: int, rng: random.Random, found: list[str]) -> Counter:
    home = Home(root, "bulk")
    home.run("add", "Retries back off", "--type", "decision")
    kinds: Counter = Counter()
    for i in range(trials):
        kind = rng.choice(["bulk-kill", "rebuild-kill"])
        kinds[kind] += 1
        tag = f"b{i}"
        if kind == "bulk-kill":
            proc = home.start("add", "--json", "-", stdin=bulk_records(2000, tag))
        else:
            home.run("add", "--json", "-", stdin=bulk_records(300, tag))
            proc = home.start("export", "--rebuild")
        time.sleep(rng.uniform(0.1, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        [(n,)] = home.sql("SELECT count(*) FROM observations WHERE title LIKE ?", (f"{tag} bulk memory %",))
        if kind == "bulk-kill" and n not in (0, 2000):
            found.append(f"bulk-kill {tag}: {n} of 2000 records stored")
        quick, full = home.doctor(), home.doctor("--full")
        if quick != full:
            found.append(f"{kind} {tag}: doctor quick {quick} vs full {full}")
        fixed = home.run("doctor", "--fix")
        after = home.doctor("--full")
        if after[0] != 0:
            found.append(f"{kind} {tag}: after doctor --fix (exit {fixed.returncode}): {after}")
    [(stored,)] = home.sql("SELECT count(*) FROM observations")
    files = sum(1 for p in (home.home / "export").rglob("*.md") if ".cmem-staging" not in p.parts)
    staging = home.home / "export" / ".cmem-staging"
    left = list(staging.rglob("*")) if staging.exists() else []
    if files != stored:
        found.append(f"bulk: {stored} memories, {files} export files")
    if left:
        found.append(f"bulk: staging debris {[str(p) for p in left[:3]]}")
    return kinds


def two_homes(root: Path) -> tuple[Home, Home, Path]:
    remote = root / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a, b = Home(root, "a"), Home(root, "b")
    a.run("add", "First shared memory", "--type", "decision")
    for h in (a, b):
        out = h.run("sync", "init", str(remote))
        if out.returncode != 0:
            raise SystemExit(f"sync init: {out.stderr.decode()}")
    return a, b, remote


def uids(h: Home) -> Counter:
    return Counter(r[0] for r in h.sql("SELECT uid FROM observations"))


def sync_kills(root: Path, trials: int, rng: random.Random, found: list[str]) -> Counter:
    a, b, _ = two_homes(root)
    kinds: Counter = Counter()
    for i in range(trials):
        kinds["sync-kill"] += 1
        writer, other = (a, b) if i % 2 == 0 else (b, a)
        writer.run("add", "--json", "-", stdin=bulk_records(rng.choice([1, 20, 200]), f"s{i}"))
        proc = writer.start("sync")
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    for _ in range(3):
        for h in (a, b):
            h.run("sync")
    ua, ub = uids(a), uids(b)
    if ua != ub:
        found.append(f"sync-kill: homes differ: {len(ua)} vs {len(ub)} memories")
    doubled = [u for u, n in (ua + ub).items() if n > 2]
    if doubled:
        found.append(f"sync-kill: doubled uids {doubled[:3]}")
    for h in (a, b):
        [(dup,)] = h.sql(
            "SELECT count(*) FROM (SELECT title FROM observations GROUP BY title HAVING count(*) > 1)"
        )
        if dup:
            found.append(f"sync-kill: {dup} titles stored twice in {h.home.name}")
        quick, full = h.doctor(), h.doctor("--full")
        if quick != full:
            found.append(f"sync-kill: doctor quick {quick} vs full {full}")
    return kinds


def links(root: Path, found: list[str]) -> Counter:
    a, b, remote = two_homes(root)
    kinds: Counter = Counter()
    secret = root / "outside-secret.txt"
    secret.write_text("---\ntitle: OUTSIDE-SECRET-TEXT\n---\nOUTSIDE-SECRET-TEXT\n")
    # a teammate's clone commits a symbolic link next to the memories
    clone = root / "teammate"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=a.env)
    folders = [p for p in clone.iterdir() if p.is_dir() and p.name != ".git"]
    where = folders[0] if folders else clone
    (where / "stolen.md").symlink_to(secret)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True, env=a.env)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "link"], check=True, env=a.env)
    subprocess.run(["git", "-C", str(clone), "push", "-q"], check=True, env=a.env)
    kinds["git-link"] += 1
    out = b.run("sync")
    if out.returncode != 4 or b"stolen.md" not in out.stderr:
        found.append(f"git-link: sync exit {out.returncode}, {out.stderr[:200]!r}")
    # a hard link and a FIFO in a home's own export tree
    export = b.home / "export"
    target = next(p for p in export.rglob("*.md") if ".git" not in p.parts).parent
    os.link(secret, target / "hard.md")
    os.mkfifo(target / "pipe.md")
    for args in (("doctor",), ("doctor", "--full"), ("doctor", "--fix"), ("sync",)):
        kinds["tree-link"] += 1
        try:
            out = b.run(*args, timeout=60)
        except subprocess.TimeoutExpired:
            found.append(f"tree-link: `{' '.join(args)}` hung on the FIFO")
            continue
        if b"Traceback" in out.stderr:
            found.append(f"tree-link: `{' '.join(args)}` traceback")
    stored = b.sql(
        "SELECT count(*) FROM observations WHERE title LIKE '%OUTSIDE-SECRET%' OR narrative LIKE '%OUTSIDE-SECRET%'"
    )
    if stored[0][0]:
        found.append("tree-link: the linked file's text was adopted")
    pushed = subprocess.run(
        ["git", "-C", str(remote), "grep", "-l", "OUTSIDE-SECRET", "main"], capture_output=True
    )
    if pushed.stdout.strip():
        found.append(f"git-link: the outside text was pushed: {pushed.stdout[:200]!r}")
    return kinds


def sessions(root: Path, found: list[str]) -> Counter:
    home = Home(root, "sess")
    kinds: Counter = Counter()
    for agent in ("gemini", "opencode", "qwen", "droid", "kilo", "copilot", "cline"):
        kinds["sessions"] += 1
        start = {
            "hook_event_name": "SessionStart",
            "session_id": f"{agent}-1",
            "cwd": str(home.work),
            "source": "startup",
        }
        home.run("hook", "--agent", agent, "SessionStart", stdin=json.dumps(start).encode())  # fmt: skip
    folder = home.home / "shell-sessions"
    if folder.is_dir():
        if folder.stat().st_mode & 0o777 != 0o700:
            found.append(f"sessions: folder mode {oct(folder.stat().st_mode & 0o777)}")
        for p in folder.iterdir():
            if p.stat().st_mode & 0o777 != 0o600:
                found.append(f"sessions: {p.name} mode {oct(p.stat().st_mode & 0o777)}")
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hook-kills", type=int, default=60)
    parser.add_argument("--hostile-rounds", type=int, default=1)
    parser.add_argument("--bulk-kills", type=int, default=6)
    parser.add_argument("--sync-kills", type=int, default=6)
    parser.add_argument(
        "--only", default="", help="comma-separated parts: hooks,hostile,bulk,sync,links,sessions"
    )
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    parts = {
        "hooks": lambda r, f: hook_kills(r, args.hook_kills, rng, f),
        "hostile": lambda r, f: hostile(r, args.hostile_rounds, rng, f),
        "bulk": lambda r, f: bulk_kills(r, args.bulk_kills, rng, f),
        "sync": lambda r, f: sync_kills(r, args.sync_kills, rng, f),
        "links": links,
        "sessions": sessions,
    }
    chosen = [p for p in args.only.split(",") if p] or list(parts)
    report: dict[str, Any] = {}
    for name in chosen:
        found: list[str] = []
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"cmem-probe-{name}-") as tmp:
            kinds = parts[name](Path(tmp), found)
        report[name] = {"kinds": dict(kinds), "found": found, "seconds": round(time.monotonic() - started, 1)}
        if not args.json:
            print(f"{name}: {dict(kinds)} found {len(found)} ({report[name]['seconds']} s)", flush=True)
            for line in found:
                print(f"  - {line}", flush=True)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
