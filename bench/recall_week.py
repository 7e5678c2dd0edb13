"""Recall at the moment of need, judged on a labelled week: how often what the hooks inject on a prompt or a
file read is the memory that would help, how often it is noise, and what it costs.

Week 1 is bench/agent_week.py's (three small git repositories made in a temporary folder, nine Claude
Code sessions sent to `cmem hook EVENT` one process per event, the agent's own `cmem add` notes). Then the
labelled items of bench/data/recall-week/labels.json, written before any recall code existed: prompts as
developers write them, and file reads, each naming the memories that would help, or none. Week 2
(bench/data/recall-week-2/week.json) holds its repositories, sessions and labels in one file: a
TypeScript shop, a Go consumer and a Rust log shipper, written before the rule's second tuning and judged
only (every item is ``held``). Week 3 (bench/data/recall-week-3/week.json, the same form: Terraform and
Kubernetes, an Android app, dbt models) was written after week 2's one blind run, before weeks 1 and 2
were tuned on item by item. Week 4 (bench/data/recall-week-4/week.json: a pandas and LightGBM notebook
repository, a Laravel shop, STM32 firmware in C) was written before the fourth round's rules. Each item runs in
a new session, through the real hooks (SessionStart, then UserPromptSubmit or PostToolUse Read), and what
the hook answered (``additionalContext``) is read back.

Figures, for the prompts and the file reads, on the ``tune`` half (looked at while the bar was set), the
``held`` half (judged only) or both:

- precision: injected memories that are labelled helpful, over all injected;
- recall: items with a helpful memory that got one;
- false injections: items labelled none that got anything;
- tokens: the median injected text's size over the items that got one;
- first: items whose first injected memory is a helpful one, over those that got a helpful one;
- search: for the prompts, whether `cmem search PROMPT --mode keyword` ranks the helpful note above its
  own session's prompt, summary and tool records (issue 44 item 6).

``--latency`` times the UserPromptSubmit hook with recall against the same hook with ``[recall] prompt =
false``, paired (A B A B ...), on a home of ``--memories`` notes: p50 and p95 of each, and the ratio.

    python -m bench.recall_week [--week 1|2|3|4] [--split tune|held|all] [--bar 0.45] [--json]
    python -m bench.recall_week --latency [--memories 10000] [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.agent_week import Replay, environment
from bench.hooks import command

LABELS = Path(__file__).parent / "data" / "recall-week" / "labels.json"
WEEKS = {"1": LABELS, **{n: Path(__file__).parent / "data" / f"recall-week-{n}" / "week.json" for n in "234"}}
# Files the labelled reads name that the week's repositories do not hold: made before the reads.
EXTRA_FILES = {
    ("invoices", "README.md"): "# invoices\n\nInvoice totals, VAT and numbering.\n",
    ("authsvc", "src/__init__.py"): "",
    ("etl", "pyproject.toml"): '[project]\nname = "etl"\nversion = "0.1.0"\n',
}
_ID = re.compile(r"^#(\d+) ", re.MULTILINE)


def load_labels(week: str = "1") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(WEEKS[week].read_text(encoding="utf-8"))
    return data


class WeekReplay(Replay):
    """A week whose repositories and sessions come from its data file (week 2), not bench/agent_week.py."""

    def __init__(self, root: Path, env: dict[str, str], week: dict[str, Any]) -> None:
        super().__init__(root, env, "none")
        self.week = week

    def projects(self) -> dict[str, dict[str, str]]:
        return self.week["projects"]

    def replay(self) -> None:
        self.setup()
        for number, (project, steps) in enumerate(self.week["sessions"]):
            self.session(number, project, steps)


def hook(replay: Replay, event: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Run one hook as Claude Code does; its JSON answer, if any."""
    proc = subprocess.run([*command(), "hook", event], input=json.dumps(data), capture_output=True, text=True,
                          env=replay.env, timeout=120)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"hook {event} exited {proc.returncode}: {proc.stderr[-2000:]}")
    out = proc.stdout.strip()
    return json.loads(out) if out else None


