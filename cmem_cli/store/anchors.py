"""The anchors table: for each observation, the git repository, branch, commit and blob hashes of the files
it cited, as they were when it was recorded (or last verified); and a stat cache of files' blob hashes.

Pure data access, in the caller's transaction; ``cmem_cli.services.anchors`` decides what to record and
what a row's anchors say now. Paths in an anchor are relative to the repository's top level, so an anchor
means the same on another machine whose clone lives elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from cmem_cli.core.db import Database

_BATCH = 500  # SQLite's variable limit is far above; batches keep each statement small


class Anchor(NamedTuple):
    """``repo`` names the repository on every machine (its origin's URL, normalised; None without a
    remote); ``root`` is its top-level folder on the machine that recorded it (None when the anchor came
    from another machine); ``files`` maps repository-relative paths to git blob ids."""

    repo: str | None
    root: str | None
    branch: str | None
    commit: str | None
    files: dict[str, str]
    anchored_at: int
    verified_at: int | None = None


class CachedBlob(NamedTuple):
    size: int
    mtime_ns: int
    blob: str
    seen_ns: int  # when the hash was taken: a file modified in the same instant may not show it (racy)


class AnchorStore:
    """Reads and writes ``observation_anchors`` and ``file_blobs`` on one database."""

    def __init__(self, db: Database):
        self.db = db

    def put(self, obs_id: int, anchor: Anchor) -> None:
        self.db.execute(
            "INSERT INTO observation_anchors (observation_id, repo, root, branch, commit_id, files, "
            "anchored_at, verified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (observation_id) DO UPDATE "
            "SET repo = excluded.repo, root = excluded.root, branch = excluded.branch, "
            "commit_id = excluded.commit_id, files = excluded.files, anchored_at = excluded.anchored_at, "
            "verified_at = excluded.verified_at",
            (
                obs_id,
                anchor.repo,
                anchor.root,
                anchor.branch,
                anchor.commit,
                json.dumps(anchor.files, ensure_ascii=False, sort_keys=True),
                anchor.anchored_at,
                anchor.verified_at,
            ),
        )

    def drop(self, obs_id: int) -> None:
        self.db.execute("DELETE FROM observation_anchors WHERE observation_id = ?", (obs_id,))

    def for_ids(self, obs_ids: Iterable[int]) -> dict[int, Anchor]:
        """The anchors of these observations (those that have one)."""
        ids = list(dict.fromkeys(obs_ids))
        found: dict[int, Anchor] = {}
        for start in range(0, len(ids), _BATCH):
            chunk = ids[start : start + _BATCH]
            marks = ", ".join("?" * len(chunk))
            for row in self.db.execute(
                "SELECT observation_id, repo, root, branch, commit_id, files, anchored_at, verified_at "
                f"FROM observation_anchors WHERE observation_id IN ({marks})",
                chunk,
            ):
                found[row[0]] = _anchor(row[1:])
        return found

    def with_files(self, project: str | None = None) -> dict[int, Anchor]:
        """Every anchor that cites files (of ``project``'s observations only, when given)."""
        sql = (
            "SELECT a.observation_id, a.repo, a.root, a.branch, a.commit_id, a.files, a.anchored_at, "
            "a.verified_at FROM observation_anchors a"
        )
        params: list[Any] = []
        if project is not None:
            sql += " JOIN observations o ON o.id = a.observation_id WHERE o.project = ? AND a.files != '{}'"
            params.append(project)
        else:
            sql += " WHERE a.files != '{}'"
        return {row[0]: _anchor(row[1:]) for row in self.db.execute(sql + " ORDER BY 1", params)}

    def roots(self, repos: Iterable[str]) -> dict[str, list[str]]:
        """For each repository name, the folders on this machine where anchors of it were recorded."""
        names = list(dict.fromkeys(repos))
        found: dict[str, list[str]] = {}
        if not names:
            return found
        marks = ", ".join("?" * len(names))
        for repo, root in self.db.execute(
            f"SELECT DISTINCT repo, root FROM observation_anchors WHERE root IS NOT NULL AND repo IN ({marks})",
            names,
        ):
            found.setdefault(repo, []).append(root)
        return found

    # -- the stat cache ---------------------------------------------------------------------------------
    def cached_blobs(self, paths: Iterable[str]) -> dict[str, CachedBlob]:
        wanted = list(dict.fromkeys(paths))
        found: dict[str, CachedBlob] = {}
        for start in range(0, len(wanted), _BATCH):
            chunk = wanted[start : start + _BATCH]
            marks = ", ".join("?" * len(chunk))
            for path, size, mtime_ns, blob, seen_ns in self.db.execute(
                f"SELECT path, size, mtime_ns, blob, seen_ns FROM file_blobs WHERE path IN ({marks})", chunk
            ):
                found[path] = CachedBlob(size, mtime_ns, blob, seen_ns)
        return found

    def cache_blobs(self, entries: dict[str, CachedBlob]) -> None:
        if entries:
            self.db.conn.executemany(
                "INSERT INTO file_blobs (path, size, mtime_ns, blob, seen_ns) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "blob = excluded.blob, seen_ns = excluded.seen_ns",
                [(path, *entry) for path, entry in entries.items()],
            )


def _anchor(values: tuple[Any, ...]) -> Anchor:
    repo, root, branch, commit, files, anchored_at, verified_at = values
    try:
        decoded = json.loads(files or "{}")
    except ValueError:
        decoded = {}
    if not isinstance(decoded, dict):
        decoded = {}
    return Anchor(
        repo, root, branch, commit, {str(k): str(v) for k, v in decoded.items()}, anchored_at, verified_at
    )
