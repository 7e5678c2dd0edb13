"""BEAM's knowledge-update questions scored through the CLI: does the current fact win over the replaced one?

A developer talks with an assistant about their own projects over weeks; facts change (a response time
improves, a commit count grows, a deadline moves). Each question names the message(s) that state the
current value and those that stated the old one (../shared/data/beam-ku-dev/SOURCE.md). Every user message
of a chat becomes one observation (title: its first 480 characters, narrative: the whole text when longer;
project: the chat; dated as SOURCE.md says), loaded with ``cmem add --json`` and indexed with ``cmem index``
into a fresh home; each question is asked with ``cmem search QUESTION --project CHAT -n 10 --json``.

Measures (per question, top 10), as SOURCE.md defines them:
- current-first: a current message ranks above every replaced one that is not marked replaced, and is in
  the top 10;
- current@5: a current message is in the top 5;
- replaced-unmarked@5: a replaced message is in the top 5 with no marker;
- current marked: a current message in the top 10 carries a marker itself (a wrong hint).
A row is marked when it carries ``superseded_by`` or ``possibly_superseded_by``; the ``strict`` columns
count ``superseded_by`` alone.

Rows: plain BM25 (SQLite FTS5, porter, over the chat's messages; no cmem), each ``--modes`` of this code,
and with ``--before REF`` the same CLI at an older commit (``git archive``: today's default before a change).

    python -m bench.beam --model minilm.gguf [--work DIR] [--modes auto,keyword] [--before main] [--json]
                         [--data bench/data/ku-written]

The data is read from ../shared/data (or $CMEM_BENCH_DATA) at run time and never copied into the repository.
``--data`` names another folder of the same shape: ``bench/data/ku-written`` is a second set written for
cmem (6 chats in other domains, 26 questions; its README.md says how and when it was written).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CMEM_BENCH_DATA") or REPO.parent / "shared" / "data") / "beam-ku-dev"
TOP = 10
TITLE_CHARS = 480  # under the 500 limit after secrets are redacted (a redaction can be longer)


def load(data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The user messages and the questions (BEAM's are read-only evaluation data, never stored in the
    repository; ``data`` may name another folder of the same shape, e.g. bench/data/ku-written)."""

    def jsonl(name: str) -> list[dict[str, Any]]:
        with open(data / name, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    return jsonl("messages.jsonl"), jsonl("queries.jsonl")


def record(message: dict[str, Any]) -> dict[str, Any]:
    """One user message as the observation an import of the chat would store."""
    text = message["text"]
    out = {"title": text[:TITLE_CHARS], "type": "discovery", "project": message["chat"], "created_at":
           message["date"], "agent": "beam"}  # fmt: skip
    if len(text) > TITLE_CHARS:
        out["narrative"] = text
    return out


class Cli:
    """``python -m cmem_cli`` on one home, from this checkout or another tree (``pythonpath``)."""

    def __init__(self, home: Path, model: str, pythonpath: str | None = None):
        self.home, self.model, self.pythonpath = home, model, pythonpath

    def __call__(self, *args: str, input: str | None = None) -> str:
        env = {**os.environ, "CMEM_HOME": str(self.home), "CMEM_EMBED_MODEL": self.model, "NO_COLOR": "1",
               "XDG_CONFIG_HOME": str(self.home / "config")}  # fmt: skip
        env.pop("CMEM_RERANK_MODEL", None)
        cwd = REPO
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
            cwd = Path(self.pythonpath)
        proc = subprocess.run([sys.executable, "-m", "cmem_cli", *args], input=input, capture_output=True,
                              text=True, env=env, cwd=cwd)  # fmt: skip
        if proc.returncode not in (0, 10):  # 10: nothing matched
            raise SystemExit(
                f"cmem {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}"
            )
        return proc.stdout


def build(cli: Cli, messages: list[dict[str, Any]]) -> dict[str, str]:
    """Load every message with `cmem add --json` and index the home; observation id -> message id."""
    marker = cli.home / "beam-ids.json"
    if marker.exists():
        return json.loads(marker.read_text())
    cli.home.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(record(m), ensure_ascii=False) + "\n" for m in messages)
    ids = cli("add", "--json", "-", input=body).split()
    cli("index", "--json")
    mapping = {obs: m["id"] for obs, m in zip(ids, messages, strict=True)}
    marker.write_text(json.dumps(mapping))
    return mapping


def ranked_by_cli(
    cli: Cli, ids: dict[str, str], mode: str
) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def search(question: dict[str, Any]) -> list[dict[str, Any]]:
        out = cli("search", question["query"], "--project", question["chat"], "-n", str(TOP), "--mode", mode,
                  "--json")  # fmt: skip
        rows = json.loads(out) if out.strip() else []
        return [
            {"id": ids.get(str(r["id"]), ""), "superseded": r.get("superseded_by") is not None,
             "possibly": r.get("possibly_superseded_by") is not None}
            for r in rows
        ]  # fmt: skip

    return search


