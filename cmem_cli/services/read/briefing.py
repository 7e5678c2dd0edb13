"""What an agent should see when a session starts: the last session's summary and next steps, the most useful
recent observations as a compact index, and how to drill down. Never over the token budget.

Tokens are estimated as in the rest of cmem (:func:`cmem_cli.core.text.estimate_tokens`, about four characters
per token) and the whole text, headings included, is counted, so the SessionStart hook cannot flood an
agent's context the way unbounded injection does.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.text import TYPE_ICONS, escape_control, estimate_tokens
from cmem_cli.core.timeutil import now_ms, to_date, to_iso
from cmem_cli.services.read.activity import fold
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypedDict

    from cmem_cli.services.read.briefing_types import (
        ActivityJson,
        ActivityLine,
        Briefed,
        BriefedJson,
        BriefingJson,
        LastSessionJson,
    )
    from cmem_cli.store.anchors import Anchor
    from cmem_cli.store.row_types import SessionOutcome, SummaryRow

    class LastSession(TypedDict):
        """The briefing's "Last session": the newest summary of another session, and how that session ended."""

        summary: SummaryRow | None
        session: SessionOutcome | None


DEFAULT_BUDGET = 1_500
CANDIDATES = 200  # recent observations considered; ranking picks the useful ones among them
SUMMARY_SHARE = 0.4  # at most this share of the budget goes to the last session's summary
REMINDER = (
    "Drill down: `cmem search QUERY` (index), `cmem timeline ID` (what happened around it), "
    "`cmem get ID` (full details)."
)

# What an agent gains from seeing a title at session start; hook-captured reads and searches are cheap to
# redo, decisions and bugfixes are expensive to rediscover.
TYPE_WEIGHT = {
    "decision": 3.0,
    "bugfix": 3.0,
    "feature": 2.5,
    "insight": 2.5,
    "refactor": 2.0,
    "error": 1.8,
    "question": 1.5,
    "change": 1.2,
    "discovery": 1.0,
}
LOW_VALUE_TOOLS = {"Read", "NotebookRead", "Grep", "Glob"}
HALF_LIFE_DAYS = 3.0
KEY_HEADING = "## Decisions, bugfixes and discoveries (id, date, type, title, ~tokens to `cmem get`)"
ACTIVITY_HEADING = "## What the agents did (folded by session; `cmem search --session ID` lists it)"
_SPACE = re.compile(r"\s+")


class SessionContext:
    """The context text and, for ``--json``, what went into it."""

    def __init__(self, project: str | None, budget: int):
        self.project = project
        self.budget = budget
        self.text = ""
        self.last_session: LastSessionJson | None = None
        self.observations: list[BriefedJson] = []
        self.activity: list[ActivityJson] = []
        # what a kept briefing is checked against (core.briefing_cache): the session whose summary or
        # outcome leads it, and the anchors its marks were read from
        self.pivot: str | None = None
        self.anchors: dict[int, Anchor] = {}

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def as_json(self) -> BriefingJson:
        return {
            "project": self.project,
            "budget": self.budget,
            "tokens": self.tokens,
            "last_session": self.last_session,
            "observations": self.observations,
            "activity": self.activity,
            "text": self.text,
        }


def _line(text: str | None, limit: int) -> str:
    """One printable line: whitespace collapsed, control characters escaped, clipped to ``limit`` chars."""
    flat = escape_control(_SPACE.sub(" ", text or "").strip())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def usefulness(row: Mapping[str, Any], now: int) -> float:
    """Type weight times a recency decay; tool-captured reads/searches count half.

    How often a memory was fetched (``retrieval_count``) is left out: nothing in bench/ shows it picks
    better lines, and a count that feeds the briefing that leads to fetches feeds itself."""
    weight = TYPE_WEIGHT.get(row.get("type") or "", 1.0)
    tools = set(row.get("tools_used") or [])
    if tools and tools <= LOW_VALUE_TOOLS:
        weight *= 0.5
    age_days = max(0.0, (now - int(row.get("created_at") or now)) / 86_400_000)
    recency = 0.5 ** (age_days / HALF_LIFE_DAYS)
    return float(weight * (0.25 + 0.75 * recency))


