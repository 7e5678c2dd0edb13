"""What the hooks captured, folded: one line for a session's file reads, one for its searches, one for its
edits, instead of a line per call.

An agent that read 25 files leaves 25 observations ("Read src/orders/a.ts", ...). They are worth keeping
(search finds which session touched a file) but not worth 25 lines of the briefing a new session reads:
"read 25 files under src/orders/" says the same in one. Calls that failed stay single (an error is news),
and so does anything an agent or a person recorded on purpose.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Any

# Which hook-captured tool calls fold, and into what.
FOLDS = {
    "Read": "read",
    "NotebookRead": "read",
    "Grep": "search",
    "Glob": "search",
    "WebSearch": "search",
    "WebFetch": "search",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
}
MIN_FOLD = 2  # a single read stays one line of its own
SHOWN_QUERIES = 4
_QUOTED = re.compile(r"`([^`]+)`|'([^']+)'|\"([^\"]+)\"")


def fold_kind(row: dict[str, Any]) -> str | None:
    """``read``, ``search`` or ``edit`` for a hook-captured call that folds; None for anything else
    (recorded on purpose, a failed call, a command)."""
    tools = row.get("tools_used") or []
    if len(tools) != 1 or row.get("type") == "error":
        return None
    return FOLDS.get(tools[0])


def fold(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``rows`` (newest first) split into folded lines, one per session and kind with at least
    ``MIN_FOLD`` calls (newest session first), and the rows left single."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        kind = fold_kind(row)
        if kind is not None:
            groups.setdefault((row.get("session") or "", kind), []).append(row)
    folded_ids: set[int] = set()
    lines: list[dict[str, Any]] = []
    for (session, kind), members in groups.items():
        if len(members) < MIN_FOLD:
            continue
        folded_ids.update(r["id"] for r in members)
        lines.append(_line(session, kind, members))
    lines.sort(key=lambda line: line["last_at"], reverse=True)
    return lines, [r for r in rows if r["id"] not in folded_ids]


def _line(session: str, kind: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    ids = sorted(r["id"] for r in members)
    entry: dict[str, Any] = {"session": session or None, "kind": kind, "count": len(members), "ids": ids,
                             "first_at": min(r["created_at"] for r in members),
                             "last_at": max(r["created_at"] for r in members)}  # fmt: skip
    if kind == "search":
        queries = list(dict.fromkeys(_query(r.get("title") or "") for r in reversed(members)))
        entry["queries"] = queries
        shown = ", ".join(f"`{q}`" for q in queries[:SHOWN_QUERIES])
        more = f" and {len(queries) - SHOWN_QUERIES} more" if len(queries) > SHOWN_QUERIES else ""
        entry["text"] = f"searched {len(members)} times: {shown}{more}"
    else:
        field = "files_read" if kind == "read" else "files_modified"
        files = list(dict.fromkeys(f for r in members for f in r.get(field) or []))
        entry["files"] = len(files)
        verb = "read" if kind == "read" else "edited"
        count = len(files) or len(members)
        entry["text"] = f"{verb} {count} file{'s' if count != 1 else ''} {where(files)}".rstrip()
    return entry


def where(files: Sequence[str]) -> str:
    """``under src/orders/`` for files sharing a folder; else their first folders (``in src/, tests/``)."""
    folders = [posixpath.dirname(f.replace("\\", "/")) for f in files]
    if not folders:
        return ""
    try:
        common = posixpath.commonpath(folders)
    except ValueError:  # absolute and relative paths mixed
        common = ""
    if common and common != "/":
        return f"under {common.rstrip('/')}/"
    tops = list(dict.fromkeys((f.strip("/").split("/")[0] or ".") + "/" for f in folders if f))
    if not tops:
        return ""
    return "in " + ", ".join(tops[:3]) + (", ..." if len(tops) > 3 else "")


def _query(title: str) -> str:
    """What a search looked for: the quoted part of its title ("Searched code for `round(`")."""
    match = _QUOTED.search(title)
    text = next((g for g in match.groups() if g), "") if match else title
    return " ".join(text.split())[:60]
