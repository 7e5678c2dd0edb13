"""A deterministic synthetic memory: what years of hook captures and written notes look like to cmem.

The shape follows what `cmem hook` and agents write: about two thirds are per-tool-call captures (a file read
or edited, a command run, a search; short, with paths and tool names), one third observations an agent or a
person wrote (decisions, bugfixes, insights: a title, a narrative of 30-90 words, facts, concepts). Words are
drawn from a Zipf distribution over a vocabulary of ~25,000 (English function words, programming words, then
made-up identifiers), as real text is: a few words are in most records, most words in very few. (bench/core.py's
corpus draws 8 of 73 words uniformly, a worst case in which every query term matches most of the store.)

Record ``i`` depends only on the seed and ``i`` (each block of 1,000 has its own generator), so any slice of a
million-record store can be regenerated on its own and two runs build identical stores.

    python -m bench.scale_corpus 1000 > records.ndjson
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

SEED = 26
BLOCK = 1_000
START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
PER_DAY = 400  # a busy developer's agents: 300-500 observations a day
SESSION_SIZE = 45  # observations per session, on average


def _words(text: str) -> list[str]:
    return text.split()


FUNCTION_WORDS = _words(
    "the of and to a in is it that for on with as was this be are by not or from at have an but which one "
    "all when there can more if no out so up what about into than then them these some its only other new "
    "also after first use two how our way even because any most us should now need we"
)
PROGRAMMING_WORDS = _words(
    "auth token cache refresh race retry queue worker deploy rollback migration schema index query planner "
    "parser lexer config env secret vault webhook payment invoice ledger cron scheduler timeout socket pool "
    "deadlock mutex thread async await promise callback handler router middleware session cookie jwt oauth "
    "login logout signup email smtp template render layout css grid flex bundle webpack vite build test "
    "fixture mock snapshot coverage lint format typecheck compiler linker docker image kubernetes helm "
    "error exception stack trace log logger metric alert latency throughput memory leak cpu disk file path "
    "directory module package import export function class method variable constant type interface struct "
    "enum union generic trait closure iterator stream buffer encoding unicode utf json yaml toml csv xml "
    "http request response header status client server proxy gateway endpoint api rest graphql grpc "
    "database table column row transaction commit lock replica shard backup restore sqlite postgres redis "
    "kafka event message topic consumer producer batch job task pipeline stage artifact release version "
    "branch merge rebase conflict diff patch review approve ci cd workflow action runner container volume "
    "network dns tls certificate key signature hash encrypt decrypt permission role user account tenant "
    "region zone cluster node pod service ingress load balancer health probe readiness liveness config map "
    "feature flag rollout canary experiment dashboard report chart widget form input validation sanitize "
    "escape injection xss csrf cors rate limit quota throttle backoff jitter idempotent dedupe checksum"
)
SYLLABLES = _words(
    "ka ro mi ten vo lu sar bel dra fin gor hal jun kev lim nor pex qua rid sol tam ux vin wex yor zel "
    "bra cle dro fle gri kro pla sti tru vek"
)
VOCABULARY_SIZE = 25_000
TOOLS = ("Read", "Edit", "Bash", "Grep", "Write", "Glob")
WRITTEN_TYPES = ("decision", "bugfix", "feature", "insight", "refactor", "error", "question", "discovery")
PROJECTS = ("api", "web", "cli", "infra", "billing", "search", "mobile", "docs", "auth", "data", "ml", "ops")
EXTENSIONS = (".py", ".ts", ".go", ".rs", ".md", ".sql", ".yaml", ".tsx")


@lru_cache(maxsize=1)
def vocabulary() -> tuple[list[str], list[float]]:
    """Words, most frequent first, and their cumulative Zipf weights (exponent 1.07, as in English)."""
    rng = random.Random(SEED)
    words = list(dict.fromkeys(FUNCTION_WORDS + PROGRAMMING_WORDS))
    seen = set(words)
    while len(words) < VOCABULARY_SIZE:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
        if rng.random() < 0.3:  # identifiers: camelCase and snake_case compounds
            other = rng.choice(PROGRAMMING_WORDS)
            word = f"{word}{other.title()}" if rng.random() < 0.5 else f"{word}_{other}"
        if word not in seen:
            seen.add(word)
            words.append(word)
    weights = list(itertools.accumulate(1.0 / (rank**1.07) for rank in range(1, len(words) + 1)))
    return words, weights


class _Words:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.words, self.cumulative = vocabulary()
        self.total = self.cumulative[-1]

    def some(self, n: int) -> list[str]:
        rng, cumulative, words, total = self.rng, self.cumulative, self.words, self.total
        return [words[bisect.bisect(cumulative, rng.random() * total)] for _ in range(n)]

    def content(self, n: int) -> list[str]:
        """Words that carry meaning: the Zipf draw without the function words (titles, concepts, paths)."""
        out: list[str] = []
        while len(out) < n:
            out += [w for w in self.some(n - len(out) + 2) if w not in _FUNCTION_SET][: n - len(out)]
        return out

    def sentence(self, n: int) -> str:
        return " ".join(self.some(n))


_FUNCTION_SET = frozenset(FUNCTION_WORDS)


def _path(words: _Words, project: str) -> str:
    rng = words.rng
    a, b, c = words.content(3)
    return f"{project}/{a}/{b}_{c}{rng.choice(EXTENSIONS)}"


def _capture(i: int, words: _Words, project: str) -> dict[str, Any]:
    rng = words.rng
    tool = rng.choice(TOOLS)
    path = _path(words, project)
    if tool == "Read":
        return {"type": "discovery", "title": f"Read {path}", "files_read": [path], "tools_used": [tool]}
    if tool in ("Edit", "Write"):
        lines = [f"- {words.sentence(rng.randint(3, 9))}" for _ in range(rng.randint(1, 3))]
        lines += [f"+ {words.sentence(rng.randint(3, 9))}" for _ in range(rng.randint(1, 3))]
        return {
            "type": "change",
            "title": f"Edited {path}" if tool == "Edit" else f"Wrote {path}",
            "narrative": "\n".join(lines),
            "files_modified": [path],
            "tools_used": [tool],
        }
    if tool == "Bash":
        head = rng.choice(("pytest", "npm test", "make", "git diff", "cargo build", "go test ./..."))
        failed = rng.random() < 0.15
        return {
            "type": "error" if failed else "discovery",
            "title": f"Ran {head} {' '.join(words.content(2))}" + (" (failed)" if failed else ""),
            "narrative": words.sentence(rng.randint(8, 30)),
            "facts": [f"exit code {1 if failed else 0}"],
            "tools_used": [tool],
        }
    pattern = " ".join(words.content(rng.randint(1, 2)))
    return {
        "type": "discovery",
        "title": f"Searched for {pattern!r} in {project}",
        "narrative": "\n".join(_path(words, project) for _ in range(rng.randint(1, 4))),
        "tools_used": [tool],
    }


def _written(i: int, words: _Words, project: str) -> dict[str, Any]:
    rng = words.rng
    title = words.content(rng.randint(4, 8))
    title[0] = title[0].capitalize()
    record: dict[str, Any] = {
        "type": rng.choice(WRITTEN_TYPES),
        "title": " ".join(title),
        "narrative": words.sentence(rng.randint(30, 90)),
        "facts": [words.sentence(rng.randint(5, 12)) for _ in range(rng.randint(0, 3))],
        "concepts": words.content(rng.randint(1, 3)),
    }
    if rng.random() < 0.4:
        record["subtitle"] = words.sentence(rng.randint(4, 8))
    if rng.random() < 0.5:
        record["files_modified"] = [_path(words, project) for _ in range(rng.randint(1, 2))]
    return record


def record(i: int, words: _Words) -> dict[str, Any]:
    """Record number ``i`` (from 0), drawn with ``words``' generator."""
    rng = words.rng
    session_no = i // SESSION_SIZE
    project = PROJECTS[int(len(PROJECTS) * ((session_no * 0.6180339887) % 1.0) ** 2)]  # a few busy ones
    body = _written(i, words, project) if rng.random() < 0.34 else _capture(i, words, project)
    return {
        **body,
        "project": project,
        "session": f"s{session_no:07d}",
        "agent": "claude-code",
        "created_at": START_MS + i * (86_400_000 // PER_DAY) + rng.randrange(60_000),
    }


def records(count: int, start: int = 0, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """Records ``start`` .. ``start + count - 1``, the same on every run for the same seed."""
    end = start + count
    for block in range(start // BLOCK, (end + BLOCK - 1) // BLOCK):
        words = _Words(random.Random(f"{seed}:{block}"))
        first = block * BLOCK
        for i in range(first, first + BLOCK):
            made = record(i, words)  # every record of the block is drawn, so a slice matches the whole
            if start <= i < end:
                yield made


def ndjson(count: int, start: int = 0) -> Iterator[str]:
    for item in records(count, start):
        yield json.dumps(item, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.writelines(ndjson(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0))
