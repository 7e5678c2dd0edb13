"""Inferred supersession: a newer hit that states an update of what an older hit says.

Explicit links (:mod:`cmem_cli.services.truth.supersession`) are certain; people forget to make them. So among the
first rows of a search, cmem looks for the pattern a changed fact leaves in text: a newer memory of the same
project says a value changed ("the response time has improved to 250ms", "the new sprint deadline of April
5", "now reached 165 commits") and an older one states another value for the same subject ("a deadline of
April 1 for the first sprint"). Then the older row carries ``possibly_superseded_by`` (a hint, weaker than
``superseded_by``) and the newer one ranks just above it.

Similarity alone is not evidence: two related memories that are both true ("Redis caches sessions for 30
minutes", "Memcached caches pages for 5 minutes"; the free tier's rate limit and the enterprise tier's)
must not retire each other. So every one of these must hold, or nothing is inferred:

- the newer memory has an *update statement*: a word of change ("now", "increased", "moved", "new", ...)
  followed closely by the value it changed (a number, an amount, a date, a time, a version: the first
  after it, not one after a new subject or one that says when), or, weaker, a value that is no date or
  time later in a clause with a word of change; a value mentioned with no word of change is no update,
  nor does a mere mention undo an older value that was itself stated as a change;
- the older memory states a *different* value of the same kind (a duration against a duration, a count of
  interviews against a count of interviews, a version against a version) about the same subject: most of
  the update's subject words around it and a word of the query; or, for an update statement, the two
  sentences share two words of the query, the update names one of them where it says what changed (or
  says "it"), and the newer memory names what the older value is the value of (:func:`answers_alike`); or
  both values are said of the same word of the query (:func:`keyed`: "the bundle is 1.8 MB", "the bundle
  shrank to 900 KB");
- no word says the two are different things: a subject word each side qualifies differently ("free tier"
  against "enterprise tier"), a name only one side has, a word of addition before the update's value
  ("also", "another", "second"), a goal against a state ("a goal of 90%", "reached 85%"), a change's size
  ("increased by 5%") taken for a value, or the newer memory stating the older value too (not as what it
  was: "from 12").

The query is what makes this cheap and safe: only rows a search already shows are compared, only about
what was asked. docs/retrieval.md has the rule's measurements (BEAM's knowledge-update questions, pairs
written after the rule in bench/update_pairs.py, the six retrieval sets) and tests/test_updates.py the
related-but-valid memories none of which may be marked.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module (every search); here they are plain objects.

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from cmem_cli.core.fts import STOPWORDS

MIN_GAP_MS = 60_000  # a memory this much newer than another can replace it (one write is not a change)
HEAD = 20  # rows compared: the first page of a search; later rows are not shown, so not judged
CUE_TO_VALUE = 6  # tokens from the word of change to its value ("has recently improved to 250ms")
SUBJECT_BEFORE = 8  # tokens before the word of change that name what changed
AROUND_VALUE = 10  # tokens either side of the older value that say what it is about
SUBJECT_SHARE = 0.5  # of the update's subject words, the share the older clause must have (and >= 2)
RESTATED_AFTER = 3  # a plain statement's subject: the words before its value and a few after ("15 problems")
RESTATED_SHARED = 4  # words a plain statement must share with the older clause (a word of change: 2)
TOPIC_WORDS = 2  # words of the query both sentences of an update and an older value must have
TOPIC_REACH = 16  # tokens before an update's value (either side of an older value) where those words count
HEAD_BEFORE = 3  # tokens before a word of change that name what changed ("the deadline was extended")
KEY_REACH = 4  # tokens before a value where the word it is said of is looked for
GOAL_BEFORE = 8  # tokens before a value where a word of intent makes it a goal ("a goal of 12 books")

# Words that say a value changed. Not "increase" as a verb of a goal ("I want to increase X"): only the
# forms that report a change (past, perfect, "now", "new").
CUES = frozenset([
    "now", "updated", "changed", "switched", "moved", "migrated", "replaced", "upgraded", "downgraded",
    "increased", "decreased", "reduced", "raised", "lowered", "improved", "extended", "shortened",
    "rescheduled", "postponed", "delayed", "adjusted", "revised", "corrected", "bumped", "grew", "grown",
    "reached", "dropped", "rose", "fell", "went", "jumped", "climbed", "expanded", "boosted", "doubled",
    "halved", "pushed", "new", "latest", "shrank", "shrunk", "cut", "trimmed", "scaled", "down",
])  # fmt: skip
# Words of change that are as often something else ("the final cut", "broke it down into 3 steps"): only
# with "to" just before the value ("cut to 6 minutes", "down to 4 hours", "scaled the cluster to 5 brokers").
TO_CUES = frozenset(["cut", "trimmed", "scaled", "down", "shrank", "shrunk", "pushed", "went", "dropped", "fell",
                     "rose", "jumped", "climbed"])  # fmt: skip
DEGREE = frozenset(
    ["just", "only", "about", "around", "roughly", "nearly", "almost", "approximately", "under"]
)
# Verbs that carry a value without saying what it is of ("takes 14 minutes", "costs $85", "has 3 brokers").
CARRIERS = frozenset([
    "take", "takes", "took", "taking", "has", "have", "had", "having", "run", "runs", "ran", "use", "uses",
    "cost", "costs", "weigh", "weighs", "allow", "allows", "need", "needs", "hold", "holds", "last", "lasts",
    "contain", "contains", "hit", "hits", "sit", "sits", "total", "totals", "stand", "stands", "get", "gets",
])  # fmt: skip
# Words of change that stand before a clause rather than a verb's object ("now I have 45 sources", "the new
# deadline is April 5"): a subject after them is still theirs.
ADVERB_CUES = frozenset(["now", "new", "latest"])
# Their value is what the new thing is ("the new deadline of April 5"), not when it started.
ADJECTIVE_CUES = frozenset(["new", "latest"])
# A subject after a verb of change starts another statement: the value after it is not what changed.
SUBJECTS = frozenset(["i", "i've", "i'm", "i'd", "i'll", "we", "we've", "we're", "we'd", "you", "you've", "he", "she",
                      "they", "they've"])  # fmt: skip
# Words before a value that make it a wish, a plan or a question, not a state ("should I charge $8").
UNSURE = frozenset(["if", "should", "would", "could", "might", "want", "wants", "hope", "hoping", "plan",
                    "planning", "wish", "whether", "considering", "thinking", "maybe", "perhaps", "unless",
                    "trying", "try", "aim", "aiming", "need", "needs"])  # fmt: skip
# Prepositions after a value (or its noun) that say what it is of or for (:func:`_frame`).
QUALIFIERS = frozenset(["for", "of", "on", "in", "with", "about"])
# Words that name a period: values of two periods ("in January", "in February") are two facts.
SEASONS = frozenset(["spring", "summer", "autumn", "fall", "winter", "quarter"])
# Pronouns that say whose a value is (:func:`_owner`); "it" and "you" do not.
FIRST_PERSON = frozenset(["i", "i've", "i'm", "i'd", "i'll", "my", "we", "we've", "we're", "we'd", "our"])
THIRD_PERSON = frozenset(["he", "she", "they", "they've", "they're", "his", "her", "their", "he's", "she's"])
# Words that add a second thing rather than replace the first.
ADDITION = frozenset(["also", "another", "additional", "additionally", "second", "too", "addition", "besides",
                      "both"])  # fmt: skip
TRAILING_ADDITION = frozenset(["also", "too", "besides", "both"])  # after a value: it is one more ("5 too")
# A unit after a number says what the number measures; one dimension whatever the unit ("3 hours" and "90
# minutes" can be one duration that changed). Attached units count too ("250ms").
DIMENSIONS = {
    **dict.fromkeys(["ms", "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour", "hours",
                     "hr", "hrs", "day", "days", "week", "weeks", "month", "months", "year", "years"], "duration"),
    **dict.fromkeys(["kb", "mb", "gb", "tb", "byte", "bytes", "kib", "mib", "gib"], "size"),
    "percent": "percent", "times": "times", "\u00b0": "degree",
}  # fmt: skip
# Units say what kind of number a value is, not what it is the value of ("30 minutes" of a TTL or of a run).
UNITS = frozenset(DIMENSIONS)
EVENTS = frozenset(["date", "time"])  # kinds of value a plain statement (no word of change) cannot update
# Words that make a value a goal rather than a state: "a goal of 12 books" and "finished 11 books" are two
# facts, both true.
GOALS = frozenset(["goal", "goals", "target", "targets", "targeting", "aim", "aiming", "objective"])
GOAL_STEMS = frozenset(["goal", "target", "aim", "objectiv"])  # their stems (:func:`stem`)
# A pronoun just before the word of change: the subject was named earlier in the sentence ("the probate
# process ... how it was shortened to 5-7 months").
PRONOUNS = frozenset(["it", "it's", "its", "this", "these", "they", "they're"])
# Words with no subject in them (beyond the search's stop words, the cues and the units).
NOISE = STOPWORDS | CUES | UNITS | frozenset([
    "recently", "currently", "just", "already", "still", "total", "trying", "want", "need", "help", "make",
    "sure", "using", "used", "way", "get", "got", "im", "ive", "id", "dont", "cant", "wont", "didnt", "isnt",
    "doesnt", "wasnt", "havent", "one", "two", "three",
    "will", "would", "should", "could", "like", "really", "kinda",
    # how a person talks about a fact, not what the fact is about ("I'm kinda worried about my deadline")
    "sorta", "worried", "worry", "wondering", "wonder", "understand", "understanding", "feel", "feeling",
    "think", "thinking", "curious", "stressed", "nervous", "figure", "lot", "bit", "pretty", "many", "much",
    "most",
])  # fmt: skip
_CODE = re.compile(r"```.*?(?:```|$)", re.S)
_CLAUSE = r"(?<=[.!?;])\s+|\n+|\s+but\s+|\s+-\s+"  # compiled where used (re caches it): few searches split
_TOKEN = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}\s?(?:am|pm)?|\d{1,2}\s?(?:am|pm)\b|\d+/\d+"
    r"|\$?\d[\d,]*(?:\.\d+)?(?:\s?[-\u2013]\s?\$?\d[\d,]*(?:\.\d+)?)?(?:%|\u00b0|[a-z]{1,7})?|[a-z][a-z'_-]*",
    re.I,
)
_MONTHS = frozenset(["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"])  # fmt: skip
_WEEKDAYS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
_DIGIT = re.compile(r"\d")


class Token(NamedTuple):
    text: str  # lower-cased
    stem: str  # a light stem for words, the normalised value for values ("1200", "apr5")
    value: bool
    kind: str = ""  # a value's kind (:func:`_kind`): date, money, duration, n:<the noun it counts>...
    name: bool = False  # a capitalised word: a product, a component, a person ("Redis", "Go", "Alice")
    content: bool = False  # a word that can say what a value is about: not a value, short or :data:`NOISE`


class Update(NamedTuple):
    """An update statement: the new value and the words that say what it is the value of."""

    value: str
    kind: str  # the value's kind: an older value of another kind (a date against an amount) is another fact
    subject: frozenset[str]
    names: frozenset[str]  # the names among the words around it (:attr:`Token.name`)
    modifiers: dict[str, str]  # subject stem -> the content word just before it ("enterprise" tier)
    clause: frozenset[str] = frozenset()  # every word of its clause (the sentence it is stated in)
    before: Sequence[Token] = ()  # the clause's tokens up to the value (``TOPIC_REACH`` of them)
    goal: bool = False  # a goal, not a state (:data:`GOALS`)
    pronoun: bool = False  # its subject is a pronoun: the sentence named it earlier
    head: frozenset[str] = frozenset()  # the content words from just before the word of change to the value
    key: frozenset[str] = frozenset()  # the word the value is said of (:func:`_key`): "the bundle" shrank
    owner: str = ""  # whose value it is by the nearest pronoun before it (:func:`_owner`): "I", "they"
    frame: tuple[str, tuple[str, ...], str] = ("", (), "")  # the words that frame the value (:func:`_frame`)


@functools.lru_cache(maxsize=4096)
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
    """A clause's words and values; a month name and its day are one value (``april5``). A number's kind
    is what follows it: a unit ("3 hours": duration) or the noun it counts ("5 interviews": n:interview)."""
    found = _TOKEN.findall(clause)
    raw = [t.lower() for t in found]
    out: list[Token] = []
    skip = False
    for index, text in enumerate(raw):
        if skip:
            skip = False
            continue
        nxt = raw[index + 1] if index + 1 < len(raw) else ""
        if text in _WEEKDAYS:  # "moved to Friday": a day is a date (not "on Fridays": that is every week)
            out.append(Token(text, text[:3], True, "date"))
        elif text in _MONTHS and _DIGIT.match(nxt):
            out.append(Token(f"{text} {nxt}", text[:3] + _number(nxt), True, "date"))
            skip = True
        elif _DIGIT.search(text):
            kind = _kind(text, nxt)
            if out and (out[-1].name or out[-1].text == "version") and kind in ("number", "n:" + stem(nxt)):
                kind = "version"  # "PostgreSQL 15", "Node 20", "version 2.3": which one, not how many
            out.append(Token(text, _number(text), True, kind))
        else:
            bare = text.replace("'", "")
            name = found[index][0].isupper() and bare not in NOISE and text not in _MONTHS and len(text) > 1
            out.append(Token(text, stem(text), False, name=name, content=len(text) > 2 and bare not in NOISE))
    return out


def _kind(value: str, after: str = "") -> str:
    """What a value is: a date, time, money, percent, score ("4/5"), year, a dimension ("250ms", "3 hours",
    "10 MB"), a count of the noun after it ("5 interviews": ``n:interview``), else a plain number."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    if ":" in value or value.endswith(("am", "pm")):
        return "time"
    if value.startswith("$"):
        return "money"
    if value.endswith("%"):
        return "percent"
    if "/" in value:
        return "score"
    unit = re.sub(r"^[\d.,\s\u2013-]+", "", value)
    if unit and unit not in ("st", "nd", "rd", "th"):
        return DIMENSIONS.get(unit, unit)
    if after in DIMENSIONS:
        return DIMENSIONS[after]
    if re.fullmatch(r"(19|20)\d\d,?", value):
        return "year"
    counted = after and not _DIGIT.search(after) and len(after) > 2 and after not in _MONTHS
    return "n:" + stem(after) if counted and after.replace("'", "") not in NOISE else "number"