def injected(answer: dict[str, Any] | None) -> tuple[list[int], str]:
    """The memory ids an answer injected, in order, and its text."""
    specific = (answer or {}).get("hookSpecificOutput") or {}
    text = specific.get("additionalContext") or ""
    return [int(m) for m in _ID.findall(text)], text


def memory_ids(replay: Replay, memories: dict[str, str]) -> dict[str, set[int]]:
    """Each labelled memory's name -> the ids of the notes whose title starts with its prefix."""
    rows = json.loads(replay.cmem("search", "--all-projects", "--all", "--json").stdout)
    out: dict[str, set[int]] = {}
    for name, prefix in memories.items():
        out[name] = {
            int(r["id"]) for r in rows if r.get("kind") == "observation" and r["title"].startswith(prefix)
        }
        if not out[name]:
            raise SystemExit(f"the week recorded no memory titled {prefix!r}")
    return out


def ask(replay: Replay, item: dict[str, Any], number: int) -> dict[str, Any]:
    """One labelled item in a session of its own: what the hook injected."""
    repo = replay.repo(item["project"])
    sid = str(uuid.UUID(int=10_000 + number))
    base = {"session_id": sid, "transcript_path": f"{replay.root}/t/{sid}.jsonl", "cwd": str(repo),
            "permission_mode": "default"}  # fmt: skip
    hook(replay, "SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"})
    started = time.perf_counter()
    if "text" in item:
        answer = hook(
            replay,
            "UserPromptSubmit",
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": item["text"]},
        )
    else:
        path = repo / item["path"]
        text = path.read_text(encoding="utf-8")
        answer = hook(replay, "PostToolUse", {
            **base, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": f"toolu_r{number}",
            "tool_input": {"file_path": str(path)},
            "tool_response": {"type": "text", "file": {"filePath": str(path), "content": text}},
        })  # fmt: skip
    ms = (time.perf_counter() - started) * 1000
    ids, text = injected(answer)
    weighed = []
    if "text" in item:  # every note weighed and its score, for tuning the bar on the tune half
        shown = json.loads(replay.cmem("recall", "--prompt", item["text"], "--json", cwd=repo).stdout)
        weighed = [(p["id"], p["score"]) for p in shown["weighed"]]
    return {"ids": ids, "text": text, "tokens": (len(text) + 3) // 4 if text else 0, "ms": round(ms, 1),
            "weighed": weighed}  # fmt: skip


def note_first_in_search(
    replay: Replay, items: list[dict[str, Any]], ids: dict[str, set[int]]
) -> dict[str, Any]:
    """Issue 44 item 6 in search: for each prompt with a helpful note, `cmem search PROMPT --mode keyword`
    from its project; of the rows of that note's session (its prompt, summary, tool records, notes), is a
    helpful note the first? Counted over the prompts whose helpful note is in the first 20 rows."""
    shown = first = 0
    for item in items:
        if not item["helpful"]:
            continue
        helpful = set().union(*(ids[name] for name in item["helpful"]))
        proc = replay.cmem("search", item["text"], "--mode", "keyword", "--json", "-n", "20",
                           cwd=replay.repo(item["project"]))  # fmt: skip
        rows = json.loads(proc.stdout or "[]")
        notes = [r for r in rows if r.get("kind") == "observation" and r["id"] in helpful]
        if not notes:
            continue
        shown += 1
        own = [r for r in rows if r.get("session") == notes[0].get("session")]
        first += own[0]["id"] == notes[0]["id"] and own[0].get("kind") == "observation"
    return {"note_first": round(first / shown, 3) if shown else None, "found": shown, "first": first}


