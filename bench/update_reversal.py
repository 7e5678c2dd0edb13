"""Inferred supersession with time run backwards: how often would the rule mark a fact that is still current?

BEAM's held-out knowledge updates showed the rule marking the *current* memory in 21% of searches while it
did so in 3% of the 37 visible ones: the rule had been shaped on them. A newer message that marks the
current one is, by the labels, no update of it; it is a later message that merely looks like one (a plain
mention of another value, a value that says when, another thing called "new"). Those cannot be counted on
data no one has seen, but the same weakness shows on the visible chats when time runs backwards: then every
"newer" message was in truth older, and a rule that needs a real update statement in the newer message
should seldom mark the current one, while a rule that fires on two similar statements marks it as often as
it marks the replaced one. Nothing here was tuned on it; it is a check of how a rule generalises, beside
bench/beam.py's figures through the CLI.

For each question, its chat's user messages are ranked by plain FTS5 BM25 (porter, the question's words
OR-ed, as bench/beam.py's floor does) and the first 20 become a search's rows; the rule
(:func:`cmem_cli.services.truth.updates.infer`) runs over them with the messages' real times, and again with
every time negated.

    python -m bench.update_reversal [--head 20] [--json]

It prints, forward: questions whose current message is marked, whose replaced message is marked (of those
whose replaced message is among the rows), and marks on other messages; backward: questions whose current
message is marked.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from bench.beam import load

HEAD = 20


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def run(head: int = HEAD) -> dict[str, Any]:
    import apsw

    from cmem_cli.core.fts import fts_query
    from cmem_cli.services.truth import updates

    messages, questions = load()
    by_id = {m["id"]: m for m in messages}
    db = apsw.Connection(":memory:")
    db.execute("CREATE VIRTUAL TABLE m USING fts5 (id UNINDEXED, chat UNINDEXED, text, tokenize='porter')")
    with db:
        db.executemany("INSERT INTO m VALUES (?, ?, ?)", [(m["id"], m["chat"], m["text"]) for m in messages])
    updates.HEAD = max(updates.HEAD, head)
    counts = {"questions": len(questions), "current marked": 0, "replaced among rows": 0, "replaced marked": 0,
              "other marks": 0, "current marked, time reversed": 0}  # fmt: skip
    for question in questions:
        match = fts_query(question["query"])
        found = [r[0] for r in db.execute(
            "SELECT id FROM m WHERE m MATCH ? AND chat = ? ORDER BY rank LIMIT ?", (match, question["chat"], head)
        )]  # fmt: skip
        rows = [{"id": i, "kind": "observation", "project": question["chat"]} for i in range(len(found))]
        texts = {i: by_id[mid]["text"] for i, mid in enumerate(found)}
        when = {i: _epoch_ms(by_id[mid]["date"]) for i, mid in enumerate(found)}
        current, replaced = set(question["current"]), set(question["replaced"])
        forward = updates.infer(rows, texts, when, question["query"])
        backward = updates.infer(rows, texts, {i: -t for i, t in when.items()}, question["query"])
        counts["current marked"] += any(found[o] in current for o in forward)
        counts["replaced among rows"] += any(mid in replaced for mid in found)
        counts["replaced marked"] += any(found[o] in replaced for o in forward)
        counts["other marks"] += sum(found[o] not in current | replaced for o in forward)
        counts["current marked, time reversed"] += any(found[o] in current for o in backward)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--head", type=int, default=HEAD, help="rows of each search the rule reads")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = run(args.head)
    if args.json:
        print(json.dumps(counts, indent=2))
        return
    for name, value in counts.items():
        print(f"{name:32}{value:>5}")


if __name__ == "__main__":
    main()
