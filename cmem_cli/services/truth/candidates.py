"""Write-time replacement candidates: what a memory just recorded may replace.

People and agents state a change in their own words ("Actually, make that Thursday", "Change of plans:
invoice 88 is on hold", "Raised bcrypt cost from 10 to 12") and rarely say which memory it replaces. So
when a memory is recorded, cmem looks among the older memories of its project (keyword search with the
new memory's words) and the last few of its session for the ones it may replace, and scores each by what
a change leaves in text, in any domain:

- the same subject: the words they share, weighed by BM25 (a rare identifier counts more than "team");
- a change stated: correction and update language in the new memory ("actually", "instead", "no longer",
  "from X to Y", "raised to", "cancelled", "on hold", "replaced by", "the official ... is", "now", ...);
- what changed: a value of the same kind that differs (a weekday, an amount, a duration, a version), a
  state that differs ("approved" against "on hold"), a name only one side has, or the new memory naming
  the old value as what was ("from 10", "instead of Figma", "no Redis");
- nothing saying it is one more thing ("also", "still", "next to", "in addition").

The best candidates (at most :data:`REPORTED`) are reported to the writer, who confirms with ``cmem link
NEW supersedes OLD``. A confident one (a change stated, about the same subject, with what changed, and
clearly ahead of the others) is recorded as inferred (``inferred_supersessions``): read paths mark it
``possibly_superseded_by`` and rank it below its successor, and the briefing leaves it out. So is the one
memory a stated change restates with another value in the same slot (the best candidate, clearly ahead,
most of the new memory's subject shared, its value changed): people rarely name what they replace.
Keyword only: no model is loaded on the add path.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.fts import fts_query
from cmem_cli.services.truth import updates
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.json_types import CandidateJson

REPORTED = 3  # candidates reported to the writer
POOL = 20  # older memories of the project compared
QUERY_WORDS = 40  # the new memory's words given to the keyword search (a long narrative is cut)
CONFIDENT = 0.75  # a candidate's score from which it is recorded as inferred (when clearly ahead)
MARGIN = 0.15  # how far ahead of the next candidate a confident one must be (else the writer decides)
FLOOR = 0.30
OVERLAP = 0.3  # the weight of how much of the two memories' words they share
FOCUS = 0.25  # the share of its subject words a one-fact memory shares with the one it restates
SAME_SUBJECT = 2  # shared subject words a change must have with the one memory it restates
RESTATED = 1.0  # that memory's score at least
RESTATED_MARGIN = 0.3  # and how far ahead of the next candidate  # a candidate scoring less is not reported

# Correction and update language: how people and agents say that what was true changed.
_CHANGE = re.compile(
    r"\b(?:actually|correction|corrected|instead|scratch that|no wait|wait,|never ?mind|change of plans?"
    r"|final call|final decision|decided|decision changed|we picked|we chose|we(?:'ll| will)? go with|going with"
    r"|going forward|from now on|from next|starting|no longer|not any ?more|anymore|cancel+ed|cancel+ing"
    r"|called off|on hold|paused|postponed|rescheduled|mov(?:e|ed|es|ing)|delayed|slips?"
    r"|push(?:ed|es|ing)?\s+(?:back\s+|out\s+)?to\s+(?=\$?\d|(?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun"
    r"|jul|aug|sep|oct|nov|dec|next)\w*)"
    r"|extended|shortened|scaled|chang(?:e|ed|es|ing)|switch(?:ed|es|ing)?|replac(?:e|ed|es|ing)|renam(?:e|ed|ing)"
    r"|raised|lowered|increased|decreased|reduced|bumped|cut|dropped|replaced|replacing|switched|swapped"
    r"|migrated|upgraded|downgraded|renamed|took over|taking over|revised|revoked|rejected|withdrawn|ended"
    r"|stopped|removed|deprecated|tightened|relaxed|changed|updated?|goes up|goes down|went up|went down"
    r"|back to|make that|set to|is now|are now|now(?! that)|new|the official|effective)\b",
    re.I,
)
_FROM_TO = re.compile(r"\bfrom\s+\S+(?:\s+\S+){0,4}?\s+to\b", re.I)
# Words that add a second thing instead of replacing the first.
_ADDITION = re.compile(
    r"\b(?:also|too|as well|in addition|additionally|alongside|next to|besides|both|still|unchanged|"
    r"stays?|remains?|keeps?|another|second)\b",
    re.I,
)
# Words that retire what follows them: the old value named in the new memory ("from 10", "instead of
# Figma", "no Redis", "not 200").
_RETIRING = frozenset(["from", "instead", "of", "not", "no", "replaced", "replacing", "than", "was", "were",
                       "dropped", "removed", "longer", "old"])  # fmt: skip
# Words that retire what comes just before them ("structlog is removed", "offset is deprecated").
_RETIRED = frozenset(["removed", "dropped", "deprecated", "gone", "retired", "unmaintained", "replaced"])
# Correction language that says by itself that an earlier statement no longer holds (not "now", "new").
_REPLACING = re.compile(
    r"\b(?:actually|correction|instead|scratch that|no wait|never ?mind|change of plans?|final call|no longer"
    r"|not any ?more|anymore|cancel+ed|called off|replaced|replacing|switched|swapped|migrated|moved from"
    r"|dropped|removed|deprecated|took over|rescheduled|postponed|revoked|rejected|make that"
    r"|(?:mov|switch)(?:e|es|ed|ing)? to|go(?:es)? with|going with)\b|\bfrom\s+\S+.*\bto\b",
    re.I,
)
# A request or thanks in a conversation states no fact ("can you help me", "I'm wondering", "thanks").
_REQUEST = re.compile(
    r"\b(?:can|could|would) you\b|\bhelp me\b|\bwondering\b|\bthanks?\b|\bthank you\b|\bi'?m (?:trying|not sure"
    r"|kinda|looking|thinking|curious|worried|considering|planning|hoping)\b|\bmakes sense\b",
    re.I,
)
# States a memory can say a thing is in: two different ones of one subject are a change.
_STATES = {
    **dict.fromkeys(["approved", "confirmed", "booked", "scheduled", "accepted", "active", "live", "enabled",
                     "open", "agreed", "signed", "hired", "green-lit", "greenlit"], "on"),
    **dict.fromkeys(["cancelled", "canceled", "rejected", "hold", "paused", "declined", "disabled", "closed",
                     "ended", "stopped", "revoked", "withdrawn", "postponed", "suspended", "sunset", "gone",
                     "removed", "deprecated", "dropped"], "off"),
}  # fmt: skip


_SENTENCES = re.compile(r"[.;!?]\s+|\n+")
_MORE = re.compile(r"\b(?:also|another|additional|additionally|second|besides|as well)\b", re.I)
_CUE_CLAUSES = re.compile(r"[,;]\s+|\s+(?:but|because|since|so|while|although|though)\s+", re.I)
_CLAUSES = re.compile(r"[.;!?,:]\s+|\n+|\s+(?:but|because|since|so|while|although|though)\s+", re.I)
_MONTHS = frozenset(["january", "february", "march", "april", "may", "june", "july", "august", "september",
                     "october", "november", "december"])  # fmt: skip
_NUMBER_WORDS = {w: str(n) for n, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"])}  # fmt: skip
# How often: "weekly" against "every two weeks" or "daily" is another value of one kind.
_FREQUENCY = {"hourly": "h", "daily": "d", "nightly": "d", "weekly": "w", "biweekly": "2w", "fortnightly": "2w",
              "monthly": "m", "quarterly": "q", "yearly": "y", "annually": "y", "every": "every"}  # fmt: skip
_WEEKDAYS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
# "every X": how often X says ("every night" is daily, "every Sunday" weekly, "every hour" hourly).
_EVERY = {"hour": "h", "day": "d", "night": "d", "morning": "d", "evening": "d", "weekday": "d", "week": "w",
          **dict.fromkeys(_WEEKDAYS, "w"), "month": "m", "quarter": "q", "year": "y"}  # fmt: skip


class Candidate(NamedTuple):
    """An older memory the new one may replace: its id, title and score (0..1.5), whether it was
    recorded as inferred, and why (the evidence, for the writer)."""

    id: int
    title: str
    score: float
    confident: bool
    why: str

    def as_dict(self, new_id: int) -> CandidateJson:
        return {"id": self.id, "title": self.title, "score": round(self.score, 3), "inferred": self.confident,
                "why": self.why, "confirm": confirm_command(new_id, self.id)}  # fmt: skip


def confirm_command(new_id: int, old_id: int) -> str:
    """The one command that says the new memory replaced the old one."""
    return f"cmem link {new_id} supersedes {old_id}"


class _Text(NamedTuple):
    words: frozenset[str]  # content stems (subject words), identifiers included
    values: dict[str, set[str]]  # kind -> normalised values
    names: frozenset[str]  # capitalised words (products, people, places)
    states: frozenset[str]  # "on"/"off" words
    retired: frozenset[str]  # stems and values just after a retiring word ("from 10", "instead of Figma")
    stems: frozenset[str]  # every stem and value
    stated: frozenset[str]  # the values its update statements changed something to ("raised to 4")
    updates: tuple[Any, ...]  # those statements (:class:`cmem_cli.services.truth.updates.Update`)
    kinds: dict[
        str, set[str]
    ]  # search's kinds of value (:func:`cmem_cli.services.truth.updates.tokens`) -> values
    proper: frozenset[str]  # names said as owners, a sentence's first word too ("Alice's budget")
    labels: dict[str, set[str]]  # a word -> the numbers right after it ("sprint 2", "invoice 88")
    identifiers: frozenset[str]  # code identifiers (``MIN_PASSWORD_LENGTH``, ``fail_under``)
    after: dict[str, set[str]]  # content stem -> the content stems just after it (release "checklist")
    before: dict[str, set[str]]  # content stem -> the content stems just before it ("enterprise" tier)
    owners: frozenset[str]  # whose values: "first" (I, we, our), "third" (she, their)
    goal: bool  # it speaks of a goal or target, not of a state


@functools.lru_cache(maxsize=2048)
def _read(text: str) -> _Text:
    words: set[str] = set()
    values: dict[str, set[str]] = {}
    names: set[str] = set()
    states: set[str] = set()
    retired: set[str] = set()
    stems: set[str] = set()
    before: dict[str, set[str]] = {}
    owners: set[str] = set()
    kinds: dict[str, set[str]] = {}
    proper: set[str] = set()
    labels: dict[str, set[str]] = {}
    after: dict[str, set[str]] = {}
    found = updates.clauses(text)
    for clause in found:
        for index, token in enumerate(clause):
            if token.value and index and clause[index - 1].text == "by":
                continue  # "increased by 5%": how much it changed, not what it is
            stems.add(token.stem)
            if token.value:
                kinds.setdefault(token.kind, set()).add(token.stem)
            if token.name and token.text.endswith("'s"):  # whose: "Alice's budget"
                proper.add(token.stem)
            if token.content and index and clause[index - 1].content:
                before.setdefault(token.stem, set()).add(clause[index - 1].stem)
            if (
                token.value
                and index
                and clause[index - 1].content
                and (clause[index - 1].name or token.kind == "number")
            ):
                labels.setdefault(clause[index - 1].stem, set()).add(token.stem)  # "Sprint 2", "invoice 88"
            if token.content and index + 1 < len(clause) and clause[index + 1].content:
                after.setdefault(token.stem, set()).add(clause[index + 1].stem)
            if token.text in updates.FIRST_PERSON:
                owners.add("first")
            elif token.text in updates.THIRD_PERSON:
                owners.add("third")
            if token.value:
                values.setdefault(_kind(token.kind), set()).add(token.stem)
            elif token.text in _NUMBER_WORDS:
                values.setdefault("count", set()).add(_NUMBER_WORDS[token.text])
                kinds.setdefault("number", set()).add(_NUMBER_WORDS[token.text])
            elif token.stem in _FREQUENCY:
                often = _FREQUENCY[token.stem]
                if often == "every" and index + 1 < len(clause):  # "every hour", "every 10 minutes"
                    then = clause[index + 1]
                    often = then.stem if then.value else _EVERY.get(then.text.rstrip("s"), often)
                values.setdefault("frequency", set()).add(often)
                kinds.setdefault("frequency", set()).add(often)
            elif (
                token.text in _MONTHS and token.text != "may" or token.text.rstrip("s") in _WEEKDAYS
            ):  # "delayed to June"
                values.setdefault("date", set()).add(token.text[:3])
                kinds.setdefault("date", set()).add(token.text[:3])
            elif token.content:
                words.add(token.stem)
                if (
                    "_" in token.text
                ):  # an identifier names its subject in its parts too (MIN_PASSWORD_LENGTH)
                    words.update(updates.stem(part) for part in token.text.split("_") if len(part) > 2)
            if token.name and index > 0:  # a sentence's first word is capitalised whatever it is
                names.add(token.stem)
            if token.text in _STATES:
                states.add(_STATES[token.text])
            if any(t.text in _RETIRING for t in clause[max(0, index - 2) : index]) or any(
                t.text in _RETIRED for t in clause[index + 1 : index + 4]
            ):
                retired.add(token.stem)
    said = tuple(updates.updates(found))
    stated = frozenset(u.value for u in said)
    goal = bool(stems & updates.GOAL_STEMS) or any(t.text in updates.GOALS for c in found for t in c)
    return _Text(frozenset(words), values, frozenset(names), frozenset(states), frozenset(retired),
                 frozenset(stems), stated, said, kinds, frozenset(proper), labels,
                 frozenset(w for w in words if "_" in w), after, before, frozenset(owners), goal)  # fmt: skip


def _two_things(new: _Text, old: _Text) -> bool:
    """What tells two related memories apart, both true: a subject word each qualifies with a word the
    other never uses ("free tier" and "enterprise tier", "unit tests" and "integration tests"), another
    owner ("our price" and "their price"), a goal against a state."""
    for word in (new.words & old.words) - new.names - old.names:  # a common noun each side qualifies
        for side in ("before", "after"):
            ours = getattr(new, side).get(word, set()) - old.stems
            theirs = getattr(old, side).get(word, set()) - new.stems
            if ours and theirs:
                return True
    if any(
        new.labels[w] - old.labels[w] and old.labels[w] - new.labels[w]
        for w in new.labels.keys() & old.labels.keys()
    ):
        return True  # "Sprint 1" and "Sprint 2"
    if "third" in new.owners ^ old.owners:
        return True
    if (new.proper - old.proper) and (old.proper - new.proper) and not new.retired & old.proper:
        return True  # "Alice's budget" and "Bob's budget", unless the new one retires the old owner
    return new.goal != old.goal


def _alike(ours: frozenset[str], theirs: frozenset[str]) -> set[str]:
    """The subject words two memories share: the same stem, or one stem of five letters or more that
    begins the other ("approval" and "approved", "refresh" and "refreshed")."""
    shared = set(ours & theirs)
    for word in ours - theirs:
        if len(word) >= 5 and any(o.startswith(word) or word.startswith(o) for o in theirs if len(o) >= 5):
            shared.add(word)
    return shared


def _kind(kind: str) -> str:
    """A value's kind as candidates compare them: every count and plain number is a ``count``."""
    return "count" if kind.startswith("n:") or kind == "number" else kind