def same_kind(one: str, other: str) -> bool:
    """Two values can state one fact: the same kind, or a plain number against a count ("reached 165"
    against "150 commits": the noun is left out)."""
    return one == other or {one[:2], other[:2]} == {"nu", "n:"}


def comparable(update: Update, stated: "Stated") -> bool:
    """An update's value and an older one are of one kind (:func:`same_kind`); a plain number only where
    the noun the other counts is next to it ("commits ... now reached 165" against "150 commits", not "each
    angle 60" against "12 problems")."""
    ours, theirs = update.kind, stated.value.kind
    if ours == theirs:
        return True
    if not same_kind(ours, theirs):
        return False
    return theirs[2:] in update.subject if ours == "number" else ours[2:] in stated.words


def _number(text: str) -> str:
    """``$1,200`` -> ``1200``; ``250ms`` -> ``250ms``; ``5th`` -> ``5``; ``5 - 7`` -> ``5-7``."""
    text = re.sub(r"\s", "", text).replace(",", "").replace("$", "").replace("\u2013", "-")
    return re.sub(r"(st|nd|rd|th)$", "", text)


def clauses(text: str) -> list[list[Token]]:
    """The text without code blocks, as clauses of tokens (values in code are not statements)."""
    return [found for part in re.split(_CLAUSE, _CODE.sub(" ", text)) if (found := tokens(part))]


