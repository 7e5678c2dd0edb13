"""What rows and full records show of their anchors: ``stale``, ``drifted``, ``behind`` and ``branch`` on every
row, the anchor's detail in `cmem get --json`, and the note `cmem get` puts above a memory that may not hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.core.timeutil import to_iso
from cmem_cli.services.anchor_check import BEHIND, CHANGED, DRIFTED, VANISHED, Checked, check, check_anchors
from cmem_cli.services.branches import is_observation
from cmem_cli.store.anchors import Anchor

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store


def annotate(
    store: Store,
    rows: list[dict[str, Any]],
    *,
    cwd: str | None = None,
    anchors: dict[int, Anchor] | None = None,
) -> list[dict[str, Any]]:
    """Give every row ``stale``, ``drifted``, ``behind`` and ``branch`` (None for rows that are not
    observations or not anchored)."""
    ids = [row["id"] for row in rows if is_observation(row)]
    anchors = store.anchors.for_ids(ids) if anchors is None else {i: anchors[i] for i in ids if i in anchors}
    checked = check_anchors(store, anchors, cwd=cwd)
    for row in rows:
        state = checked.get(row["id"]) if is_observation(row) else None
        row["stale"] = state.stale if state is not None else None
        row["drifted"] = state.drifted if state is not None else None
        row["behind"] = state.behind if state is not None else None
        row["branch"] = state.anchor.branch if state is not None else None
    return rows


def detail(state: Checked | None) -> dict[str, Any] | None:
    """What `cmem get --json` shows of an anchor: where, when, and each cited file's state."""
    if state is None:
        return None
    anchor = state.anchor
    files = None
    if state.files is not None:
        files = [
            {
                "path": f.path,
                "status": f.status,
                "file_changed": f.file_changed,
                "modified_at": to_iso(f.modified_at) if f.modified_at else None,
                **({"renamed_to": f.renamed_to} if f.renamed_to else {}),
                **_region_detail(anchor, f.path),
            }
            for f in state.files
        ]
    return {
        "repo": anchor.repo,
        "root": state.root,
        "branch": anchor.branch,
        "commit": anchor.commit,
        "anchored_at": to_iso(anchor.anchored_at),
        "verified_at": to_iso(anchor.verified_at),
        "present": state.root is not None,
        "files": files
        if files is not None
        else [
            {
                "path": p,
                "status": None,
                "file_changed": None,
                "modified_at": None,
                **_region_detail(anchor, p),
            }
            for p in anchor.files
        ],
    }


def _region_detail(anchor: Anchor, path: str) -> dict[str, Any]:
    """What `get --json` says of a file's region: the lines it was at and its enclosing definitions."""
    region = anchor.regions.get(path)
    if region is None:
        return {"region": None}
    return {"region": {"lines": f"{region.start}-{region.end}", "symbols": region.symbols}}


def anchor_fields(store: Store, obs_id: int, *, cwd: str | None = None) -> dict[str, Any]:
    """``stale``, ``drifted``, ``behind``, ``branch`` and ``anchor`` (where, when, each cited file's state) of one
    observation."""
    return anchors_fields(store, [obs_id], cwd=cwd)[obs_id]


def anchors_fields(store: Store, obs_ids: list[int], *, cwd: str | None = None) -> dict[int, dict[str, Any]]:
    """:func:`anchor_fields` of several observations, checked together."""
    checked = check(store, obs_ids, cwd=cwd)
    return {obs_id: _fields(checked.get(obs_id)) for obs_id in obs_ids}


def _fields(state: Checked | None) -> dict[str, Any]:
    if state is None:
        return {"stale": None, "drifted": None, "behind": None, "branch": None, "anchor": None}
    return {
        "stale": state.stale,
        "drifted": state.drifted,
        "behind": state.behind,
        "branch": state.anchor.branch,
        "anchor": detail(state),
    }


def stale_note(record: dict[str, Any]) -> str:
    """The line `cmem get` puts above a stale memory: which files changed or vanished, and since when."""
    anchor = record.get("anchor") or {}
    parts = []
    for entry in anchor.get("files") or []:
        if entry.get("status") == CHANGED:
            when = f" {_minute(entry['modified_at'])}" if entry.get("modified_at") else ""
            parts.append(f"{entry['path']} changed{when}")
        elif entry.get("status") == VANISHED:
            parts.append(f"{entry['path']} vanished")
        elif entry.get("status") == BEHIND:
            parts.append(f"{entry['path']}: this checkout lacks the commit")
    where = f" on {anchor['branch']}" if anchor.get("branch") else ""
    if anchor.get("commit"):
        where += f" at {anchor['commit'][:12]}"
    since = _minute(anchor.get("verified_at") or anchor.get("anchored_at"))
    verb = "verified" if anchor.get("verified_at") else "anchored"
    return (
        f"<!-- stale: {', '.join(parts)}; {verb} {since}{where}. "
        f"`cmem verify {record['id']}` once it holds for the files as they are now -->"
    )


def drifted_note(record: dict[str, Any]) -> str:
    """The line `cmem get` puts above a drifted memory: some of the lines it is about changed in these
    files (most still hold), and since when it was anchored."""
    anchor = record.get("anchor") or {}
    parts = []
    for entry in anchor.get("files") or []:
        if entry.get("status") == DRIFTED:
            when = f" {_minute(entry['modified_at'])}" if entry.get("modified_at") else ""
            parts.append(f"{entry['path']}{when}")
    since = _minute(anchor.get("verified_at") or anchor.get("anchored_at"))
    verb = "verified" if anchor.get("verified_at") else "anchored"
    return (
        f"<!-- drifted: some of the lines this memory is about changed in {', '.join(parts)}; {verb} {since}. "
        f"Check it, then `cmem verify {record['id']}` -->"
    )


def behind_note(record: dict[str, Any]) -> str:
    """The line `cmem get` puts above a memory this checkout is behind on (not stale: the clone lacks the
    commit it was recorded at, and what it is about)."""
    anchor = record.get("anchor") or {}
    paths = ", ".join(record.get("behind") or [])
    at = f" {anchor['commit'][:12]}" if anchor.get("commit") else ""
    branch = f" (on {anchor['branch']})" if anchor.get("branch") else ""
    return f"<!-- behind: this checkout lacks commit{at}{branch} that {paths} was recorded at; fetch or merge -->"


def _minute(stamp: str | None) -> str:
    """``2026-01-14T09:12:33.120Z`` -> ``2026-01-14 09:12`` (UTC)."""
    return f"{stamp[:10]} {stamp[11:16]}" if stamp else "?"
