"""Inferred supersession: a newer hit that states an update of what an older hit says.

Explicit links (:mod:`cmem_cli.services.supersession`) are certain; people forget to make them. So among the
first rows of a search, cmem looks for the pattern a changed fact leaves in text: a newer memory of the same
project says a value changed ("the response time has improved to 250ms", "the new sprint deadline of April
5", "now reached 165 commits") and an older one states another value for the same subject ("a deadline of
April 1 for the first sprint"). Then the older row carries ``possibly_superseded_by`` (a hint, weaker than
``superseded_by``) and the newer one ranks just above it.

Similarity alone is not evidence: two related memories that are both true ("Redis caches sessions for 30
minutes", "Memcached caches pages for 5 minutes"; the free tier's rate limit and the enterprise tier's)
must not retire each other. So every one of these must hold, or nothing is inferred:

- the newer memory has an *update statement*: a word of change ("now", "increased", "moved", "new", ...)
  followed closely by a value (a number, an amount, a date, a time, a version);
- the older memory states a *different* value in a clause about the same subject: most of the update's
  subject words around it, and at least one word of the query (the subject asked about);
- no word says the two are different things: a subject word each side qualifies differently ("free tier"
  against "enterprise tier") or a word of addition in the update ("also", "another", "second").

The query is what makes this cheap and safe: only rows a search already shows are compared, only about
what was asked. docs/truth.md has the rule's measurements (BEAM's knowledge-update questions, the six
retrieval sets, and tests/test_updates.py's related-but-valid memories, none of which may be marked).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from cmem_cli.core.fts import STOPWORDS

MIN_GAP_MS = 60_000  # a memory this much newer than another can replace it (one write is not a change)
HEAD = 20  # rows compared: the first page of a search; later rows are not shown, so not judged
CUE_TO_VALUE = 6  # tokens from the word of change to its value ("has recently improved to 250ms")
SUBJECT_BEFORE = 8  # tokens before the word of change that name what changed
AROUND_VALUE = 10  # tokens either side of the older value that say what it is about
SUBJECT_SHARE = 0.5  # of the update's subject words, the share the older clause must have (and >= 2)
RESTATED_AFTER = 3  # a plain statement's subject: the words before its value and a few after ("15 problems")
RESTATED_SHARED = 3  # words a plain statement must share with the older clause (a word of change: 2)

# Words that say a value changed. Not "increase" as a verb of a goal ("I want to increase X"): only the
# forms that report a change (past, perfect, "now", "new").
CUES = frozenset([
    "now", "updated", "changed", "switched", "moved", "migrated", "replaced", "upgraded", "downgraded",
    "increased", "decreased", "reduced", "raised", "lowered", "improved", "extended", "shortened",
    "rescheduled", "postponed", "delayed", "adjusted", "revised", "corrected", "bumped", "grew", "grown",
    "reached", "dropped", "rose", "fell", "went", "jumped", "climbed", "expanded", "boosted", "doubled",
    "halved", "pushed", "new", "latest",
])  # fmt: skip
# Words that add a second thing rather than replace the first.
ADDITION = frozenset(["also", "another", "additional", "additionally", "second", "too", "addition", "besides",
                      "both"])  # fmt: skip
# Units say what kind of number a value is, not what it is the value of ("30 minutes" of a TTL or of a run).
UNITS = frozenset([
    "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour", "hours", "hr", "hrs", "day",
    "days", "week", "weeks", "month", "months", "year", "years", "percent", "times", "ms", "mb", "gb", "kb", "tb",
])  # fmt: skip
# Words with no subject in them (beyond the search's stop words, the cues and the units).
NOISE = STOPWORDS | CUES | UNITS | frozenset([
    "recently", "currently", "just", "already", "still", "total", "trying", "want", "need", "help", "make",
    "sure", "using", "used", "way", "get", "got", "im", "ive", "id", "dont", "cant", "one", "two", "three",
    "will", "would", "should", "could", "like", "really", "kinda",
])  # fmt: skip
_CODE = re.compile(r"```.*?(?:```|$)", re.S)
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|\n+|\s+but\s+|\s+-\s+")
_TOKEN = re.compile(
    r"\d{1,2}:\d{2}\s?(?:am|pm)?|\d{1,2}\s?(?:am|pm)\b|\$?\d[\d,]*(?:\.\d+)?(?:%|[a-z]{1,7})?|[a-z][a-z'_-]*",
    re.I,
)
_MONTHS = frozenset(["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"])  # fmt: skip
_DIGIT = re.compile(r"\d")


class Token(NamedTuple):
    text: str  # lower-cased
    stem: str  # a light stem for words, the normalised value for values ("1200", "apr5")
    value: bool
    kind: str = ""  # a value's kind: date, time, money, percent, a unit ("ms", "mb") or number
    name: bool = False  # a capitalised word: a product, a component, a person ("Redis", "Go", "Alice")


class Update(NamedTuple):
    """An update statement: the new value and the words that say what it is the value of."""

    value: str
    kind: str  # the value's kind: an older value of another kind (a date against an amount) is another fact
    subject: frozenset[str]
    names: frozenset[str]  # the names among the words around it (:attr:`Token.name`)
    modifiers: dict[str, str]  # subject stem -> the content word just before it ("enterprise" tier)


def stem(word: str) -> str:
    """A light English stem, enough to match ``caches``/``cached``/``cache`` and ``deadlines``."""
    word = word.lower().replace("'", "")
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def tokens(clause: str) -> list[Token]:
    """A clause's words and values; a month name and its day are one value (``april5``)."""
    found = _TOKEN.findall(clause)
    raw = [t.lower() for t in found]
    out: list[Token] = []
    skip = False
    for index, text in enumerate(raw):
        if skip:
            skip = False
            continue
        nxt = raw[index + 1] if index + 1 < len(raw) else ""
        if text in _MONTHS and _DIGIT.match(nxt):
            out.append(Token(f"{text} {nxt}", text[:3] + _number(nxt), True, "date"))
            skip = True
        elif _DIGIT.search(text):
            out.append(Token(text, _number(text), True, _kind(text)))
        else:
            name = found[index][0].isupper() and text not in NOISE and text not in _MONTHS and len(text) > 1
            out.append(Token(text, stem(text), False, name=name))
    return out