def _comparable(one: str, other: str) -> bool:
    """Two values can state one fact: the same kind, or a bare number against any quantity ("raised to 90"
    against "80%")."""
    one, other = _kind(one), _kind(other)
    return (
        one == other
        or "count" in (one, other)
        and {one, other} & {"count", "percent", "money", "size", "duration", "version"} == {one, other}
    )


def _stated(row: Mapping[str, Any]) -> str:
    facts = row.get("facts") or []
    if isinstance(facts, str):
        import json

        facts = json.loads(facts or "[]")
    return "\n".join(p for p in (row.get("title"), row.get("subtitle"), row.get("narrative"), *facts) if p)


def find(store: Store, row: Mapping[str, Any], *, infer: bool = True) -> list[Candidate]:
    """The memories the stored observation ``row`` may replace, best first (at most :data:`REPORTED`); with
    ``infer``, the confident ones are recorded as inferred replacements (in the caller's transaction)."""
    text = _stated(row)
    said, addition = _stated_change(text)  # correction or update language, read strictly
    change = said or any(t.text in updates.CUES for clause in updates.clauses(text) for t in clause)
    replacing = change and _REPLACING.search(text) is not None
    words = " ".join(re.findall(r"[\w.$%:/-]+", text)[:QUERY_WORDS])
    pool = store.supersession.replacement_pool(
        fts_query(words), int(row["id"]), str(row["project"]), row.get("session"), int(row["created_at"]),
        limit=POOL,
    )  # fmt: skip
    if not pool:
        return []
    ids = [found_id for found_id, _, _ in pool]
    olds = {r.id: r for r in store.supersession.stated_texts(ids)}
    replaced = store.supersession.newest_successors(ids)
    new = _read(text)
    cued = _read(" .\n".join(_cue_clauses(text)))  # what the clauses that state a change say
    best = max((strength for _, strength, _ in pool), default=0.0) or 1.0
    scored: list[_Scored] = []
    for found_id, strength, same_session in pool:
        old_row = olds.get(found_id)
        if old_row is None:
            continue
        old = _read(
            "\n".join(p for p in (old_row.title, old_row.subtitle, old_row.narrative, *old_row.facts) if p)
        )
        shared = _alike(new.words, old.words) | (new.names & old.names)
        shared |= {v for vals in new.values.values() for v in vals} & {
            v for vals in old.values.values() for v in vals
        }
        if not shared and not same_session:
            continue
        differs = any(_comparable(kind, k) and (vals - o) for kind, vals in new.values.items()
                      for k, o in old.values.items())  # fmt: skip
        agrees = bool(new.stated and new.stated <= old.stems)  # it states the value the older one has
        state = bool(new.states and old.states and new.states != old.states) or (
            "off" in new.states and "off" not in old.states and bool(old.states or old.values)
        )
        # another name: each side has one the other lacks, or the clause stating the change puts another
        # name where the old one had one ("goes to Dana", then "send it to Marcus from now on")
        named = bool(new.names - old.names) and bool(old.names - new.names)
        named = named or bool(old.names) and bool(cued.names - old.stems)
        # the old value named as what was: a name, a value or a word of it ("no merge commits", "not Redis")
        retired = bool(
            (old.names | old.words | {v for vals in old.values.values() for v in vals}) & new.retired
        )
        what = (differs and not agrees) or state or named or retired
        # the slot's value changed, strictly: a value of the same kind (search's kinds) the new memory
        # does not repeat; the new memory repeating every value of the old one replaces nothing of it
        olds_values = {v for vals in old.values.values() for v in vals}
        repeats = bool(olds_values) and olds_values <= new.stems
        slot = not repeats and any(
            updates.same_kind(c, k) and (cv - ov) and (ov - new.stems)
            for c, cv in new.kinds.items()
            for k, ov in old.kinds.items()
        )
        score = 0.5 * strength / best + 0.1 * min(len(shared), 4)
        score += 0.2 * change + 0.2 * what + 0.1 * same_session - 0.2 * addition
        # how much of the two is one subject: of a long message's many shared words, the share counts
        overlap = len(shared & new.words & old.words) / max((len(new.words) * len(old.words)) ** 0.5, 1.0)
        score += OVERLAP * overlap
        if agrees:
            score -= 0.3  # the older memory already says what this one changed it to
        if found_id in replaced:
            score -= 0.3  # already replaced: its successor is the one this may replace
        reasons = [r for r, on in (("change stated", change), ("same subject", len(shared) >= 2),
                                   ("a value differs", differs), ("state differs", state), ("another name", named),
                                   ("old value named as what was", retired), ("same session", same_session))
                   if on]  # fmt: skip
        # a memory sharing one word and stating no change is no candidate: it would be named at every add
        if score >= FLOOR and (change or what or len(shared) >= SAME_SUBJECT):
            # one setting named by the same identifier on both sides: any two quantities of it compare
            same = _comparable if cued.identifiers & old.identifiers else updates.same_kind
            comparable = [(k, o) for k, o in old.kinds.items() for c in cued.kinds if same(c, k)]
            restated = bool(comparable) and all(o <= new.stems for _, o in comparable)  # "from $500 to $550"
            stated = (
                bool(cued.words & old.words)
                and any(cued.kinds[c] - o for c in cued.kinds for k, o in comparable if same(c, k))
                and not restated
                and not agrees
            )
            scored.append(_Scored(score, found_id, ", ".join(reasons), frozenset(shared), what,
                                  _two_things(new, old), stated, agrees,
                                  slot or not repeats and (state or named or retired),
                                  len(shared & new.words) / max(len(new.words), 1)))  # fmt: skip
    scored.sort(key=lambda s: (-s.score, -s.id))
    top = scored[:REPORTED]
    confident: set[int] = set()
    if replacing and not addition and not _asked(text):
        confident = _confident(top)
    elif change:  # an update in values ("raised to 12"): search's rule, with its checks for two things
        confident = _updated(row, text, [olds[s.id] for s in top])
        if not addition and not _asked(text):  # or the same subject changed, nothing tells them apart
            confident |= {
                i for i in _confident([s for s in top if s.stated and not s.apart]) if i == top[0].id
            }
            # a change of how, not of how much, and nothing anywhere says a thing stays or is added
            if not new.values and not re.search(r"\d", text) and not _ADDITION.search(text):
                confident |= _restated(top)
    if not confident and not addition and not _asked(text) and not _REQUEST.search(text):
        # one slot, another value: a change stated about the one memory clearly about the same subject,
        # with what changed seen (another value of its kind, state or name; the old value named as what
        # was), nothing telling the two apart. A plain statement of another value is not enough: "I spent
        # $150 in February" and "$120 in January" both hold (tests/test_updates.py's pairs)
        lead = _likely(top)
        if (
            lead is not None
            and top[0].focus >= FOCUS
            and top[0].differs
            and said
            and not _ADDITION.search(text)
        ):
            confident = {lead}
    out = [Candidate(s.id, olds[s.id].title, s.score, s.id in confident, s.why) for s in top]
    likely = _likely(top) if change and not addition and not confident else None
    if infer:
        for candidate in out:
            if candidate.confident or candidate.id == likely:
                store.supersession.add_inferred(int(row["id"]), candidate.id, candidate.score,
                                                int(row["created_at"]), marked=candidate.confident)  # fmt: skip
    return out