def _content(token: Token) -> bool:
    return token.content


def _added(clause: Sequence[Token], at: int) -> bool:
    """A word of addition in what states the value at ``at`` ("also", "a second pool", "5 brokers too"):
    another thing, not a change. After the value only the words that add to it ("too", "also") count: a
    word there that qualifies another noun ("extended to July 16 due to additional edits") is no addition."""
    if any(t.text in ADDITION for t in clause[:at]):
        return True
    return any(t.text in TRAILING_ADDITION for t in clause[at + 1 : at + RESTATED_AFTER + 1])


def updates(clause_list: Sequence[list[Token]]) -> list[Update]:
    """The update statements of a memory: a word of change with a value soon after it. The first value
    within reach is what changed (and a time with its date: "rescheduled to March 22 at 4:30 PM"); later
    ones say when or after what ("increased to $550 monthly starting September 15"). Not a value after
    "from" (the old value) or "by" (the size of the change, or when: "increased by 5%", "reached 4,700 words
    by May 13"), nor one after a new subject ("improved, I've completed 12 problems"); "now that ..." is no
    word of change."""
    found = []
    for clause in clause_list:
        words = frozenset(t.stem for t in clause)
        for index, token in enumerate(clause):
            if token.value or token.text not in CUES:
                continue
            if token.text == "now" and index + 1 < len(clause) and clause[index + 1].text == "that":
                continue
            pronoun = any(t.text in PRONOUNS for t in clause[max(0, index - HEAD_BEFORE) : index])
            taken: Token | None = None  # the value the word of change changed
            for at in range(index + 1, min(len(clause), index + CUE_TO_VALUE + 1)):
                stated = clause[at]
                if token.text not in ADVERB_CUES and stated.text in SUBJECTS:
                    break  # a new subject: what follows is another statement ("improved, I've completed 12")
                if token.text in ADJECTIVE_CUES and not stated.value and stated.content and _verb(stated):
                    break  # "the new role starting July 1": the value says when, not what the new thing is
                if not stated.value or clause[at - 1].text in ("from", "by"):
                    continue
                if taken is not None and not _moment(taken, stated):
                    break  # later values say when or after what ("to $550 monthly starting September 15")
                if token.text in TO_CUES and not _after_to(clause, at):
                    continue
                taken = stated
                window = clause[max(0, index - SUBJECT_BEFORE) : at + RESTATED_AFTER + 1]
                subject = frozenset(t.stem for t in window if _content(t))
                if len(subject) >= 2 and not _added(clause, at):
                    modifiers = _modifiers(clause, subject, stated.stem)
                    before = clause[max(0, at - TOPIC_REACH) : at + RESTATED_AFTER + 1]
                    head = _stems(clause[max(0, index - HEAD_BEFORE) : at + RESTATED_AFTER + 1])
                    found.append(Update(stated.stem, stated.kind, subject, _names(window), modifiers, words,
                                        before, _goal(clause, at), pronoun, head, _key(clause, at),
                                        _owner(clause, at)))  # fmt: skip
    return found