def _last_session(store: Store, project: str | None, exclude_session: str | None) -> LastSession | None:
    """The newest summary (and its session's next steps) from a session other than the current one (of the
    project or of its repository's older names)."""
    summaries = store.summaries.recent(project=project, limit=20)
    for name in store.projects.older_names(project) if project is not None else ():
        summaries.extend(store.summaries.recent(project=name, limit=20))
    summaries.sort(key=lambda row: (row["created_at"], row["id"]), reverse=True)
    for summary in summaries:
        if summary["session"] != exclude_session:
            return {"summary": summary, "session": store.briefing.session_outcome(summary["session"])}
    session = store.briefing.latest_outcome(project, besides=exclude_session)
    return {"summary": None, "session": session} if session else None


def _candidates(store: Store, project: str | None) -> list[Briefed]:
    """The newest observations of ``project``, only the columns ranking and the index need (narratives can be
    large; a SessionStart hook must not read 200 of them); a memory a newer one replaced is left out. The
    lines kept get what their anchors say and ``unmerged`` before they are shown."""
    return cast("list[Briefed]", store.briefing.current_observations(project, limit=CANDIDATES))


def _ranked(rows: list[Briefed], now: int) -> list[Briefed]:
    """One row per distinct title (the newest), most useful first."""
    seen: set[str] = set()
    distinct = []
    for row in rows:
        key = (row.get("title") or "").strip().lower()
        if key not in seen:
            seen.add(key)
            distinct.append(row)
    return sorted(distinct, key=lambda r: usefulness(r, now), reverse=True)


def _summary_lines(last: Mapping[str, Any], char_budget: int) -> list[str]:
    summary, session = last.get("summary") or {}, last.get("session") or {}
    when = summary.get("created_at") or session.get("last_activity_at")
    sid = summary.get("session") or session.get("session_id") or ""
    status = session.get("status")
    header = f"## Last session ({to_date(when) if when else 'unknown date'}, {_line(sid, 12)}"
    header += f", {status})" if status else ")"
    parts = [
        ("Request", summary.get("request")),
        ("Completed", summary.get("completed")),
        ("Learned", summary.get("learned")),
        ("Outcome", session.get("outcome")),
        ("Next steps", summary.get("next_steps") or session.get("next_steps")),
    ]
    present = [(label, value) for label, value in parts if value and str(value).strip()]
    if not present:
        return []
    lines = [header]
    room = max(0, char_budget - len(header) - 1)
    # Share the room among the fields, giving unused room of short fields to the next ones.
    for index, (label, value) in enumerate(present):
        share = room // (len(present) - index)
        line = f"- {label}: " + _line(str(value), max(0, share - len(label) - 5))
        if share < len(label) + 12:
            break
        lines.append(line)
        room -= len(line) + 1
    return lines if len(lines) > 1 else []


def _output(store: Store, obs_id: int) -> str:
    """What a captured command printed (its narrative): read for a session's last failed test run only."""
    row = store.observations.find(obs_id)
    return str(row.get("narrative") or "") if row else ""


def _activity_line(entry: Mapping[str, Any]) -> str:
    """``- 2026-11-25 4f1c2d3e: read 25 files under src/orders/ (#12..#40)``"""
    ids = entry["ids"]
    span = f"#{ids[0]}" if len(ids) == 1 else f"#{ids[0]}..#{ids[-1]}"
    who = f" {_line(entry['session'], 12)}" if entry.get("session") else ""
    return f"- {to_date(entry['last_at'])}{who}: {_line(entry['text'], 140)} ({span})"


def _activity_json(entry: ActivityLine) -> ActivityJson:
    out = {k: v for k, v in entry.items() if k not in ("first_at", "last_at")}
    out["first_at"], out["last_at"] = to_iso(entry["first_at"]), to_iso(entry["last_at"])
    return cast("ActivityJson", out)


def _observation_line(row: Mapping[str, Any]) -> str:
    icon = TYPE_ICONS.get(row.get("type") or "", "•")
    # what may no longer hold in the memory's files (docs/truth.md)
    stale = next((f" [{mark}]" for mark in ("stale", "behind", "drifted") if row.get(mark)), "")
    # recorded on a branch HEAD has not merged: it may not hold in this checkout (docs/truth.md, Branches)
    other = f" [branch {_line(row.get('branch'), 40)}, not merged]" if row.get("unmerged") else ""
    return (
        f"#{row['id']} {to_date(row['created_at'])} {icon} {_line(row.get('title'), 110)} "
        f"(~{int(row.get('tokens') or 0)}t){stale}{other}"
    )