def _stated_change(text: str) -> tuple[bool, bool]:
    """Whether ``text`` states a change (correction or update language), and whether the clause that
    states it says it adds a thing rather than replaces one ("also", "still", "next to")."""
    change = addition = False
    for sentence in _SENTENCES.split(text):
        for clause in _CLAUSES.split(sentence):
            if _CHANGE.search(clause) or _FROM_TO.search(clause):
                change = True
                addition = (
                    addition or _ADDITION.search(clause) is not None or _MORE.search(sentence) is not None
                )
    return change, addition


class _Scored(NamedTuple):
    score: float
    id: int
    why: str
    shared: frozenset[str]  # the subject words and values the two have in common
    what: bool  # what changed is seen: a value, a state, a name, the old value named as what was
    apart: bool = False  # something tells the two apart (:func:`_two_things`)
    stated: bool = False  # an update statement of the new memory changed a value the older one states
    agrees: bool = False  # the new memory states the value the older one has
    differs: bool = False  # the slot's value changed: another of the same kind, another name or state
    focus: float = 0.0  # the share of the new memory's subject words the two share (one fact: most)


def _cue_clauses(text: str) -> list[str]:
    """The clauses of ``text`` that state a change (:func:`_stated_change`)."""
    return [clause for sentence in _SENTENCES.split(text) for clause in _CUE_CLAUSES.split(sentence)
            if _CHANGE.search(clause) or _FROM_TO.search(clause)]  # fmt: skip