def _moment(first: Token, then: Token) -> bool:
    """A date and its time (or a time and its date) are one value: "rescheduled to March 22 at 4:30 PM"."""
    return {first.kind, then.kind} == {"date", "time"}


def _after_to(clause: Sequence[Token], at: int) -> bool:
    """The value follows "to", maybe with a word of degree between ("down to just 4 hours")."""
    before = [t.text for t in clause[max(0, at - 3) : at] if t.text not in DEGREE]
    return bool(before) and before[-1] == "to"


def _key(clause: Sequence[Token], at: int) -> frozenset[str]:
    """The word a value is said of: the nearest word of content before it, past words of change, small
    words and verbs that only carry a value, within ``KEY_REACH`` tokens and not past another value ("the
    bundle is 1.8 MB", "the bundle shrank to 900 KB", "the pipeline takes 14 minutes"); none when there is
    none."""
    for token in reversed(clause[max(0, at - KEY_REACH) : at]):
        if token.value:
            break
        if token.content and token.text not in CARRIERS:
            return frozenset([token.stem])
    return frozenset()


def _delta(clause: Sequence[Token], at: int) -> bool:
    """The value says by how much something changed ("improved by 20%"), not what it is."""
    return at >= 2 and clause[at - 1].text == "by" and clause[at - 2].text in CUES


