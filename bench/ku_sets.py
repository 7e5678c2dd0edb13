"""Knowledge updates through the CLI: is the current fact first, the replaced one marked, and was it reported
when its replacement was recorded? (issue 41)

Sets: ``beam`` (../shared/data/beam-ku-dev: a developer's chats, facts that change over weeks), and two
written for issue 41 before its rules, in styles unlike BEAM: ``ku-chat`` (short work-chat corrections in
many domains, bench/data/ku-chat) and ``ku-agentlog`` (an agent's decision log with code identifiers,
bench/data/ku-agentlog). Their items are split by number: odd items tune, even items are held back. A third,
``ku-ops`` (terse team notes: ops, tracker, standup, email; bench/data/ku-ops), is held back whole.

Every memory is recorded in time order with one ``cmem add --json - --format json`` (each record compared
with the older ones as a single ``cmem add`` compares it: :mod:`cmem_cli.services.truth.candidates`), the home is
indexed (``cmem index``, with ``--model``), and each question is asked with ``cmem search QUESTION
--project P -n 10 --json``. Measures (bench/beam.py's, per question, top 10):

- current-first, current@5, replaced unmarked@5, current wrongly marked (bench/beam.py);
- candidate recall@3: the replaced memory stated last before the current one is among the candidates
  ``cmem add`` reported when the current one was recorded (at most 3).

    python -m bench.ku_sets --model minilm.gguf [--sets beam,ku-chat,ku-agentlog,ku-ops] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.beam import DATA, Cli, evaluate, load, ranked_by_cli, record

HERE = Path(__file__).resolve().parent / "data"
GROUP = 8  # items sharing one project: their distractors meet
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
STEP = {"ku-chat": timedelta(hours=1), "ku-agentlog": timedelta(days=1), "ku-ops": timedelta(hours=3)}
HELD_BACK = {"ku-ops"}  # sets that only judge: every item is held back


def written_set(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A written set (bench/data/NAME/items.jsonl) in BEAM's shape: messages with project (``chat``),
    session and date, questions with ``current``, ``replaced`` and ``half`` (tune: odd item numbers)."""
    items = [
        json.loads(line) for line in (HERE / name / "items.jsonl").read_text().splitlines() if line.strip()
    ]
    messages: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for start in range(0, len(items), GROUP):
        group = items[start : start + GROUP]
        project = f"{name}-g{start // GROUP}"
        at = START
        for turn in range(max(len(i["memories"]) for i in group)):
            for item in group:
                if turn >= len(item["memories"]):
                    continue
                session = item["id"] if name == "ku-chat" else f"{item['id']}-m{turn}"
                messages.append({"id": f"{item['id']}-m{turn}", "chat": project, "session": session,
                                 "date": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "text": item["memories"][turn]})  # fmt: skip
                at += STEP[name]
        for item in group:
            number = int("".join(ch for ch in item["id"] if ch.isdigit()))
            questions.append({"id": item["id"], "chat": project, "query": item["query"],
                              "current": [f"{item['id']}-m{item['current']}"],
                              "replaced": [f"{item['id']}-m{r}" for r in item["replaced"]],
                              "half": "tune" if number % 2 and name not in HELD_BACK else "held back"})  # fmt: skip
    return messages, questions


