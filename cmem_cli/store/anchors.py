"""The anchors table: for each observation, the git repository, branch, commit and blob hashes of the files
it cited, as they were when it was recorded (or last verified); a stat cache of files' blob hashes; and
git's answers about which commits a HEAD contains.

Pure data access, in the caller's transaction; the anchor services (``cmem_cli.services.truth.anchor_record``
and its neighbours) decide what to record and what a row's anchors say now. Paths in an anchor are relative to the repository's top level, so an anchor
means the same on another machine whose clone lives elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cmem_cli.core.batches import batches
from cmem_cli.core.db import Database
from cmem_cli.core.regions import Region

# Plain classes with slots, not named tuples: a search imports this module, and a named tuple costs ten
# times as much to create.


class Anchor:
    """``repo`` names the repository on every machine (its origin's URL, normalised; None without a
    remote); ``root`` is its top-level folder on the machine that recorded it (None when the anchor came
    from another machine); ``files`` maps repository-relative paths to git blob ids (``size:N:MTIME`` for a
    file too large to hash); ``regions`` maps some of those paths to what the memory is about in them."""

    __slots__ = ("repo", "root", "branch", "commit", "files", "anchored_at", "verified_at", "regions")

    def __init__(
        self,
        repo: str | None,
        root: str | None,
        branch: str | None,
        commit: str | None,
        files: dict[str, str],
        anchored_at: int,
        verified_at: int | None = None,
        regions: dict[str, Region] | None = None,
    ) -> None:
        self.repo, self.root, self.branch, self.commit = repo, root, branch, commit
        self.files, self.anchored_at, self.verified_at = files, anchored_at, verified_at
        self.regions: dict[str, Region] = regions or {}

    def __repr__(self) -> str:
        return f"Anchor({self.repo!r}, {self.root!r}, {self.branch!r}, {self.commit!r}, {self.files!r})"


class CachedBlob:
    """A file's blob id with the stat it was taken at; ``seen_ns``: when the hash was taken (a file
    modified in the same instant may not show it: racy)."""

    __slots__ = ("size", "mtime_ns", "blob", "seen_ns")

    def __init__(self, size: int, mtime_ns: int, blob: str, seen_ns: int) -> None:
        self.size, self.mtime_ns, self.blob, self.seen_ns = size, mtime_ns, blob, seen_ns


class Reach:
    """A cached answer of git: whether ``commit`` is reachable from a HEAD commit (``merged``; a commit
    the repository did not have counts as merged). ``packs_ns``: for a merged commit that was not a loose
    object when asked, the pack folder's time then (it may have been missing: the answer holds only while
    no pack and no loose object arrived); None when the answer is final."""

    __slots__ = ("merged", "packs_ns")

    def __init__(self, merged: bool, packs_ns: int | None) -> None:
        self.merged, self.packs_ns = merged, packs_ns


class AnchorStore:
    """Reads and writes ``observation_anchors`` and ``file_blobs`` on one database."""

    def __init__(self, db: Database):
        self.db = db

    def put(self, obs_id: int, anchor: Anchor) -> None:
        self.db.execute(
            "INSERT INTO observation_anchors (observation_id, repo, root, branch, commit_id, files, "
            "anchored_at, verified_at, regions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (observation_id) DO UPDATE "
            "SET repo = excluded.repo, root = excluded.root, branch = excluded.branch, "
            "commit_id = excluded.commit_id, files = excluded.files, anchored_at = excluded.anchored_at, "
            "verified_at = excluded.verified_at, regions = excluded.regions",
            (
                obs_id,
                anchor.repo,
                anchor.root,
                anchor.branch,
                anchor.commit,
                json.dumps(anchor.files, ensure_ascii=False, sort_keys=True),
                anchor.anchored_at,
                anchor.verified_at,
                regions_json(anchor.regions),
            ),
        )

    def drop(self, obs_id: int) -> None:
        self.db.execute("DELETE FROM observation_anchors WHERE observation_id = ?", (obs_id,))

    def for_ids(self, obs_ids: Iterable[int]) -> dict[int, Anchor]:
        """The anchors of these observations (those that have one)."""
        ids = list(dict.fromkeys(obs_ids))
        found: dict[int, Anchor] = {}
        for chunk, marks in batches(ids):
            for row in self.db.execute(
                "SELECT observation_id, repo, root, branch, commit_id, files, anchored_at, verified_at, "
                f"regions FROM observation_anchors WHERE observation_id IN ({marks})",
                chunk,
            ):
                found[row[0]] = _anchor(row[1:])
        return found

    def latest_blob(self, repo: str | None, root: str, path: str) -> str | None:
        """The blob id the newest anchor of repository ``repo`` (one without a remote: of the work tree at
        ``root``) recorded for ``path`` (relative to its top level), None when no memory cited it: what a
        file was when a memory last looked at it."""
        needle = json.dumps(path, ensure_ascii=False)
        which = "a.repo = ?" if repo is not None else "a.repo IS NULL AND a.root = ?"
        for (blob,) in self.db.execute(
            "SELECT j.value FROM observation_anchors a, json_each(a.files) j "
            f"WHERE {which} AND instr(a.files, ?) > 0 AND j.key = ? "
            "ORDER BY a.anchored_at DESC, a.observation_id DESC LIMIT 1",
            (repo if repo is not None else root, needle, path),
        ):
            return str(blob)
        return None

    def with_files(self, project: str | None = None) -> dict[int, Anchor]:
        """Every anchor that cites files (of ``project``'s observations only, when given)."""
        sql = (
            "SELECT a.observation_id, a.repo, a.root, a.branch, a.commit_id, a.files, a.anchored_at, "
            "a.verified_at, a.regions FROM observation_anchors a"
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
        for chunk, marks in batches(wanted):
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
                [(path, e.size, e.mtime_ns, e.blob, e.seen_ns) for path, e in entries.items()],
            )

    # -- reachability answers of git ---------------------------------------------------------------------
    def reach(self, git_dir: str, head: str, commits: Iterable[str]) -> dict[str, Reach]:
        """What git said about these commits and ``head`` in the work tree whose git folder is ``git_dir``."""
        wanted = list(dict.fromkeys(commits))
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        return {
            commit: Reach(bool(merged), packs_ns)
            for commit, merged, packs_ns in self.db.execute(
                f"SELECT commit_id, merged, packs_ns FROM git_reach WHERE git_dir = ? AND head = ? "
                f"AND commit_id IN ({marks})",
                [git_dir, head, *wanted],
            )
        }

    def remember_reach(self, git_dir: str, head: str, answers: dict[str, Reach]) -> None:
        """Keep these answers for ``head``; the work tree's answers for any other HEAD go (it moved on)."""
        self.db.execute("DELETE FROM git_reach WHERE git_dir = ? AND head != ?", (git_dir, head))
        self.db.conn.executemany(
            "INSERT INTO git_reach (git_dir, head, commit_id, merged, packs_ns) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (git_dir, head, commit_id) DO UPDATE SET merged = excluded.merged, "
            "packs_ns = excluded.packs_ns",
            [(git_dir, head, commit, int(r.merged), r.packs_ns) for commit, r in answers.items()],
        )

    # -- other answers of git (history, renames) -------------------------------------------------------
    def answers(self, git_dir: str, head: str, questions: Iterable[str]) -> dict[str, tuple[str, int | None]]:
        """What git answered these questions with HEAD at ``head`` (answer, and the pack folder's time for
        an answer a fetch may change)."""
        wanted = list(dict.fromkeys(questions))
        found: dict[str, tuple[str, int | None]] = {}
        for chunk, marks in batches(wanted):
            for question, answer, packs_ns in self.db.execute(
                f"SELECT question, answer, packs_ns FROM git_answers WHERE git_dir = ? AND head = ? "
                f"AND question IN ({marks})",
                [git_dir, head, *chunk],
            ):
                found[question] = (answer, packs_ns)
        return found

    def remember_answers(self, git_dir: str, head: str, answers: dict[str, tuple[str, int | None]]) -> None:
        """Keep these answers for ``head``; the work tree's answers for any other HEAD go."""
        self.db.execute("DELETE FROM git_answers WHERE git_dir = ? AND head != ?", (git_dir, head))
        self.db.conn.executemany(
            "INSERT INTO git_answers (git_dir, head, question, answer, packs_ns) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (git_dir, head, question) DO UPDATE SET answer = excluded.answer, "
            "packs_ns = excluded.packs_ns",
            [(git_dir, head, q, answer, packs) for q, (answer, packs) in answers.items()],
        )


def _anchor(values: tuple[Any, ...]) -> Anchor:
    repo, root, branch, commit, files, anchored_at, verified_at, regions = values
    decoded = _object(files)
    paths = {str(k): str(v) for k, v in decoded.items()}
    return Anchor(
        repo, root, branch, commit, paths, anchored_at, verified_at, parse_regions(_object(regions), paths)
    )


def _object(text: Any) -> dict[str, Any]:
    try:
        decoded = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def regions_json(regions: dict[str, Region]) -> str:
    return json.dumps({path: r.to_json() for path, r in sorted(regions.items())}, ensure_ascii=False)


def parse_regions(value: Any, files: dict[str, str]) -> dict[str, Region]:
    """The regions of anchored files a stored or synced anchor states; a malformed one is left out (its
    file falls back to the file-level rule), never trusted."""
    if not isinstance(value, dict):
        return {}
    found: dict[str, Region] = {}
    for path, raw in value.items():
        region = Region.from_json(raw) if path in files else None
        if region is not None:
            found[path] = region
    return found