def _kind(value: str) -> str:
    if ":" in value or value.endswith(("am", "pm")):
        return "time"
    if value.startswith("$"):
        return "money"
    if value.endswith("%"):
        return "percent"
    unit = re.sub(r"^[\d.,]+", "", value)
    return unit if unit and unit not in ("st", "nd", "rd", "th") else "number"


def _number(text: str) -> str:
    """``$1,200`` -> ``1200``; ``250ms`` -> ``250ms``; ``5th`` -> ``5``; ``4:30`` (split) -> ``4``."""
    text = text.replace(",", "").lstrip("$")
    return re.sub(r"(st|nd|rd|th)$", "", text)


def clauses(text: str) -> list[list[Token]]:
    """The text without code blocks, as clauses of tokens (values in code are not statements)."""
    return [found for part in _CLAUSE.split(_CODE.sub(" ", text)) if (found := tokens(part))]


def _content(token: Token) -> bool:
    return not token.value and len(token.text) > 2 and token.text.replace("'", "") not in NOISE


def updates(clause_list: Sequence[list[Token]]) -> list[Update]:
    """The update statements of a memory: a word of change with a value soon after it."""
    found = []
    for clause in clause_list:
        if any(t.text in ADDITION for t in clause):
            continue
        for index, token in enumerate(clause):
            if token.value or token.text not in CUES:
                continue
            value = next((j for j in range(index + 1, min(len(clause), index + CUE_TO_VALUE + 1))
                          if clause[j].value), None)  # fmt: skip
            if value is None:
                continue
            window = clause[max(0, index - SUBJECT_BEFORE) : value]
            subject = frozenset(t.stem for t in window if _content(t))
            if len(subject) >= 2:
                stated = clause[value]
                modifiers = _modifiers(clause, subject, stated.stem)
                found.append(Update(stated.stem, stated.kind, subject, _names(window), modifiers))
    return found


def restatements(clause_list: Sequence[list[Token]]) -> list[Update]:
    """A memory's plain statements of a value ("15 problems done with 95% accuracy"): what a newer
    memory says a thing is, without a word of change. Weaker evidence, so :func:`infer` asks more of the
    older memory's subject (``RESTATED_SHARED`` words)."""
    found = []
    for clause in clause_list:
        if any(t.text in ADDITION for t in clause):
            continue
        for index, token in enumerate(clause):
            if not token.value:
                continue
            window = clause[max(0, index - SUBJECT_BEFORE) : index + RESTATED_AFTER + 1]
            subject = frozenset(t.stem for t in window if _content(t))
            if len(subject) >= RESTATED_SHARED:
                modifiers = _modifiers(window, subject, token.stem)
                found.append(Update(token.stem, token.kind, subject, _names(window), modifiers))
    return found


def _names(window: Sequence[Token]) -> frozenset[str]:
    return frozenset(t.stem for t in window if t.name)


def _modifiers(clause: Sequence[Token], subject: Iterable[str], value: str | None = None) -> dict[str, str]:
    """For each subject word, what says which one it is: the content word right before it ("enterprise"
    tier) or a number right after it (sprint "2"), other than the stated ``value`` itself."""
    wanted = set(subject)
    out: dict[str, str] = {}
    for before, token, after in zip(clause, clause[1:], [*clause[2:], None], strict=False):
        if token.stem not in wanted:
            continue
        if _content(before):
            out.setdefault(token.stem, before.stem)
        elif after is not None and after.value and after.stem != value:
            out.setdefault(token.stem, "#" + after.stem)
    if (
        clause
        and clause[0].stem in wanted
        and len(clause) > 1
        and clause[1].value
        and clause[1].stem != value
    ):
        out.setdefault(clause[0].stem, "#" + clause[1].stem)
    return out