def build(cli: Cli, messages: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Record every message in time order through `cmem add --json - --format json` and index the home;
    observation id -> message id, and message id -> the message ids reported as candidates."""
    marker = cli.home / "ku-ids.json"
    if marker.exists():
        saved = json.loads(marker.read_text())
        return saved["ids"], saved["candidates"]
    cli.home.mkdir(parents=True, exist_ok=True)
    ordered = sorted(messages, key=lambda m: m["date"])
    records = []
    for message in ordered:
        one = record(message)
        if message.get("session"):
            one["session"] = message["session"]
        records.append(one)
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    out = [
        json.loads(line) for line in cli("add", "--json", "-", "--format", "json", input=body).splitlines()
    ]
    cli("index", "--json")
    ids = {str(row["id"]): m["id"] for row, m in zip(out, ordered, strict=True)}
    found = {
        m["id"]: [ids[str(c["id"])] for c in row["candidates"]] for row, m in zip(out, ordered, strict=True)
    }
    marker.write_text(json.dumps({"ids": ids, "candidates": found}))
    return ids, found


def candidate_recall(
    questions: list[dict[str, Any]], dates: dict[str, str], found: dict[str, list[str]], missed: list[str]
) -> float | None:
    """The share of questions whose last replaced memory was reported when the current one was recorded
    (``missed`` receives the others' ids)."""
    hits = []
    for question in questions:
        replaced = [r for r in question["replaced"] if r in dates]
        if not replaced:
            continue
        last = max(replaced, key=lambda r: dates[r])
        current = question["current"][0]
        hits.append(float(last in found.get(current, [])[:3]))
        if not hits[-1]:
            missed.append(question["id"])
    return round(sum(hits) / len(hits), 3) if hits else None


# BEAM's labels checked by hand for candidate recall (the set's labels are noisy, SOURCE.md): the replaced
# message the measure takes (the last one) states no old value of the question's fact. None: no replaced
# message does, the question is left out; an id: the replaced message that states the old value.
BEAM_CHECKED: dict[str, str | None] = {
    "beam100k-1-ku0": None,  # c1-m86 is about sprint 2's deadline; the old response time (800ms) is unlabelled
    "beam100k-12-ku0": None,  # c12-m38 and c12-m40 weigh two job offers: no meeting, no date
    "beam100k-14-ku1": None,  # neither c14-m132 (Netflix buffering) nor the current message names cupcakes
    "beam100k-5-ku1": "c5-m84",  # the last, c5-m88, says thanks; c5-m84 states the old count (8 problems)
    "beam100k-11-ku1": "c11-m126",  # the last, c11-m130, agrees to a plan; c11-m126 states the old 87%
}


def checked(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BEAM's questions with the replaced message that states the old value (:data:`BEAM_CHECKED`)."""
    out = []
    for question in questions:
        if question["id"] not in BEAM_CHECKED:
            out.append(question)
        elif (states := BEAM_CHECKED[question["id"]]) is not None:
            out.append({**question, "replaced": [states]})
    return out


def run(name: str, work: Path, model: str) -> dict[str, Any]:
    if name == "beam":
        messages, questions = load(DATA)
        for question in questions:
            question["half"] = "visible (tuned on since issue 34)"
    else:
        messages, questions = written_set(name)
    cli = Cli(work / name, model)
    ids, found = build(cli, messages)
    dates = {m["id"]: m["date"] for m in messages}
    search = ranked_by_cli(cli, ids, "auto")
    report: dict[str, Any] = {}
    for half in sorted({q["half"] for q in questions}):
        chosen = [q for q in questions if q["half"] == half]
        result = evaluate(search, chosen)
        result["candidates_missed"] = []
        result["candidate_recall@3"] = candidate_recall(chosen, dates, found, result["candidates_missed"])
        if name == "beam":
            result["checked_missed"] = []
            result["candidate_recall@3 (labels checked)"] = candidate_recall(
                checked(chosen), dates, found, result["checked_missed"]
            )
            result["n checked"] = len(checked(chosen))
        result["n"] = len(chosen)
        report[half] = result
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", required=True, help="GGUF embedding model (MiniLM from cmem models import)"
    )
    parser.add_argument("--sets", default="beam,ku-chat,ku-agentlog,ku-ops")
    parser.add_argument("--work", help="keep the built homes here (a later run reuses them)")
    parser.add_argument("--halves", default="", help="only these halves, comma-separated (e.g. tune)")
    parser.add_argument("--json", action="store_true", help="print everything, per question too")
    parser.add_argument(
        "--tune-failures",
        action="store_true",
        help="list the tune half's questions that fail a measure (never the held-back half's)",
    )
    args = parser.parse_args()
    os.environ.setdefault(
        "CMEM_INDEX_BACKGROUND", "off"
    )  # `cmem index` below does it; a pass beside it only slows
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cmem-ku-"))
    results = {name: run(name, work, args.model) for name in args.sets.split(",")}
    wanted = set(filter(None, args.halves.split(",")))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{'set / half':40}{'n':>4}{'cur-first':>10}{'cur@5':>7}{'repl-unm@5':>11}{'cur-marked':>11}{'cand@3':>8}"
    )
    for name, halves in results.items():
        for half, row in halves.items():
            if wanted and half not in wanted:
                continue
            recall = row["candidate_recall@3"]
            print(f"{name + ' / ' + half:40}{row['n']:>4}{row['current_first']:>10.3f}{row['current@5']:>7.3f}"
                  f"{row['replaced_unmarked@5']:>11.3f}{row['current_marked']:>11.3f}"
                  f"{'-' if recall is None else format(recall, '.3f'):>8}")  # fmt: skip
            if "candidate_recall@3 (labels checked)" in row:
                print(f"    candidate recall@3, labels checked (bench/ku_sets.BEAM_CHECKED, "
                      f"{row['n checked']} questions): {row['candidate_recall@3 (labels checked)']:.3f}")  # fmt: skip
            if args.tune_failures and half == "tune":
                for q in row["questions"]:
                    bad = [
                        k
                        for k, v in q["lenient"].items()
                        if (v == 0) == (k in ("current_first", "current@5"))
                    ]
                    if bad:
                        print(f"    {q['id']}: {', '.join(bad)}")
                print(f"    candidates missed: {', '.join(row['candidates_missed']) or '-'}")


if __name__ == "__main__":
    main()