def _restated(top: list[_Scored]) -> set[int]:
    """The one memory a change of how (no value in it: "Order.items now uses selectinload") restates,
    when nothing else comes close: the best candidate about the same subject (``SAME_SUBJECT`` shared words
    and a score of ``RESTATED``), ahead of the next by ``RESTATED_MARGIN``, nothing telling the two apart."""
    if (
        not top
        or top[0].apart
        or top[0].agrees
        or len(top[0].shared) < SAME_SUBJECT
        or top[0].score < RESTATED
    ):
        return set()
    runner_up = top[1].score if len(top) > 1 else 0.0
    return {top[0].id} if top[0].score - runner_up >= RESTATED_MARGIN else set()


def _likely(top: list[_Scored]) -> int | None:
    """The candidate a stated change most likely replaced though nothing made it sure: the best one, about
    the same subject with what changed seen, nothing telling them apart, ahead of the next. It is not
    marked; search ranks it below the new memory when it shows both."""
    if not top or top[0].apart or top[0].agrees or not top[0].what or len(top[0].shared) < SAME_SUBJECT:
        return None
    runner_up = top[1].score if len(top) > 1 else 0.0
    return top[0].id if top[0].score - runner_up >= MARGIN else None


def _asked(text: str) -> bool:
    """A question or a wish states nothing ("Should I have saved $4,000 instead?")."""
    return (
        "?" in text
        or re.search(r"\b(?:should|would|could|might|if|whether|maybe|perhaps)\b", text, re.I) is not None
    )