def _owner(clause: Sequence[Token], at: int) -> str:
    """Whose value the one at ``at`` is, by the nearest pronoun before it in its clause: ``"1"`` for the
    speaker ("I", "my", "we", "our"), ``"3"`` for someone else ("she", "their"), ``""`` when none says
    ("you" is the one asked, not an owner). Two people's values are two facts ("our premium costs $3.99",
    "Streaky raised their premium to $5.99")."""
    for token in reversed(clause[max(0, at - SUBJECT_BEFORE) : at]):
        if token.text in FIRST_PERSON:
            return "1"
        if token.text in THIRD_PERSON:
            return "3"
    return ""


def _goal(clause: Sequence[Token], at: int) -> bool:
    return any(t.text in GOALS for t in clause[max(0, at - GOAL_BEFORE) : at])


def restatements(clause_list: Sequence[list[Token]]) -> list[Update]:
    """A memory's plain statements of a value after a word of change too far from it to be an update
    statement ("I trimmed the laptop setup in the onboarding doc to 15 steps"): what a newer memory says
    a thing is now. Weaker evidence, so :func:`infer` asks more of the older memory's subject
    (``RESTATED_SHARED`` words). A value with no word of change before it in its clause is a mention, not
    a change ("the planning lasted 3 hours" today), and gives no hint. Not a date or a time: without a
    word of change next to them, those say when something happened ("after peer review on August 7")."""
    found = []
    for clause in clause_list:
        words = frozenset(t.stem for t in clause)
        for index, token in enumerate(clause):
            if not token.value or token.kind in EVENTS or _delta(clause, index):
                continue
            if not any(t.text in CUES for t in clause[:index]):
                continue  # no word of change: a mention, where unsure no hint
            window = clause[max(0, index - SUBJECT_BEFORE) : index + RESTATED_AFTER + 1]
            subject = frozenset(t.stem for t in window if _content(t))
            if len(subject) >= RESTATED_SHARED and not _added(clause, index):
                modifiers = _modifiers(window, subject, token.stem)
                found.append(Update(token.stem, token.kind, subject, _names(window), modifiers, words,
                                    clause[max(0, index - TOPIC_REACH) : index + RESTATED_AFTER + 1],
                                    _goal(clause, index), owner=_owner(clause, index)))  # fmt: skip
    return found


def framed(clause_list: Sequence[list[Token]]) -> list[Update]:
    """A memory's values stated in a frame of words another memory can state another value in ("I secured
    5 interviews" after "I secured 3 interviews", "$5,500 for attorney fees" after "$5,000 for attorney
    fees"): a slot whose newer value is the current one, with or without a word of change. Only what the
    speaker says of their own (:func:`_owner`): "the sharding now saves 25% of CI time" is another thing's
    share, not a new value of "the cache saves 40% of CI time". Not a date or a
    time (those say when something happened, and two meetings are two facts), nor a bare number or a year
    (no unit or noun says what they count), nor a goal, nor a value the words before it make a wish or a
    question ("should I charge $8", "if I reach 60 loaves")."""
    found = []
    for clause in clause_list:
        for index, token in enumerate(clause):
            if not token.value or token.kind in EVENTS or token.kind in ("number", "year", "score"):
                continue
            if _delta(clause, index) or _goal(clause, index) or _added(clause, index):
                continue
            if any(t.text in UNSURE for t in clause[max(0, index - SUBJECT_BEFORE) : index]):
                continue
            frame, owner = _frame(clause, index), _owner(clause, index)
            if not frame[1] or owner != "1":
                continue  # only what the speaker says of their own ("I secured", "my budget"), not "the cache saves"
            window = clause[max(0, index - SUBJECT_BEFORE) : index + RESTATED_AFTER + 1]
            subject = _stems(window)
            found.append(Update(token.stem, token.kind, subject, _names(window), _modifiers(window, subject,
                                token.stem), frozenset(t.stem for t in clause), owner=owner,
                                frame=frame))  # fmt: skip
    return found