def score(
    items: list[dict[str, Any]], results: list[dict[str, Any]], ids: dict[str, set[int]]
) -> dict[str, Any]:
    shown = helpful_shown = wanted = got = none_items = false = first = 0
    tokens = []
    for item, result in zip(items, results, strict=True):
        helpful = set().union(*(ids[name] for name in item["helpful"])) if item["helpful"] else set()
        shown += len(result["ids"])
        good = [i for i in result["ids"] if i in helpful]
        helpful_shown += len(good)
        if result["ids"]:
            tokens.append(result["tokens"])
        if helpful:
            wanted += 1
            if good:
                got += 1
                first += result["ids"][0] in helpful
        else:
            none_items += 1
            false += bool(result["ids"])
    return {
        "items": len(items),
        "precision": round(helpful_shown / shown, 3) if shown else None,
        "recall": round(got / wanted, 3) if wanted else None,
        "false_injections": round(false / none_items, 3) if none_items else None,
        "median_tokens": statistics.median(tokens) if tokens else 0,
        "first": round(first / got, 3) if got else None,
        "counts": {
            "injected": shown,
            "helpful_injected": helpful_shown,
            "with_helpful": wanted,
            "got_helpful": got,
            "none": none_items,
            "none_injected": false,
        },  # fmt: skip
    }


def week(root: Path, split: str, bar: float | None, which: str = "1") -> dict[str, Any]:
    env = environment(root, "none", background=False)
    if bar is not None:
        config = root / "config" / "cmem" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"[recall]\nbar = {bar}\n", encoding="utf-8")
    labels = load_labels(which)
    replay = Replay(root, env, "none") if which == "1" else WeekReplay(root, env, labels)
    replay.replay()
    extra = EXTRA_FILES if which == "1" else {}
    for (project, rel), text in extra.items():
        (replay.repo(project) / rel).write_text(text, encoding="utf-8")
    ids = memory_ids(replay, labels["memories"])
    report: dict[str, Any] = {"week": which, "split": split, "bar": bar}
    for kind in ("prompts", "files"):
        items = [i for i in labels[kind] if split == "all" or i["split"] == split]
        results = [ask(replay, item, n + (0 if kind == "prompts" else 500)) for n, item in enumerate(items)]
        report[kind] = score(items, results, ids)
        report[kind]["hook_ms_median"] = statistics.median(r["ms"] for r in results)
        if kind == "prompts":
            report[kind]["search"] = note_first_in_search(replay, items, ids)
        report[kind]["detail"] = [
            {
                "item": item.get("text") or item.get("path"),
                "helpful": item["helpful"],
                "injected": r["ids"],
                "weighed": r["weighed"],
            }
            for item, r in zip(items, results, strict=True)
        ]
    report["ids"] = {name: sorted(v) for name, v in ids.items()}
    return report


# -- latency ------------------------------------------------------------------------------------------------
def seed(root: Path, memories: int) -> tuple[dict[str, str], Path]:
    """A home under ``root`` holding ``memories`` notes of project ``shop`` (40 a session); its environment
    and the repository's folder."""
    env = environment(root, "none", background=False)
    repo = root / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    words = [
        "cache",
        "invoice",
        "token",
        "parser",
        "retry",
        "timezone",
        "encoding",
        "schema",
        "limit",
        "queue",
    ]
    lines = [
        json.dumps({
            "type": ("decision", "bugfix", "discovery", "insight")[i % 4],
            "title": f"{words[i % 10].title()} rule {i}: keep the {words[(i * 7) % 10]} path simple",
            "narrative": f"Why the {words[i % 10]} code does what it does, note {i}. " * 3,
            "project": "shop", "session": f"old-{i // 40}",
        })
        for i in range(memories)
    ]  # fmt: skip
    for start in range(0, len(lines), 2000):
        subprocess.run([*command(), "add", "--json", "-"], input="\n".join(lines[start : start + 2000]), text=True,
                       env=env, cwd=repo, check=True, capture_output=True, timeout=600)  # fmt: skip
    return env, repo