def ranked_by_bm25(messages: list[dict[str, Any]]) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """Plain FTS5 BM25 (porter) over each chat's user messages: the floor any memory system should beat."""
    import apsw

    from cmem_cli.core.fts import fts_query

    db = apsw.Connection(":memory:")
    db.execute("CREATE VIRTUAL TABLE m USING fts5 (id UNINDEXED, chat UNINDEXED, text, tokenize='porter')")
    with db:
        db.executemany("INSERT INTO m VALUES (?, ?, ?)", [(m["id"], m["chat"], m["text"]) for m in messages])

    def search(question: dict[str, Any]) -> list[dict[str, Any]]:
        match = fts_query(question["query"])
        rows = db.execute("SELECT id FROM m WHERE m MATCH ? AND chat = ? ORDER BY rank LIMIT ?",
                          (match, question["chat"], TOP))  # fmt: skip
        return [{"id": r[0], "superseded": False, "possibly": False} for r in rows]

    return search


def score(rows: list[dict[str, Any]], question: dict[str, Any], *, strict: bool) -> dict[str, float]:
    """The three measures for one question's top 10 (SOURCE.md's definitions)."""
    current, replaced = set(question["current"]), set(question["replaced"])

    def marked(row: dict[str, Any]) -> bool:
        return row["superseded"] or (row["possibly"] and not strict)

    ids = [r["id"] for r in rows[:TOP]]
    first_current = next((i for i, mid in enumerate(ids) if mid in current), None)
    unmarked_replaced = [i for i, r in enumerate(rows[:TOP]) if r["id"] in replaced and not marked(r)]
    return {
        "current_first": float(
            first_current is not None and all(first_current < i for i in unmarked_replaced)
        ),
        "current@5": float(first_current is not None and first_current < 5),
        "replaced_unmarked@5": float(any(i < 5 for i in unmarked_replaced)),
        "current_marked": float(any(r["id"] in current and marked(r) for r in rows[:TOP])),
    }


def evaluate(search: Callable[[dict[str, Any]], list[dict[str, Any]]], questions: Sequence[dict[str, Any]]
             ) -> dict[str, Any]:  # fmt: skip
    per_question = []
    for question in questions:
        rows = search(question)
        per_question.append({"id": question["id"], "lenient": score(rows, question, strict=False),
                             "strict": score(rows, question, strict=True)})  # fmt: skip
    n = len(per_question)

    def mean(kind: str, key: str) -> float:
        return round(sum(q[kind][key] for q in per_question) / n, 3)

    keys = ("current_first", "current@5", "replaced_unmarked@5", "current_marked")
    return {
        **{key: mean("lenient", key) for key in keys},
        **{f"strict {key}": mean("strict", key) for key in ("current_first", "replaced_unmarked@5")},
        "questions": per_question,
    }


def tree_at(ref: str, into: Path) -> str:
    """The package tree of commit ``ref`` under ``into``, importable as cmem_cli, cmem_index, cmem_export."""
    tree = into / "tree"
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True)
        with tarfile.open(fileobj=__import__("io").BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        for name, folder in (("cmem_index", "index"), ("cmem_export", "export")):
            (tree / name).symlink_to(tree / folder)
    return str(tree)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", required=True, help="GGUF embedding model (MiniLM from cmem models import)"
    )
    parser.add_argument("--work", help="keep the built homes here (a later run reuses them)")
    parser.add_argument("--modes", default="auto", help="search modes of this code to score (auto = default)")
    parser.add_argument("--before", metavar="REF", help="also score the default search at this commit")
    parser.add_argument("--json", action="store_true", help="print the results (and per question) as JSON")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="messages.jsonl and queries.jsonl of this shape (default: BEAM's, see above)")  # fmt: skip
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(f"no data at {args.data} (set CMEM_BENCH_DATA)")
    messages, questions = load(args.data)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cmem-beam-"))
    report: dict[str, Any] = {"plain BM25": evaluate(ranked_by_bm25(messages), questions)}
    cli = Cli(work / "home", args.model)
    ids = build(cli, messages)
    for mode in args.modes.split(","):
        report[f"cmem {mode}"] = evaluate(ranked_by_cli(cli, ids, mode), questions)
    if args.before:
        old = Cli(
            work / f"home-{args.before}", args.model, tree_at(args.before, work / f"code-{args.before}")
        )
        old_ids = build(old, messages)
        report[f"cmem default at {args.before}"] = evaluate(ranked_by_cli(old, old_ids, "auto"), questions)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{'':32}{'current-first':>14}{'current@5':>11}{'replaced-unmarked@5':>21}{'current marked':>16}"
        "   strict: first / unmarked@5"
    )
    for name, row in report.items():
        print(
            f"{name:32}{row['current_first']:>14.3f}{row['current@5']:>11.3f}{row['replaced_unmarked@5']:>21.3f}"
            f"{row['current_marked']:>16.3f}   {row['strict current_first']:.3f} / {row['strict replaced_unmarked@5']:.3f}"
        )


if __name__ == "__main__":
    main()