def _frame(clause: Sequence[Token], at: int) -> tuple[str, tuple[str, ...], str]:
    """The words that frame the value at ``at``: the word of content just before it (past small words and
    words of degree: "secured only 3"), the first two after it ("interviews for executive", "for initial
    patent"), none past another value, and what a preposition right after it or after its noun says it
    is of or for ("interviews for *executive* producer roles", "$5,000 for *attorney* fees"), or ""."""
    before = ""
    for token in reversed(clause[max(0, at - 3) : at]):
        if token.value:
            break
        if token.content and token.text not in DEGREE:
            before = token.stem
            break
    after: list[str] = []
    for token in clause[at + 1 : at + 5]:
        if token.value or len(after) == 2:
            break
        if token.content:
            after.append(token.stem)
    which = ""
    following = clause[at + 1 : at + 4]
    for index, token in enumerate(following[:2]):
        if token.text in QUALIFIERS and index + 1 < len(following) and following[index + 1].content:
            which = following[index + 1].stem
            break
        if token.value or not token.content:
            break
    return before, tuple(after), which


def same_slot(
    update: Update,
    older: Sequence["Stated"],
    query: frozenset[str],
    older_words: frozenset[str],
    newer_words: frozenset[str],
) -> bool:
    """Whether a newer value sits in the frame an older value of its kind sat in (:func:`framed`): the same
    two words after it, or the same word before it and the same word after it, one of them a word the
    query asks about."""
    before, after, which = update.frame
    for stated in older:
        if not comparable(update, stated) or _says_new_value(update, stated):
            continue
        their_before, their_after, their_which = stated.frame
        if _differ(their_which or None, which, older_words, newer_words) if which else False:
            continue  # "3 interviews for executive roles", "2 interviews for director roles"
        if len(after) == 2 and after == their_after:
            words = frozenset(after)
        elif before and before == their_before and after[:1] == their_after[:1]:
            words = frozenset((before, after[0]))
        else:
            continue
        if not words & query:
            continue
        ours, theirs = _periods(update.clause), _periods(stated.clause)
        if ours and theirs and not ours & theirs:
            continue  # "$43 on books in January", "$28 on books in February": one value a period
        if _one_thing(update, stated, words | (stated.words & update.subject), older_words, newer_words):
            return True
    return False


def _periods(words: frozenset[str]) -> frozenset[str]:
    """The months, seasons and years a clause names (its words' stems, where a date's stem is its month's
    first three letters and the day: ``apr25``); "may" and "march" alone are verbs as often as months."""
    found = set()
    for word in words:
        dated = re.fullmatch(r"[a-z]{3}\d+(?:-\d+)?", word) is not None
        if word[:3] in _MONTHS and (dated or (word in _MONTHS and word not in ("march", "mar", "may"))):
            found.add(word[:3])
        elif word in SEASONS or re.fullmatch(r"(19|20)\d\d", word):
            found.add(word)
    return frozenset(found)


def _names(window: Sequence[Token]) -> frozenset[str]:
    return frozenset(t.stem for t in window if t.name)


def _verb(token: Token) -> bool:
    """A past or present participle ("completed", "completing"): a number after it is what it counted
    ("completed 15 problems"), not which one it is ("sprint 2")."""
    return token.text.endswith(("ed", "ing"))


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
        elif after is not None and after.value and after.stem != value and not _verb(token):
            out.setdefault(token.stem, "#" + after.stem)
    if (
        clause
        and clause[0].stem in wanted
        and len(clause) > 1
        and clause[1].value
        and clause[1].stem != value
        and not _verb(clause[0])
    ):
        out.setdefault(clause[0].stem, "#" + clause[1].stem)
    return out


class Stated(NamedTuple):
    """One value an older memory states, with what is around it (computed once per memory)."""

    value: Token
    clause_values: frozenset[tuple[str, str]]  # its clause's values and kinds (one may be the new value)
    words: frozenset[str]  # the content words around it
    near: Sequence[Token]
    names_before: frozenset[str]  # the names in the words before it
    clause: frozenset[str] = frozenset()  # every word of its clause
    reach: Sequence[Token] = ()  # ``TOPIC_REACH`` tokens either side of it
    goal: bool = False
    subject: frozenset[str] = frozenset()  # the content words just before it and a few after ("deadline")
    key: frozenset[str] = frozenset()  # the words the value is said of (:func:`_key`)
    owner: str = ""  # whose value it is (:func:`_owner`)
    frame: tuple[str, tuple[str, ...], str] = ("", (), "")  # the words that frame it (:func:`_frame`)


