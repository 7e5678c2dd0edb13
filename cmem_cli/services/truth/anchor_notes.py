"""What rows and full records show of their anchors: ``stale``, ``drifted``, ``behind`` and ``branch`` on every
row, the anchor's detail in `cmem get --json`, and the note `cmem get` puts above a memory that may not hold.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from cmem_cli.core.timeutil import to_iso
from cmem_cli.services.truth.anchor_check import (
    BEHIND,
    CHANGED,
    DRIFTED,
    VANISHED,
    Checked,
    check,
    check_anchors,
)
from cmem_cli.services.truth.branches import is_observation
from cmem_cli.store.anchors import Anchor

R = TypeVar(
    "R", bound=Mapping[str, Any]
)  # a search's hits, a window's items, recall's rows: given back as given

if TYPE_CHECKING:  # the shapes, for the type checker: at run time they are plain dicts (no class to make)
    from typing import NotRequired, TypedDict

    from cmem_cli.store.repository import Store

    class RegionDetail(TypedDict):
        """A cited file's region: the lines it was at (``12-30``) and its enclosing definitions."""

        lines: str
        symbols: list[str]

    class FileDetail(TypedDict):
        """One cited file in `get --json`: its state now (None where its repository is not here)."""

        path: str
        status: str | None
        file_changed: bool | None
        modified_at: str | None
        region: RegionDetail | None
        renamed_to: NotRequired[str]

    class AnchorDetail(TypedDict):
        """What `cmem get --json` shows of an anchor: where, when, and each cited file's state."""

        repo: str | None
        root: str | None
        branch: str | None
        commit: str | None
        anchored_at: str | None
        verified_at: str | None
        present: bool
        files: list[FileDetail]

    class AnchorFields(TypedDict):
        """The anchor's fields of a full record (``None`` each for a memory with no anchor)."""

        stale: list[str] | None
        drifted: list[str] | None
        behind: list[str] | None
        branch: str | None
        anchor: AnchorDetail | None


def annotate(
    store: Store,
    rows: list[R],
    *,
    cwd: str | None = None,
    anchors: dict[Any, Anchor] | None = None,
) -> list[R]:
    """Give every row ``stale``, ``drifted``, ``behind`` and ``branch`` (None for rows that are not
    observations or not anchored)."""
    ids = [row["id"] for row in rows if is_observation(row)]
    anchors = store.anchors.for_ids(ids) if anchors is None else {i: anchors[i] for i in ids if i in anchors}
    checked = check_anchors(store, anchors, cwd=cwd)
    for row in rows:
        state = checked.get(row["id"]) if is_observation(row) else None
        marked = cast("MutableMapping[str, Any]", row)  # a dict at run time
        marked["stale"] = state.stale if state is not None else None
        marked["drifted"] = state.drifted if state is not None else None
        marked["behind"] = state.behind if state is not None else None
        marked["branch"] = state.anchor.branch if state is not None else None
    return rows


def detail(state: Checked | None) -> AnchorDetail | None:
    """What `cmem get --json` shows of an anchor: where, when, and each cited file's state."""
    if state is None:
        return None
    anchor = state.anchor
    if state.files is not None:
        files = [
            _file_detail(anchor, f.path, f.status, f.file_changed, f.modified_at, f.renamed_to)
            for f in state.files
        ]
    else:
        files = [_file_detail(anchor, path, None, None, None, None) for path in anchor.files]
    return {
        "repo": anchor.repo,
        "root": state.root,
        "branch": anchor.branch,
        "commit": anchor.commit,
        "anchored_at": to_iso(anchor.anchored_at),
        "verified_at": to_iso(anchor.verified_at),
        "present": state.root is not None,
        "files": files,
    }


def _file_detail(
    anchor: Anchor,
    path: str,
    status: str | None,
    changed: bool | None,
    modified_at: int | None,
    renamed_to: str | None,
) -> FileDetail:
    """One cited file as `get --json` shows it, with its region (the lines it was at, its definitions)."""
    region = anchor.regions.get(path)
    where: RegionDetail | None = None
    if region is not None:
        where = {"lines": f"{region.start}-{region.end}", "symbols": region.symbols}
    modified = to_iso(modified_at) if modified_at else None
    if renamed_to:  # listed before the region, as `get --json` always showed it
        return {
            "path": path,
            "status": status,
            "file_changed": changed,
            "modified_at": modified,
            "renamed_to": renamed_to,
            "region": where,
        }
    return {"path": path, "status": status, "file_changed": changed, "modified_at": modified, "region": where}


def anchor_fields(store: Store, obs_id: int, *, cwd: str | None = None) -> AnchorFields:
    """``stale``, ``drifted``, ``behind``, ``branch`` and ``anchor`` (where, when, each cited file's state) of one
    observation."""
    return anchors_fields(store, [obs_id], cwd=cwd)[obs_id]


def anchors_fields(store: Store, obs_ids: list[int], *, cwd: str | None = None) -> dict[int, AnchorFields]:
    """:func:`anchor_fields` of several observations, checked together."""
    checked = check(store, obs_ids, cwd=cwd)
    return {obs_id: _fields(checked.get(obs_id)) for obs_id in obs_ids}


def _fields(state: Checked | None) -> AnchorFields:
    if state is None:
        return {"stale": None, "drifted": None, "behind": None, "branch": None, "anchor": None}
    return {
        "stale": state.stale,
        "drifted": state.drifted,
        "behind": state.behind,
        "branch": state.anchor.branch,
        "anchor": detail(state),
    }


def stale_note(record: Mapping[str, Any]) -> str:
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


def drifted_note(record: Mapping[str, Any]) -> str:
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


def behind_note(record: Mapping[str, Any]) -> str:
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