def latency(root: Path, memories: int, runs: int) -> dict[str, Any]:
    """UserPromptSubmit with prompt recall against the same hook with it off, paired, at ``memories``."""
    env, repo = seed(root, memories)
    off = root / "off.toml"
    off.write_text("[recall]\nprompt = false\n", encoding="utf-8")
    prompts = ["why does the invoice cache keep stale totals", "retry the queue when the schema changes",
               "token limit for the parser", "fix the timezone in the nightly encoding job"]  # fmt: skip
    timings: dict[str, list[float]] = {"recall": [], "off": []}
    for n in range(runs):
        for case in ("recall", "off") if n % 2 == 0 else ("off", "recall"):
            case_env = {**env, "CMEM_CONFIG": str(off)} if case == "off" else env
            data = {"session_id": f"lat-{n}", "transcript_path": "/tmp/t.jsonl", "cwd": str(repo),
                    "hook_event_name": "UserPromptSubmit", "prompt": prompts[n % len(prompts)]}  # fmt: skip
            started = time.perf_counter()
            subprocess.run([*command(), "hook", "UserPromptSubmit"], input=json.dumps(data), text=True,
                           env=case_env, capture_output=True, check=True, timeout=120)  # fmt: skip
            timings[case].append((time.perf_counter() - started) * 1000)

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 1)

    out: dict[str, Any] = {"memories": memories, "runs": runs}
    for case, values in timings.items():
        out[case] = {"p50_ms": pct(values, 0.5), "p95_ms": pct(values, 0.95)}
    out["p95_ratio"] = round(out["recall"]["p95_ms"] / out["off"]["p95_ms"], 3)
    out["p50_ratio"] = round(out["recall"]["p50_ms"] / out["off"]["p50_ms"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--week", choices=sorted(WEEKS), default="1", help="which labelled week")
    parser.add_argument("--split", choices=("tune", "held", "all"), default="held")
    parser.add_argument("--bar", type=float, help="[recall] bar for this run (default: cmem's)")
    parser.add_argument("--latency", action="store_true", help="time the prompt hook with and without recall")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--detail", action="store_true", help="print each item's injected ids")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cmem-recall-week-") as tmp:
        report = (
            latency(Path(tmp), args.memories, args.runs)
            if args.latency
            else week(Path(tmp), args.split, args.bar, args.week)
        )
    if args.json:
        print(json.dumps(report, indent=2))
        return
    if args.latency:
        print(f"UserPromptSubmit at {report['memories']} memories, {report['runs']} paired runs")
        for case in ("recall", "off"):
            print(f"  {case:7} p50 {report[case]['p50_ms']:7.1f} ms   p95 {report[case]['p95_ms']:7.1f} ms")
        print(f"  p95 ratio {report['p95_ratio']}   p50 ratio {report['p50_ratio']}")
        return
    print(
        f"week: {report['week']}   split: {report['split']}   bar: {report['bar'] if report['bar'] is not None else 'default'}"
    )
    print(
        f"{'':8}{'items':>6}{'precision':>11}{'recall':>8}{'false':>7}{'tokens':>8}{'first':>7}{'hook ms':>9}"
    )
    for kind in ("prompts", "files"):
        r = report[kind]
        cells = [
            r["precision"],
            r["recall"],
            r["false_injections"],
            r["median_tokens"],
            r["first"],
            r["hook_ms_median"],
        ]
        print(
            f"{kind:8}{r['items']:>6}"
            + "".join(
                f"{'-' if c is None else c:>{w}}" for c, w in zip(cells, (11, 8, 7, 8, 7, 9), strict=True)
            )
        )
    found = report["prompts"]["search"]
    print(f"search (keyword): a helpful note first among its session's rows for {found['first']} of "
          f"{found['found']} prompts whose note it shows")  # fmt: skip
    if args.detail:
        for kind in ("prompts", "files"):
            for row in report[kind]["detail"]:
                helpful = (
                    sorted(set().union(*(report["ids"][n] for n in row["helpful"]))) if row["helpful"] else []
                )
                print(f"  {kind[:-1]:6} {str(row['injected']):14} want {str(helpful):10} {row['item']}")
                if row["weighed"]:
                    print("         weighed: " + " ".join(f"{i}:{s}" for i, s in row["weighed"][:6]))


if __name__ == "__main__":
    sys.exit(main())