def stated_values(older: Sequence[list[Token]]) -> list[Stated]:
    out = []
    for clause in older:
        values = [i for i, t in enumerate(clause) if t.value]
        clause_values = frozenset((clause[i].stem, clause[i].kind) for i in values)
        every = frozenset(t.stem for t in clause)
        for i in values:
            if _delta(clause, i):
                continue
            near = clause[max(0, i - AROUND_VALUE) : i + AROUND_VALUE + 1]
            words = frozenset(t.stem for t in near if _content(t))
            names = _names(clause[max(0, i - SUBJECT_BEFORE) : i])
            reach = clause[max(0, i - TOPIC_REACH) : i + TOPIC_REACH + 1]
            subject = _stems(clause[max(0, i - SUBJECT_BEFORE) : i + RESTATED_AFTER + 1])
            goal, key = _goal(clause, i), _key(clause, i)
            out.append(Stated(clause[i], clause_values, words, near, names, every, reach, goal, subject, key,
                              _owner(clause, i), _frame(clause, i)))  # fmt: skip
    return out


def _says_new_value(update: Update, stated: Stated) -> bool:
    """The older clause already states the update's value (of a kind it could be): it is not the old one."""
    return any(v == update.value and same_kind(k, update.kind) for v, k in stated.clause_values)


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
        if not comparable(update, stated) or _says_new_value(update, stated):
            continue  # another kind of value (a date, an amount) is another fact; or it says the new one
        shared = stated.words & update.subject
        if len(shared) < least or len(shared) < SUBJECT_SHARE * len(update.subject) or not shared & query:
            continue
        if not stated.subject & update.subject & query:
            continue  # the words next to the older value say it is of another thing
        if not _one_thing(update, stated, shared, older_words, newer_words):
            continue
        return True
    return False


def answers_alike(
    update: Update,
    older: Sequence[Stated],
    query: frozenset[str],
    older_words: frozenset[str],
    newer_words: frozenset[str],
) -> bool:
    """Whether an update (a word of change and a value) and an older value answer the same question: a value
    of the same kind, each stated in a sentence that has the same ``TOPIC_WORDS`` or more words of the query,
    the older value next to one of them. A message names its subject once and then says "it" ("the probate
    process ... how it was shortened to 5-7 months"), so the sentence counts, not only the words before the
    value; the query says which of the sentence's words are the subject."""
    for stated in older:
        if not comparable(update, stated) or _says_new_value(update, stated):
            continue
        topic = query & update.clause & stated.clause
        if len(topic) < TOPIC_WORDS or not topic & _stems(stated.reach):
            continue
        if not topic & update.head and not (
            update.pronoun and len(topic & _stems(update.before)) >= TOPIC_WORDS
        ):
            continue  # what changed is another thing, unless "it" stands for the subject named just before
        if not query & stated.subject & newer_words:
            continue  # the newer memory never names what the older value is the value of, as asked
        if not _one_thing(update, stated, topic | (stated.words & update.subject), older_words, newer_words):
            continue
        theirs, ours = _modifiers(stated.reach, topic), _modifiers(update.before, topic)
        if any(_differ(theirs.get(w), kind, older_words, newer_words) for w, kind in ours.items()):
            continue
        return True
    return False


def keyed(
    update: Update,
    older: Sequence[Stated],
    query: frozenset[str],
    older_words: frozenset[str],
    newer_words: frozenset[str],
) -> bool:
    """Whether an update and an older value are said of the same word, one the query asks about, with values
    of one kind ("the bundle is 1.8 MB", "the bundle shrank to 900 KB"): the subject named once, where the
    other words of the two sentences differ."""
    asked = update.key & query
    if not asked:
        return False
    for stated in older:
        key = stated.key & asked
        if not key or not comparable(update, stated) or _says_new_value(update, stated):
            continue
        if _one_thing(update, stated, key | (stated.words & update.subject), older_words, newer_words):
            return True
    return False


def _stems(window: Sequence[Token]) -> frozenset[str]:
    return frozenset(t.stem for t in window if _content(t))


def _one_thing(
    update: Update,
    stated: Stated,
    shared: frozenset[str],
    older_words: frozenset[str],
    newer_words: frozenset[str],
) -> bool:
    """No word says an update and an older value are about two things: a name each side has that the other
    lacks ("the Go gateway" against "Python services"), or a shared subject word each side qualifies with a
    word the other never uses ("free tier" against "enterprise tier")."""
    if update.goal != stated.goal and not (GOAL_STEMS & (stated.clause if update.goal else update.clause)):
        return False  # a goal against a state: "a goal of 12 books", "finished 11 books" (unless the
        # other sentence speaks of a target too: "it was adjusted to 1,350 words ... this new target")
    if update.owner and stated.owner and update.owner != stated.owner:
        return False  # "I charge $7 a loaf" and "she charges $9": one value each, both true
    if update.names - older_words and stated.names_before - newer_words:
        return False
    kinds = _modifiers(stated.near, shared)
    return not any(
        _differ(kinds.get(w), kind, older_words, newer_words)
        for w, kind in update.modifiers.items()
        if w in shared
    )


