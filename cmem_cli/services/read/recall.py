"""Recall at the moment of need: which memories to put in front of an agent when it sends a prompt or reads
or edits a file, and why.

Only what a person or the agent wrote is offered (decisions, bug causes, discoveries: notes, not the hooks'
tool records or session summaries, which restate the request), only what is current (a replaced memory
never), only once a session, and only what clears the bar: nothing is better than noise. Prompt recall is
keyword retrieval over the store's full-text index (no model is loaded in a hook); a note's evidence is its
BM25 *strength*, how much of the prompt it matched (:mod:`cmem_cli.core.bm25`), plus its session's (its
request's, or a tool record's, at a fifth). A code name in the prompt (``invoice_total``, ``total()``) is
evidence only for the notes that name it, or whose session's request did: "rename total() to invoice_total"
is not about a note on "the invoice's net total". File recall takes the notes tied to the file (citing it, written
in a session that changed it, or in one that read it and naming something the file holds), decisions and
bug causes first, with their freshness.

`cmem recall` prints exactly what the hooks would inject and why; docs/recall.md has the measurements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.marks import title_marks
from cmem_cli.core.recall_settings import RecallSettings
from cmem_cli.core.text import escape_control, estimate_tokens
from cmem_cli.core.timeutil import to_date, to_iso
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from collections.abc import Mapping


CANDIDATES = 12  # notes weighed for a prompt
HITS = 40  # keyword hits read for them (the hooks' records among them are left out)
SESSIONS = 4  # sessions whose request matched best, whose notes are weighed too
# A note's evidence for a prompt: its own keyword strength times NOTE_WEIGHT (a note's strength is scaled by
# its heaviest column's weight, so it reads about five times lower than a prompt's or a summary's) plus the
# strength of its session's request (the best of the session's prompts and summary). Tuned on the tune half
# of bench/data/recall-week (docs/recall.md).
NOTE_WEIGHT = 5.0
# A session's tool record that matches the prompt is evidence of what the session worked on, weaker than its
# request: it weighs its own strength, a fifth of what the same match weighs in a note (NOTE_WEIGHT).
TOOL_WEIGHT = 1.0
RELATIVE = 0.7  # and a note below this share of the best note's evidence is left out
# A note one clause of which (its title, a sentence) holds two distinct words of the prompt or more is about
# it, not a coincidence of one shared word: it needs only this share of the bar (weak evidence is still
# evidence where the words meet). Two words in different sentences are said of different things.
TWO_WORDS_SHARE = 0.3
# And above the bar, a note whose evidence is below this multiple of it needs those two words too (in one
# clause of it or of its session's request): one shared word ("events") in its title is not enough.
STRONG = 1.3
# A word counts there only if it tells notes apart: held by at most this share of the store's records ("run",
# "test", "line" are in every other tool record and note of a coding store).
RARE_WORD = 0.2
FILE_CANDIDATES = 12  # notes tied to a file weighed
GIVEN = "recall:"  # capture-log key of a memory given in a session: recall:<uid>
FILE_GIVEN = "recall-file:"  # and of a file whose memories were offered: recall-file:<path>
CHANGED = "recall-changed:"  # a memory whose cited file changed during the session: recall-changed:<uid>
TOLD = "recall-told:"  # and that the session was told so: recall-told:<uid>
WATCHED = 50  # files a session start asks Claude Code to watch
# What a memory's type says of its worth in front of an agent that is about to work (file recall's order).
TYPE_ORDER = {"decision": 0, "bugfix": 1, "insight": 2, "discovery": 3, "error": 4, "question": 9}
HEADER = {
    "prompt": "cmem recalls (memories of this project that match the prompt; `cmem get ID` for details):",
    "file": "cmem recalls notes on {path} (`cmem get ID` for details):",
}
CHANGED_HEADER = (
    "cmem: files these memories cite changed since they were written; check before relying on them:"
)


class Pick(NamedTuple):
    """One memory weighed: ``why`` says whether it was injected and, if not, what kept it out."""

    id: int
    uid: str
    type: str
    title: str
    created_at: int
    tokens: int
    score: float | None
    why: str  # injected | below the bar | replaced | given already | over budget | over the item limit
    line: str

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "uid": self.uid, "type": self.type, "title": self.title,
            "created_at": to_iso(self.created_at), "tokens": self.tokens,
            "score": None if self.score is None else round(self.score, 4), "why": self.why, "line": self.line,
        }  # fmt: skip


class Recall(NamedTuple):
    """What one recall point would inject (``text``: None when nothing clears the bar) and what it
    weighed."""

    point: str  # prompt | file
    subject: str  # the prompt, or the file's repository-relative path
    project: str
    bar: float | None  # prompt recall's bar; file recall has none (a tied note is wanted)
    picks: list[Pick]
    text: str | None
    note: str | None = None  # why nothing was weighed (recall off, the file offered already)
    lines: tuple[int, int] | None = None  # file recall: the part of the file that was read

    @property
    def injected(self) -> list[Pick]:
        return [p for p in self.picks if p.why == "injected"]

    @property
    def given_keys(self) -> list[str]:
        """The capture-log keys that remember what this recall gave the session (:func:`mark_given`): none
        when nothing was injected, except a file with notes, which is then not looked at again."""
        if not self.text and not (self.point == "file" and self.picks):
            return []
        keys = [GIVEN + p.uid for p in self.injected]
        keys += [TOLD + p.uid for p in self.picks if p.why == "changed"]
        if self.point == "file" and self.lines is None:
            keys.append(FILE_GIVEN + self.subject)
        return keys

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text) if self.text else 0

    def as_json(self) -> dict[str, Any]:
        return {
            "point": self.point, "subject": self.subject, "project": self.project, "bar": self.bar,
            "injected": [p.id for p in self.injected], "tokens": self.tokens, "text": self.text,
            "note": self.note, "weighed": [p.as_json() for p in self.picks],
        }  # fmt: skip


def line(row: Mapping[str, Any], *, fresh: bool = False) -> str:
    """One memory as the injection shows it: id, date, type, marks, title, tokens to `cmem get` it."""
    marks = title_marks(row)
    if fresh and not marks and row.get("stale") is not None:
        marks = "[fresh] "  # anchored, and what it is about in its files has not changed
    title = escape_control(" ".join(str(row.get("title") or "").split()))
    title = title if len(title) <= 140 else title[:139].rstrip() + "…"
    return f"#{row['id']} {to_date(row['created_at'])} {row['type']} {marks}{title} (~{int(row.get('tokens') or 0)}t)"


def prompt_recall(
    store: Store,
    project: str,
    prompt: str,
    settings: RecallSettings,
    *,
    session: str | None = None,
    cwd: str | None = None,
    given: Collection[str] = (),
    recorded: bool = False,
) -> Recall:
    """The notes of ``project`` whose keyword evidence for ``prompt`` clears ``settings.bar``, best first,
    at most ``max_items`` and ``max_tokens``; never one replaced or (with ``session``) given already (as the
    store's capture log says, or ``given``: keys of events the hooks have not recorded yet). ``recorded``:
    the store holds ``prompt`` already (a hook that records before it answers); else the prompts' keyword
    statistics count it, as they will once it is."""
    projects = (project, *store.projects.older_names(project))
    notes = _weigh(store, prompt, projects, session=session, recorded=recorded)
    names = code_names(prompt)
    if names:  # a code name is evidence for the notes that name it, not for those using its words in prose
        plain = _weigh(store, _without(prompt, names), projects, session=session, recorded=recorded)
        notes = {k: r for k, r in notes.items() if _names_code(r, names)} | {
            k: r for k, r in plain.items() if not _names_code(notes.get(k, r), names)
        }
    low, strong = TWO_WORDS_SHARE * settings.bar, STRONG * settings.bar
    weak = [r for r in notes.values() if low <= r["strength"] < strong]
    if weak:  # how many of the prompt's words each holds (those it was weighed on: code names apart)
        stems = store.recall.stemmer()
        words = store.recall.rare(stems(prompt), RARE_WORD)
        plain_words = store.recall.rare(stems(_without(prompt, names)), RARE_WORD) if names else words
        # A clause's stems, read once: a session's request is a clause of each of its notes.
        stemmed: dict[str, set[str]] = {}
        for row in weak:
            asked = words if _names_code(row, names) else plain_words
            said = _clauses(row, request=row["strength"] >= settings.bar) if asked else []
            row["words"] = max((len(asked & _stems_of(clause, stems, stemmed)) for clause in said), default=0)
    ranked = sorted(notes.values(), key=lambda r: -r["strength"])
    given = _known(store, session, given) if session is not None else given
    found = _choose(store, "prompt", prompt, project, ranked, settings, session=session, cwd=cwd, given=given)
    return _with_changed(store, found, session, given) if session is not None else found


def _stems_of(clause: str, stems: Callable[[str], set[str]], known: dict[str, set[str]]) -> set[str]:
    """``stems(clause)``, kept in ``known``: the same clause recurs among the weighed notes."""
    found = known.get(clause)
    if found is None:
        found = known[clause] = stems(clause)
    return found


def _weigh(
    store: Store, prompt: str, projects: tuple[str, ...], *, session: str | None, recorded: bool
) -> dict[int, dict[str, Any]]:
    """The notes that ``prompt``'s keywords reach in ``projects`` (a project and its older names), each with
    its evidence (``strength``): its own match times NOTE_WEIGHT plus its session's (module docstring). The
    prompting session's own notes are left out."""
    # The keyword hits of the prompt's telling words, and its matches among the summaries and the prompts.
    hits, requests = store.recall.keyword_evidence(
        prompt, projects, hits=HITS, sides=CANDIDATES, pending=not recorded
    )
    row: Any  # the loops below read keyword hits of three tables and stored notes, and weigh them alike
    notes: dict[int, Any] = {h["id"]: h for h in hits if not h.get("tools_used")}  # tool records left out
    # The session a note was written in is found by its request: the prompt and the summary restate it.
    asked: dict[str, float] = {}
    said: dict[str, str] = {}  # and the texts of its request that matched, one a line
    for row in requests:
        if row.get("session") and row["session"] != session:  # this session's own prompt is no evidence
            asked[row["session"]] = max(asked.get(row["session"], 0.0), row["strength"])
            said[row["session"]] = (
                f"{said.get(row['session'], '')}\n{row.get('text') or row.get('request') or ''}"
            )
    for row in hits:  # and the session's tool records (reads, edits, test runs) say what it worked on
        if row.get("tools_used") and row.get("session") and row["session"] != session:
            asked[row["session"]] = max(asked.get(row["session"], 0.0), TOOL_WEIGHT * row["strength"])
    best = sorted(asked, key=lambda s: -asked[s])[:SESSIONS]
    for row in store.recall.notes_of_sessions(best, limit=CANDIDATES):
        notes.setdefault(row["id"], {**row, "strength": 0.0})
    notes = {k: r for k, r in notes.items() if session is None or r.get("session") != session}
    for row in notes.values():  # what the session wrote itself is in the agent's context already
        row["strength"] = NOTE_WEIGHT * row["strength"] + asked.get(row.get("session") or "", 0.0)
        row["asked_text"] = said.get(row.get("session") or "", "")
    return notes


_CHUNK = re.compile(r"[^\s,;:!?'\"`()\[\]{}<>]+(?:\(\))?")


def code_names(prompt: str) -> list[str]:
    """The identifiers ``prompt`` names (``invoice_total``, ``total()``, ``os.path``, ``parseArgs``); an
    acronym (``PDF``, ``HS256``) is a word."""
    from cmem_cli.core.fts import symbol

    names = [symbol(chunk.rstrip(".")) for chunk in _CHUNK.findall(prompt)]
    return [
        n
        for n in names
        if n is not None and not (n.isupper() and n.isalnum()) and max(map(len, re.split(r"\W+|_", n))) >= 3
    ]


def _without(prompt: str, names: list[str]) -> str:
    """``prompt`` with ``names`` taken out: its prose words alone."""
    for name in names:
        prompt = prompt.replace(name, " ")
    return prompt


def _note_text(row: Mapping[str, Any]) -> str:
    return " ".join(str(row.get(f) or "") for f in ("title", "subtitle", "narrative", "facts", "concepts"))


_CLAUSE = re.compile(r"[.;!?]+(?:\s+|$)|:\s+|\n+")


def _clauses(row: Mapping[str, Any], *, request: bool) -> list[str]:
    """A note's clauses (its title, each sentence or clause of its other fields) and, with ``request``,
    those of its session's request: two words of a prompt in one clause are said of one thing, while two
    in different sentences ("the login form ..."; "... the password is not saved") are a coincidence."""
    fields = [str(row.get(f) or "") for f in ("title", "subtitle", "narrative", "facts", "concepts")]
    if request:
        fields.append(str(row.get("asked_text") or ""))
    return [clause for text in fields for clause in _CLAUSE.split(text) if clause.strip()]


def _names_code(row: Mapping[str, Any], names: list[str]) -> bool:
    """Whether a note, or the request of the session it was written in, names one of ``names`` as code:
    ``invoice_total`` as such, a call ``total()`` with its parenthesis (``total(`` ), not the words
    ``invoice`` and ``total`` in prose. A note on the crash a session was asked about is about the
    exception its request named, even when the note says it in other words."""
    text = _note_text(row) + " " + str(row.get("asked_text") or "")
    for name in names:
        bare = name[:-2] if name.endswith("()") else name
        after = r"\s*\(" if name.endswith("()") else r"(?![\w.])"
        if re.search(r"(?<![\w.])" + re.escape(bare) + after, text, re.IGNORECASE):
            return True
    return False


def file_recall(
    store: Store,
    project: str,
    path: str,
    settings: RecallSettings,
    *,
    session: str | None = None,
    cwd: str | None = None,
    lines: tuple[int, int] | None = None,
    given: Collection[str] = (),
) -> Recall:
    """The current notes tied to ``path`` (repository-relative): those citing the file, then those of a
    session that changed it, then those of a session that read it which name something the file defines or
    uses; decisions and bug causes first, newest first within each. ``lines``: the
    part of the file that was read (first and last line); a note about another part of it (its anchor's
    region, as recorded) waits for a read of that part. Only a whole read marks the file as offered."""
    given = _known(store, session, given) if session is not None else given
    if session is not None and _seen(store, session, FILE_GIVEN + path, given):
        return Recall("file", path, project, None, [], None, note="offered already in this session")
    rows = store.recall.notes_on_file(project, path, limit=FILE_CANDIDATES)
    if any(not r["cites"] and not r["changed"] for r in rows):
        names = names_in_file(path, cwd)
        rows = [r for r in rows if r["cites"] or r["changed"] or _names_one_of(r, names)]
    rows.sort(
        key=lambda r: (
            not r["cites"],
            not r["changed"],
            TYPE_ORDER.get(r["type"], 5),
            -r["created_at"],
            -r["id"],
        )
    )
    if lines is not None and rows:
        anchors = store.anchors.for_ids([r["id"] for r in rows])
        rows = [r for r in rows if _in_read(anchors.get(r["id"]), path, lines)]
    for row in rows:
        row["score"] = None
    found = _choose(store, "file", path, project, rows, settings, session=session, cwd=cwd, given=given)
    return found._replace(lines=lines)


class _Known(frozenset[str]):
    """Keys a session was given: those still in the spool and every recall key its capture log holds
    (``recorded``, oldest first), read at once: a key it lacks was not given."""

    recorded: list[str]


def _known(store: Store, session: str, given: Collection[str]) -> _Known:
    recorded = store.recall.recall_keys(session)
    known = _Known([*given, *recorded])
    known.recorded = recorded
    return known


def _seen(store: Store, session: str, key: str, given: Collection[str]) -> bool:
    """Whether the session was given ``key``: as its capture log says, or ``given`` (still in the spool)."""
    if isinstance(given, _Known):
        return key in given
    return key in given or store.capture_log.seen(session, key)


# What a file defines, its compound names, and a note's words: compiled on first use (by re's cache), as a
# prompt's recall needs none of them.
_DEFINED = r"\b(?:def|class|function|func|fn|struct|interface|type|(?i:create)\s+(?i:table)(?:\s+IF\s+NOT\s+EXISTS)?)\s+([A-Za-z_]\w{4,})"
_COMPOUND = r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b"
_WORDS = r"[A-Za-z_][A-Za-z0-9_]*"
FILE_BYTES = 256 * 1024  # of a file read for its names


def names_in_file(path: str, cwd: str | None) -> set[str]:
    """The names ``path`` defines or uses that say what it is about (functions, classes, tables it defines;
    compound identifiers like ``to_cents`` or ``isExpired``), lower-cased: a note of a session that only
    read the file is about it when it names one of them. Empty when the file cannot be read."""
    import os

    names: set[str] = set()
    top = os.path.abspath(cwd or ".")
    while True:  # the path is relative to the repository's top, which cwd is in
        full = os.path.join(top, path)
        if os.path.isfile(full) or top == os.path.dirname(top):
            break
        top = os.path.dirname(top)
    try:
        with open(full, "rb") as fh:
            text = fh.read(FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return names
    names.update(m.lower() for m in re.findall(_DEFINED, text))
    names.update(m.lower() for m in re.findall(_COMPOUND, text))
    return names


def _names_one_of(row: Mapping[str, Any], names: set[str]) -> bool:
    """Whether a note's title or narrative names one of ``names`` (a name of the file it was written near)."""
    text = f"{row.get('title') or ''} {row.get('narrative') or ''}"
    return bool(names) and any(w.lower() in names for w in re.findall(_WORDS, text))


def _in_read(anchor: Any, path: str, lines: tuple[int, int]) -> bool:
    """Whether what a note is about in ``path`` lies in the lines read (a note without a region there does)."""
    region = anchor.regions.get(path) if anchor is not None else None
    return region is None or (region.start <= lines[1] and region.end >= lines[0])


def _choose(
    store: Store,
    point: str,
    subject: str,
    project: str,
    rows: list[dict[str, Any]],
    settings: RecallSettings,
    *,
    session: str | None,
    cwd: str | None,
    given: Collection[str] = (),
) -> Recall:
    bar = settings.bar if point == "prompt" else None
    if not rows:  # the common case of a file read: nothing to weigh, nothing more to load
        return Recall(point, subject, project, bar, [], None)
    _replaced(store, rows)
    header = HEADER[point].format(path=subject)
    used = estimate_tokens(header)
    picks: list[Pick] = []
    chosen: list[dict[str, Any]] = []
    for row in rows:
        score = row.get("strength") if point == "prompt" else None
        why = "injected"
        if row.get("superseded_by") is not None:
            why = "replaced"
        elif bar is not None and (score or 0.0) < bar and row.get("words", 0) < 2:
            why = "below the bar"
        elif bar is not None and (score or 0.0) < STRONG * bar and row.get("words", 2) < 2:
            why = "one word of the prompt"
        elif bar is not None and (score or 0.0) < RELATIVE * (rows[0].get("strength") or 0.0):
            why = "far below the best"
        elif session is not None and _seen(store, session, GIVEN + row["uid"], given):
            why = "given already"
        elif len(chosen) >= settings.max_items:
            why = "over the item limit"
        picks.append(Pick(row["id"], row["uid"], row["type"], row["title"], row["created_at"],
                          int(row.get("tokens") or 0), score, why, ""))  # fmt: skip
        if why == "injected":
            chosen.append(row)
    if chosen:
        _freshness(store, chosen, cwd)  # for the few that are shown only
    lines: dict[int, str] = {}
    for row in chosen:
        text = line(row, fresh=point == "file")
        if used + estimate_tokens(text) > settings.max_tokens:
            continue
        used += estimate_tokens(text)
        lines[row["id"]] = text
    picks = [
        p._replace(
            why="over budget" if p.why == "injected" and p.id not in lines else p.why,
            line=lines.get(p.id) or line({**p._asdict(), "tokens": p.tokens}),
        )
        for p in picks
    ]
    return Recall(
        point, subject, project, bar, picks, "\n".join([header, *lines.values()]) if lines else None
    )


def _with_changed(store: Store, found: Recall, session: str, given: Collection[str] = ()) -> Recall:
    """``found`` followed by the memories whose cited files changed during the session (a ``FileChanged``
    hook re-checked them) that the session was not told of yet, with their marks."""
    if isinstance(given, _Known):
        uids = [key[len(CHANGED) :] for key in given.recorded if key.startswith(CHANGED)]
    else:
        uids = [key[len(CHANGED) :] for key in store.capture_log.keys_with_prefix(session, CHANGED)]
    uids = [uid for uid in uids if not _seen(store, session, TOLD + uid, given)]
    rows: list[dict[str, Any]] = (
        [{**row} for row in store.observations.by_uids(uids).values()] if uids else []
    )  # annotate adds fields
    if not rows:
        return found
    _freshness(store, rows, None)
    lines = [line(row) for row in rows[:MAX_CHANGED]]
    picks = [
        Pick(r["id"], r["uid"], r["type"], r["title"], r["created_at"], int(r.get("tokens") or 0), None,
             "changed", text)
        for r, text in zip(rows, lines, strict=False)
    ]  # fmt: skip
    text = "\n".join(filter(None, [found.text, CHANGED_HEADER, *lines]))
    return found._replace(picks=found.picks + picks, text=text)


MAX_CHANGED = 3


def _replaced(store: Store, rows: list[dict[str, Any]]) -> None:
    """Give the rows ``superseded_by`` and ``possibly_superseded_by``, as
    :func:`cmem_cli.services.truth.supersession.annotate` does for observations, in one read."""
    found = store.recall.replacements(r["id"] for r in rows)
    for row in rows:
        explicit, inferred = found.get(row["id"], (None, None))
        row["superseded_by"] = explicit
        row["possibly_superseded_by"] = inferred if explicit is None else None


def _freshness(store: Store, rows: list[dict[str, Any]], cwd: str | None) -> None:
    """Give the rows ``stale``, ``drifted``, ``behind`` and ``branch``
    (:func:`cmem_cli.services.truth.anchor_notes.annotate`), whose checks are loaded only when one of the
    rows is anchored: none of the others has any."""
    if store.recall.anchored([r["id"] for r in rows]):
        from cmem_cli.services.truth.anchor_notes import annotate

        annotate(store, rows, cwd=cwd)
        return
    for row in rows:
        row.update(stale=None, drifted=None, behind=None, branch=None)


def recheck(store: Store, project: str, path: str, session: str, *, cwd: str | None) -> list[int]:
    """A cited file changed (Claude Code's ``FileChanged``): check at once the current notes citing
    ``path``, and queue those it left stale or behind for the session's next prompt. Returns their ids."""
    rows = [r for r in store.recall.notes_on_file(project, path, limit=WATCHED) if r["cites"]]
    if not rows:
        return []
    from cmem_cli.services.truth.anchor_notes import annotate

    annotate(store, rows, cwd=cwd)
    log = store.capture_log
    changed = [r for r in rows if r.get("stale") or r.get("behind")]
    for row in changed:
        if not log.seen(session, TOLD + row["uid"]):
            log.mark(session, CHANGED + row["uid"])
    return [r["id"] for r in changed]


def watch_paths(store: Store, project: str, top: str) -> list[str]:
    """The files the project's newest current notes cite, as absolute paths under ``top`` (the work tree a
    session starts in) that exist: what a session start asks Claude Code to watch."""
    import os

    paths = [
        os.path.join(top, p) for p in store.recall.cited_paths(project, limit=WATCHED) if not os.path.isabs(p)
    ]
    return [p for p in paths if os.path.isfile(p)]


def mark_given(store: Store, session: str, recall: Recall) -> None:
    """Remember in the session's capture log what was injected (and, for a file, that it was offered), so
    no later prompt or read of the session repeats it. In the caller's transaction."""
    log = store.capture_log
    for key in recall.given_keys:
        log.mark(session, key)