def build_context(
    store: Store,
    project: str | None,
    *,
    budget: int = DEFAULT_BUDGET,
    exclude_session: str | None = None,
    now: int | None = None,
    reminder: str = REMINDER,
) -> SessionContext:
    """Assemble the context text for ``project`` (None: every project) within ``budget`` tokens (headings
    and reminder included).

    ``reminder`` is the closing how-to-drill-down line: the CLI's commands by default, tools for MCP."""
    now = now or now_ms()
    result = SessionContext(project=project, budget=budget)
    char_budget = budget * 4  # estimate_tokens(text) <= budget  <=>  len(text) <= 4 * budget
    title = (
        f"# cmem memory for {_line(project, 60)}" if project is not None else "# cmem memory, all projects"
    )

    lines: list[str] = []

    def used(extra: list[str]) -> int:
        return len("\n".join([*lines, *extra]))

    if used([title, reminder]) > char_budget:
        # Too small for anything useful: as much of the reminder as fits, never more than the budget.
        result.text = reminder[:char_budget]
        return result
    lines.append(title)

    last = _last_session(store, project, exclude_session)
    if last:
        led, outcome = last["summary"], last["session"]
        result.pivot = led["session"] if led else outcome["session_id"] if outcome else None
        share = int(char_budget * SUMMARY_SHARE)
        summary_lines = _summary_lines(last, min(share, char_budget - used([reminder]) - 1))
        if summary_lines:
            lines += summary_lines
            summary: Mapping[str, Any] = last.get("summary") or {}
            session: Mapping[str, Any] = last.get("session") or {}
            result.last_session = {
                "session": summary.get("session") or session.get("session_id"),
                "status": session.get("status"),
                "summary_id": summary.get("id"),
                "created_at": to_iso(summary.get("created_at") or session.get("last_activity_at")),
                "request": summary.get("request"),
                "completed": summary.get("completed"),
                "learned": summary.get("learned"),
                "outcome": session.get("outcome"),
                "next_steps": summary.get("next_steps") or session.get("next_steps"),
            }

    rows = _candidates(store, project)
    activity, singles = fold(rows, lambda obs_id: _output(store, obs_id))
    from cmem_cli.services.truth.anchor_notes import annotate
    from cmem_cli.services.truth.branches import unmerged

    result.anchors = store.anchors.for_ids([r["id"] for r in singles])
    annotate(store, singles, anchors=result.anchors)  # stale and branch, for the lines a session will read
    other = unmerged(store, [r["id"] for r in singles if r.get("branch")])
    for single in singles:
        single["unmerged"] = single["id"] in other
    # What was recorded on purpose (and plans) leads; what the hooks saw follows, folded.
    recorded = [r for r in singles if not r.get("tools_used") or r.get("type") == "decision"]
    captured = [r for r in singles if r.get("tools_used") and r.get("type") != "decision"]
    sections = (
        (KEY_HEADING, [(_observation_line(r), r, None) for r in _ranked(recorded, now)]),
        (ACTIVITY_HEADING, [(_activity_line(a), None, a) for a in activity]
         + [(_observation_line(r), r, None) for r in _ranked(captured, now)]),
    )  # fmt: skip
    chosen: list[Briefed] = []
    for heading, candidates in sections:
        texts: list[str] = []
        shown: list[tuple[str, Briefed]] = []  # observation lines, shown newest first
        folded: list[tuple[str, ActivityLine]] = []  # activity lines, shown first, newest session first
        for line, row, entry in candidates:
            if used([heading, *texts, line, reminder]) > char_budget:
                continue  # a shorter line further down may still fit
            texts.append(line)
            if row is not None:
                shown.append((line, row))
            elif entry is not None:
                folded.append((line, entry))
        if not texts:
            continue
        shown.sort(key=lambda item: (item[1]["created_at"], item[1]["id"]), reverse=True)
        lines.append(heading)
        lines += [line for line, _ in folded] + [line for line, _ in shown]
        chosen += [row for _, row in shown]
        result.activity += [_activity_json(entry) for _, entry in folded]
    if chosen:
        result.observations = [
            {
                "id": row["id"],
                "uid": row["uid"],
                "type": row["type"],
                "title": row["title"],
                "created_at": to_iso(row["created_at"]),
                "tokens": row.get("tokens"),
                "session": row.get("session"),
                "stale": row["stale"],
                "behind": row.get("behind"),
                "drifted": row.get("drifted"),
                "branch": row["branch"],
                "unmerged": row["unmerged"],
            }
            for row in chosen
        ]
    if not chosen and not result.activity and not result.last_session:
        lines.append(
            "No memories for this project yet. Record decisions, bugfixes and discoveries with "
            "`cmem add --type TYPE --title T --fact F`."
        )
        if used([reminder]) > char_budget:
            lines.pop()
    lines.append(reminder)
    result.text = "\n".join(lines)
    return result


