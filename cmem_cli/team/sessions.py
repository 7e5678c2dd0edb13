"""Sessions and prompts as they travel to and from the team database.

A session is one row per session id everywhere (the server's primary key, the store's unique column), so
two machines' versions of it are merged, never copied: its activity (``started_at`` the earliest,
``last_activity_at`` the latest, ``prompt_counter`` the highest) from both, its state (status and end,
label, goal, outcome, next steps) from the later change. When both machines changed it since it was last
shared, an end beats work that went on elsewhere (a session ended on one machine is ended; resuming it
later reopens it everywhere), and of two ends the later one stays.

A prompt is written once and never changes: it travels by uid, and a second push of it changes nothing.
Its running number is its session's on the machine that recorded it; one that arrives with a number
this machine gave another prompt of the session (both recorded prompts in it before they synced) takes
the next free number here, with a note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

ENDED = ("completed", "failed", "abandoned")
ACTIVITY = ("started_at", "last_activity_at", "prompt_counter")
STATE = ("status", "completed_at", "label", "goal", "outcome", "next_steps")
SESSION_COLUMNS = (
    "session_id", "agent", "project", "label", "status", "prompt_counter", "started_at", "completed_at",
    "last_activity_at", "goal", "outcome", "next_steps", "machine",
)  # fmt: skip
PROMPT_COLUMNS = (
    "uid", "session", "prompt_number", "text", "project", "agent", "created_at", "machine", "author",
)  # fmt: skip
_TEXTS = ("label", "goal", "outcome", "next_steps")


def session_out(row: Mapping[str, Any], machine: str) -> dict[str, Any]:
    """A stored session as the server's row."""
    out = {name: row.get(name) for name in SESSION_COLUMNS}
    out["machine"] = machine
    return out


def prompt_out(row: Mapping[str, Any], machine: str) -> dict[str, Any]:
    """A stored prompt as the server's row: the machine that wrote it (this one, when not recorded)."""
    out = {name: row.get(name) for name in PROMPT_COLUMNS}
    out["machine"] = row.get("machine") or machine
    return out


def merged(newer: Mapping[str, Any], older: Mapping[str, Any], *, concurrent: bool) -> dict[str, Any]:
    """One session from two versions of it. ``newer`` changed after ``older`` was shared (not
    ``concurrent``: its state stands), or both changed since (``concurrent``: an end beats going on,
    the later of two ends stays). Texts a version lacks come from the other; activity from both."""
    if concurrent:
        winner, loser = _later_state(newer, older)
    else:
        winner, loser = newer, older
    first = older if concurrent else newer  # who the session belongs to: as shared first, or as now
    out = {name: first.get(name) for name in ("session_id", "agent", "project")}
    out["machine"] = newer.get("machine")
    out["status"], out["completed_at"] = winner["status"], winner.get("completed_at")
    for name in _TEXTS:
        out[name] = winner.get(name) if winner.get(name) is not None else loser.get(name)
    out["started_at"] = min(newer["started_at"], older["started_at"])
    out["last_activity_at"] = max(newer["last_activity_at"], older["last_activity_at"])
    out["prompt_counter"] = max(newer.get("prompt_counter") or 0, older.get("prompt_counter") or 0)
    return out


def _later_state(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    a_ended, b_ended = a["status"] in ENDED, b["status"] in ENDED
    if a_ended != b_ended:
        return (a, b) if a_ended else (b, a)
    if a_ended:
        return (a, b) if (a.get("completed_at") or 0) >= (b.get("completed_at") or 0) else (b, a)
    return (a, b) if a["last_activity_at"] >= b["last_activity_at"] else (b, a)


def same_session(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal in everything that travels (which machine pushed it aside)."""
    return all(a.get(n) == b.get(n) for n in SESSION_COLUMNS if n != "machine")