def _updated(row: Mapping[str, Any], text: str, olds: list[Any]) -> set[int]:
    """The candidates the new memory states an update of, by the rule search infers with
    (:func:`cmem_cli.services.truth.updates.infer`), the new memory's words standing for the question. Recorded
    seconds apart counts: the writer states a change now (search's rule leaves out one write's records)."""
    new_id, at = int(row["id"]), int(row["created_at"])
    rows = [{"id": new_id, "kind": "observation", "project": row["project"]}]
    texts, when = {new_id: text}, {new_id: at}
    for old in olds:
        rows.append({"id": old.id, "kind": "observation", "project": row["project"]})
        texts[old.id] = "\n".join(p for p in (old.title, old.subtitle, old.narrative, *old.facts) if p)
        when[old.id] = min(int(old.created_at), at - updates.MIN_GAP_MS)
    return {old for old, new in updates.infer(rows, texts, when, text).items() if new == new_id}


def _confident(top: list[_Scored]) -> set[int]:
    """Which of the best candidates a memory that says in so many words that something is replaced
    ("instead", "no longer", "switched", "make that") replaced for sure enough to mark: the first when it
    is about the same subject (two shared words at least), clearly ahead, and what changed is seen in it or
    named; and any other that states the same subject (every word the first shares) with what changed
    (one fact recorded twice)."""
    if not top or top[0].score < CONFIDENT or len(top[0].shared) < 2:
        return set()
    lead = top[0]
    twins = {s.id for s in top[1:] if s.score >= CONFIDENT and s.what and s.shared >= lead.shared}
    runner_up = max((s.score for s in top[1:] if s.id not in twins), default=0.0)
    if lead.score - runner_up < MARGIN:
        return set()
    return {lead.id, *twins}