def keep(store: Store, project: str, *, budget: int, top: str | None, db_path: str) -> dict[str, Any] | None:
    """The briefing of ``project`` as :mod:`cmem_cli.core.briefing_cache` keeps it, with the stamps it is
    checked against; None when the store, a cited file or git moved while it was built (or a cited file
    changed too recently to tell).

    Built twice: the first build names what the marks read (cited files, git facts); those are stamped;
    the second build reads them after their stamps, and is kept only if it read the same ones and the
    store did not move (the first may have cached file hashes in it)."""
    from cmem_cli.core import briefing_cache as cache

    first = _kept(store, project, budget=budget, top=top)
    stamp = cache.store_stamp(db_path)
    files = cache.files_stamp(first["paths"], first["present"])
    facts = [[root, kind, arg, cache.git_fact(root, kind, arg)] for root, kind, arg in first["facts"]]
    if stamp is None or files is None:
        return None
    second = _kept(store, project, budget=budget, top=top)
    if any(second[part] != first[part] for part in ("paths", "present", "facts")):
        return None
    if cache.store_stamp(db_path) != stamp or not cache.git_unchanged(facts):
        return None
    return {
        "store": stamp,
        "project": project,
        "text": second["text"],
        "pivot": second["pivot"],
        "watch": second["watch"],
        "files": files,
        "git": facts,
    }


def _kept(store: Store, project: str, *, budget: int, top: str | None) -> dict[str, Any]:
    """One build of the kept briefing: its text (no session excluded), the session it leads with
    (``pivot``: a session asking that is this one needs its own), the files a session in ``top`` may watch
    (their existence is checked when read), and what its marks read: ``paths`` (every cited file, git's
    index where a cited file is gone), whether what may appear is ``present`` (the loose objects of the
    anchors' commits, the ``.git`` of a work tree not found), and git ``facts``."""
    import os

    from cmem_cli.core import worktree
    from cmem_cli.services.read.recall import WATCHED
    from cmem_cli.services.truth.anchor_record import locate

    context = build_context(store, project, budget=budget)
    anchors = list(context.anchors.values())
    roots = locate(store, anchors)
    paths: dict[str, None] = {}
    present: dict[str, None] = {}
    facts: dict[tuple[str, str, str | None], None] = {}
    here = worktree.find_repo(os.getcwd())
    if here is not None:  # which branches HEAD has merged (the [branch ..., not merged] marks)
        facts[(here.root, "head", None)] = facts[(here.root, "remote", None)] = None
        for anchor in anchors:
            if anchor.branch is not None:
                facts[(here.root, "tip", anchor.branch)] = facts[(here.root, "fork", anchor.branch)] = None
    unplaced: list[str] = []
    for anchor in anchors:
        root = roots.get((anchor.repo, anchor.root))
        if root is None:  # not on this machine: where it would be found once it is
            if anchor.root:
                present[os.path.join(anchor.root, ".git")] = None
            if anchor.repo:
                unplaced.append(anchor.repo)
            continue
        facts[(root, "top", None)] = facts[(root, "head", None)] = facts[(root, "packs", None)] = None
        repo = worktree.find_repo(root)
        cited = [os.path.join(root, path) for path in anchor.files]
        paths.update(dict.fromkeys(cited))
        if repo is not None:
            if not all(os.path.lexists(path) for path in cited):  # git's renames, asked per index state
                paths[os.path.join(repo.git_dir, "index")] = None
            if anchor.commit:
                present[os.path.join(repo.common_dir, "objects", anchor.commit[:2], anchor.commit[2:])] = None
    for folders in store.anchors.roots(unplaced).values():
        for folder in folders:
            present[os.path.join(folder, ".git")] = None
    watch = None
    if top:
        watch = [os.path.join(top, p) for p in store.recall.cited_paths(project, limit=WATCHED)
                 if not os.path.isabs(p)]  # fmt: skip
    return {
        "text": context.text,
        "pivot": context.pivot,
        "watch": watch,
        "paths": list(paths),
        "present": list(present),
        "facts": [list(fact) for fact in facts],
    }
