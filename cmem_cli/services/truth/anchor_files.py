"""A code anchor in an observation's file: what the front matter states (the repository by name, never a folder
of this machine), read back with distrust, and taken when a file comes in (git sync, team sync, adoption).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cmem_cli.core import worktree
from cmem_cli.core.timeutil import to_iso
from cmem_cli.store.anchors import Anchor as Anchor  # the team names it from here
from cmem_cli.store.anchors import parse_regions

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store


def exported(anchor: Anchor | None, scrub: Callable[[str], str | None]) -> dict[str, Any] | None:
    """What an observation's file says of its anchor, so that another machine with a clone of the same
    repository (wherever it lives) can check it: the repository by its name on every machine (``repo``,
    its origin's URL without credentials), ``branch``, ``commit``, repository-relative paths to blob ids,
    and when. Never the folder it lives in here. None without an anchor or a name for its repository (a
    repository without a remote is known only where it is). ``scrub``: the privacy filter, for the
    names read from git's files."""
    if anchor is None or not anchor.repo:
        return None
    out: dict[str, Any] = {"repo": scrub(anchor.repo)}
    if anchor.branch is not None:
        out["branch"] = scrub(anchor.branch)
    if anchor.commit is not None:
        out["commit"] = anchor.commit
    out["files"] = {path: blob for path, blob in sorted(anchor.files.items()) if worktree.is_commit_id(blob)}
    regions = {path: r.to_json() for path, r in sorted(anchor.regions.items()) if path in out["files"]}
    if regions:
        out["regions"] = regions
    out["anchored_at"] = to_iso(anchor.anchored_at)
    if anchor.verified_at is not None:
        out["verified_at"] = to_iso(anchor.verified_at)
    return out


def from_exported(meta: Any) -> Anchor | None:
    """The anchor a file's front matter states, None when it states none or one that cannot be trusted
    (a path out of the repository, a malformed id or time): such a value is ignored, never followed."""
    if not isinstance(meta, dict):
        return None
    repo, branch, commit, files = meta.get("repo"), meta.get("branch"), meta.get("commit"), meta.get("files")
    if not isinstance(repo, str) or not repo or not isinstance(files, dict):
        return None
    if branch is not None and (not isinstance(branch, str) or not branch):
        return None
    if commit is not None and not (isinstance(commit, str) and worktree.is_commit_id(commit)):
        return None
    for path, blob in files.items():
        if not isinstance(path, str):
            return None
        parts = path.split("/")
        if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
            return None
        if not (isinstance(blob, str) and worktree.is_commit_id(blob)):
            return None
    anchored, verified = _stamp(meta.get("anchored_at")), _stamp(meta.get("verified_at"))
    if anchored is None or (verified is None and meta.get("verified_at") is not None):
        return None
    paths = {str(k): str(v) for k, v in files.items()}
    regions = parse_regions(meta.get("regions"), paths)
    return Anchor(repo, None, branch, commit, paths, anchored, verified, regions)


def _stamp(value: Any) -> int | None:
    """An ISO time from front matter (a YAML reader may have made it a datetime) in epoch ms, else None."""
    from datetime import UTC, datetime

    from cmem_cli.core.errors import CmemError
    from cmem_cli.core.timeutil import parse_iso

    if isinstance(value, datetime):
        return int((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp() * 1000)
    if not isinstance(value, str):
        return None
    try:
        return parse_iso(value)
    except CmemError:
        return None


def adopt_anchor(store: Store, obs_id: int, meta: Any, scrub: Callable[[str], str | None]) -> None:
    """Take the anchor an adopted file states (another machine's, or a verify made there) unless it is
    the one this store holds. The folder the repository lives in here is kept when it is the same
    repository; an anchor from elsewhere has none until a check finds a clone here by its name."""
    anchor = from_exported(meta)
    if anchor is None:
        return
    anchors = store.anchors
    local = anchors.for_ids([obs_id]).get(obs_id)
    if local is not None and exported(local, scrub) == exported(anchor, scrub):
        return
    root = local.root if local is not None and local.repo == anchor.repo else None
    anchors.put(
        obs_id,
        Anchor(
            anchor.repo,
            root,
            anchor.branch,
            anchor.commit,
            anchor.files,
            anchor.anchored_at,
            anchor.verified_at,
            anchor.regions,
        ),
    )