def _differ(theirs: str | None, ours: str, older_words: frozenset[str], newer_words: frozenset[str]) -> bool:
    """Two modifiers of one subject word name different things: both words (or both numbers), and each
    absent from the other memory ("free" tier and "enterprise" tier; not "grocery" budget against a "joint
    budget for groceries")."""
    if theirs is None or theirs.startswith("#") != ours.startswith("#") or theirs == ours:
        return False
    return theirs.lstrip("#") not in newer_words and ours.lstrip("#") not in older_words


def infer(rows: Sequence[Mapping[str, Any]], texts: dict[int, str], when: dict[int, int], query: str
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
    parsed: dict[int, list[list[Token]]] = {}  # read when a comparison needs it: most rows state no value

    def clauses_of(i: int) -> list[list[Token]]:
        if i not in parsed:
            parsed[i] = clauses(texts[i])
        return parsed[i]

    stems: dict[int, frozenset[str]] = {}

    def words_of(i: int) -> frozenset[str]:
        if i not in stems:
            stems[i] = frozenset(t.stem for clause in clauses_of(i) for t in clause)
        return stems[i]

    newer = {i for i in {new["id"] for _, new in pairs} if _may_state(texts[i])}
    valued = {i for i in {old["id"] for old, _ in pairs} if i in newer or _may_state(texts[i])}
    said = {i: [u for u in updates(clauses_of(i)) if u.clause & asked] for i in newer}
    stated = {i: [u for u in said[i] if u.subject & asked] for i in newer}
    plain = {i: [u for u in restatements(clauses_of(i)) if u.subject & asked] for i in newer}
    slots = {i: [u for u in framed(clauses_of(i)) if asked & {u.frame[0], *u.frame[1]}] for i in newer}
    values: dict[int, list[Stated]] = {}
    current: dict[int, frozenset[tuple[str, str]]] = {}
    changed: dict[int, frozenset[tuple[str, str]]] = {}  # values a memory states as changed
    found: dict[int, int] = {}
    for old, new in sorted(pairs, key=lambda pair: -when[pair[1]["id"]]):  # the newest update wins
        o, n = old["id"], new["id"]
        if o in found or n not in newer or not (said[n] or plain[n] or slots[n]) or o not in valued:
            continue  # no update in the newer memory, or no value in the older one to replace
        if o not in values:
            values[o] = stated_values(clauses_of(o))
        if n not in current:
            current[n] = _current_values(clauses_of(n))
        # a value the newer memory states too (not as what it was: "from 12") is no value it replaced
        olds = [s for s in values[o] if not _restated(s, current[n])]
        older, newer_words = words_of(o), words_of(n)
        if (plain[n] or slots[n]) and o not in changed:
            changed[o] = frozenset((u.value, u.kind) for u in updates(clauses_of(o)))
        # a mere mention does not undo a change: an older value stated as an update needs one to replace it
        settled = [s for s in olds if (s.value.stem, s.value.kind) not in changed.get(o, frozenset())]
        if (
            any(replaces(u, olds, asked, older, newer_words) for u in stated[n])
            or any(replaces(u, settled, asked, older, newer_words, least=RESTATED_SHARED) for u in plain[n])
            or any(answers_alike(u, olds, asked, older, newer_words) for u in said[n])
            or any(keyed(u, olds, asked, older, newer_words) for u in said[n])
            or any(same_slot(u, settled, asked, older, newer_words) for u in slots[n])
        ):
            found[o] = n
    return found


def _may_state(text: str) -> bool:
    """Whether a memory may state a value at all: every value holds a digit or is a day of the week
    (:func:`tokens`). A memory that states none updates nothing, and is not read further."""
    if _DIGIT.search(text):
        return True
    lowered = text.lower()
    return any(day in lowered for day in _WEEKDAYS)


def _restated(stated: Stated, current: frozenset[tuple[str, str]]) -> bool:
    return any(v == stated.value.stem and same_kind(k, stated.value.kind) for v, k in current)


def _current_values(clause_list: Sequence[list[Token]]) -> frozenset[tuple[str, str]]:
    """The values (and kinds) a memory states as they are, not as what they were ("from 12", "was 10 MB")."""
    return frozenset(
        (t.stem, t.kind)
        for clause in clause_list
        for k, t in enumerate(clause)
        if t.value and not (k and clause[k - 1].text in ("from", "was", "were"))
    )