class Stated(NamedTuple):
    """One value an older memory states, with what is around it (computed once per memory)."""

    value: Token
    clause_values: frozenset[str]  # every value of its clause: one equal to the update's says the new one
    words: frozenset[str]  # the content words around it
    near: Sequence[Token]
    names_before: frozenset[str]  # the names in the words before it


def stated_values(older: Sequence[list[Token]]) -> list[Stated]:
    out = []
    for clause in older:
        values = [i for i, t in enumerate(clause) if t.value]
        clause_values = frozenset(clause[i].stem for i in values)
        for i in values:
            near = clause[max(0, i - AROUND_VALUE) : i + AROUND_VALUE + 1]
            words = frozenset(t.stem for t in near if _content(t))
            out.append(
                Stated(clause[i], clause_values, words, near, _names(clause[max(0, i - SUBJECT_BEFORE) : i]))
            )
    return out


def replaces(
    update: Update,
    older: Sequence[Stated],
    query: frozenset[str],
    older_words: frozenset[str],
    newer_words: frozenset[str],
    least: int = 2,
) -> bool:
    """Whether an older memory (its :func:`stated_values` and every word of it) states another value for
    the update's subject (``newer_words``: every word and value of the memory the update is in)."""
    for stated in older:
        if stated.value.kind != update.kind or update.value in stated.clause_values:
            continue  # another kind of value (a date, an amount) is another fact; or it says the new one
        shared = stated.words & update.subject
        if len(shared) < least or len(shared) < SUBJECT_SHARE * len(update.subject) or not shared & query:
            continue
        if update.names - older_words and stated.names_before - newer_words:
            continue  # "the Go gateway" against "Python services": each names what the other does not
        kinds = _modifiers(stated.near, shared)
        if any(
            _differ(kinds.get(w), kind, older_words, newer_words)
            for w, kind in update.modifiers.items()
            if w in shared
        ):
            continue  # "free tier" against "enterprise tier": two things, not one changed
        return True
    return False


def _differ(theirs: str | None, ours: str, older_words: frozenset[str], newer_words: frozenset[str]) -> bool:
    """Two modifiers of one subject word name different things: both words (or both numbers), and each
    absent from the other memory ("free" tier and "enterprise" tier; not "grocery" budget against a "joint
    budget for groceries")."""
    if theirs is None or theirs.startswith("#") != ours.startswith("#") or theirs == ours:
        return False
    return theirs.lstrip("#") not in newer_words and ours.lstrip("#") not in older_words


def infer(rows: Sequence[dict[str, Any]], texts: dict[int, str], when: dict[int, int], query: str
          ) -> dict[int, int]:  # fmt: skip
    """Older row id -> the newer row id whose update statement it seems to be replaced by.

    ``rows`` are search rows, best first (only observations of one project are compared); ``texts`` their
    full text by id; ``when`` their creation times (epoch ms). Two memories recorded within ``MIN_GAP_MS``
    of each other are one write (an import, one agent turn), not a fact that changed over time."""
    asked = frozenset(t.stem for t in tokens(query) if _content(t))
    shown = [r for r in rows[:HEAD] if r.get("kind") == "observation" and r["id"] in texts]
    pairs = [
        (old, new) for old in shown for new in shown
        if new["project"] == old["project"] and when[new["id"]] >= when[old["id"]] + MIN_GAP_MS
    ]  # fmt: skip
    if not asked or not pairs:
        return {}
    involved = {r["id"] for pair in pairs for r in pair}
    parsed = {i: clauses(texts[i]) for i in involved}
    words = {i: frozenset(t.stem for clause in found for t in clause) for i, found in parsed.items()}
    newer = {new["id"] for _, new in pairs}
    stated = {i: [u for u in updates(parsed[i]) if u.subject & asked] for i in newer}
    plain = {i: [u for u in restatements(parsed[i]) if u.subject & asked] for i in newer}
    values = {old["id"]: stated_values(parsed[old["id"]]) for old, _ in pairs}
    found: dict[int, int] = {}
    for old, new in sorted(pairs, key=lambda pair: -when[pair[1]["id"]]):  # the newest update wins
        o, n = old["id"], new["id"]
        if o in found or not (stated[n] or plain[n]):
            continue
        if any(replaces(u, values[o], asked, words[o], words[n]) for u in stated[n]) or any(
            replaces(u, values[o], asked, words[o], words[n], least=RESTATED_SHARED) for u in plain[n]
        ):
            found[o] = n
    return found
