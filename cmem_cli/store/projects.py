"""Which repository each project name stands for (table ``project_keys``, migration ``m011_project_keys``).

A project's rows keep a short name (``app``: what the export folder, `--project` and every listing show),
and this table ties the name to the repository's key (:mod:`cmem_cli.core.repo_identity`), so every worktree
and clone of one repository files under one name and two repositories called alike get two. A key has one
``main`` name, the one new work files under; other names of the same key (``main`` 0) are projects recorded
before projects were keyed by repository (a worktree's folder name), kept apart as they were and shown by
`cmem projects`.

``source`` says how a row was learnt: ``claimed`` (the first write from the repository), ``anchors`` (the
store migration read the repository off the project's anchored memories).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.repo_identity import RepoIdentity, identity_of_key, key_of_remote, repository_identity
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import ProjectActivity, ProjectKey

V10_PROJECT_KEYS = """
CREATE TABLE project_keys (
    name       TEXT PRIMARY KEY,
    key        TEXT NOT NULL,
    main       INTEGER NOT NULL DEFAULT 1,
    source     TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX project_keys_main ON project_keys (key) WHERE main = 1;
"""

_MAX_SUFFIX = 1000
# The rows of a project and of the older names of its repository (worktrees' folders recorded before projects
# were keyed by repository): ``{column} IN (...)`` with the name given twice.
FOLDED_SQL = (
    "IN (SELECT ? UNION ALL SELECT old.name FROM project_keys cur JOIN project_keys old "
    "ON old.key = cur.key AND old.main = 0 WHERE cur.name = ? AND cur.main = 1)"
)


def migrate(conn: Any) -> None:
    """Create the table and map each existing project that was named as cmem named projects before: its
    anchored memories all name one repository (their origin, or the work tree they were recorded in when
    it is still on this machine) and the project is called like that repository or like the folder of one
    of its work trees. A project whose memories name two repositories or none, or whose name someone chose
    (`--project`, ``$CMEM_PROJECT``), is left unmapped: the first repository of that name to write claims
    it. Several old names of one repository (its worktrees' folders) map to it; the one named like the
    repository, else the one with most memories, becomes its main name."""
    conn.execute(V10_PROJECT_KEYS)
    found: dict[str, set[str]] = {}
    plausible: set[tuple[str, str]] = set()
    for project, repo, root in conn.execute(
        "SELECT DISTINCT o.project, a.repo, a.root FROM observation_anchors a "
        "JOIN observations o ON o.id = a.observation_id WHERE a.repo IS NOT NULL OR a.root IS NOT NULL"
    ).fetchall():
        key = _anchor_key(repo, root) or ""
        found.setdefault(project, set()).add(key)
        identity = identity_of_key(key) if key else None
        if project in (identity.name if identity else None, os.path.basename(root or "")):
            plausible.add((project, key))
    counts = dict(conn.execute("SELECT project, count(*) FROM observations GROUP BY project").fetchall())
    by_key: dict[str, list[str]] = {}
    for project, keys in found.items():
        key = next(iter(keys))
        if len(keys) == 1 and (project, key) in plausible:
            by_key.setdefault(key, []).append(project)
    now = int(time.time() * 1000)
    for key, names in sorted(by_key.items()):
        identity = identity_of_key(key)
        short = identity.name if identity else ""
        names.sort(key=lambda n: (n != short, -counts.get(n, 0), n))
        for index, name in enumerate(names):
            conn.execute(
                "INSERT INTO project_keys (name, key, main, source, created_at) VALUES (?, ?, ?, 'anchors', ?)",
                (name, key, int(index == 0), now),
            )


def _anchor_key(repo: str | None, root: str | None) -> str | None:
    """The key of an anchor's repository: its remote's, else (no remote) the work tree's, read from this
    machine; None when the work tree is gone and nothing else names it."""
    if repo is not None:
        return key_of_remote(repo)
    if root is None:
        return None
    identity = repository_identity(root)
    return identity.key if identity is not None else None


class Projects(Repository):
    """Project names and the repositories they stand for (``store.projects``)."""

    def name_for(self, identity: RepoIdentity, *, claim: bool) -> str:
        """The project name of ``identity``'s repository: the one it already has, else its short name, or on a
        clash with another repository's name ``NAME-OWNER`` (then ``NAME-2``...). With ``claim`` a new name is
        recorded (a write, once per repository), so the next call from any worktree or clone finds it."""
        found = self._main_name(identity.key)
        if found is not None or not claim:
            return found or self._free_name(identity)
        with self._store.transaction():  # under the write lock: a concurrent claim of the same key is seen
            found = self._main_name(identity.key)
            if found is not None:
                return found
            name = self._free_name(identity)
            self.db.execute(
                "INSERT INTO project_keys (name, key, main, source, created_at) VALUES (?, ?, 1, 'claimed', ?)",
                (name, identity.key, int(time.time() * 1000)),
            )
            return name

    def _main_name(self, key: str) -> str | None:
        name = self.db.scalar("SELECT name FROM project_keys WHERE key = ? AND main = 1", (key,))
        return None if name is None else str(name)

    def _free_name(self, identity: RepoIdentity) -> str:
        candidates = [identity.name]
        if identity.owner:
            candidates.append(f"{identity.name}-{identity.owner}")
        candidates.extend(f"{identity.name}-{n}" for n in range(2, _MAX_SUFFIX))
        for name in candidates:
            if self.db.scalar("SELECT 1 FROM project_keys WHERE name = ?", (name,)) is None:
                return name
        return identity.key  # a thousand repositories of one name: the key itself is unique

    def older_names(self, name: str) -> tuple[str, ...]:
        """The names ``name``'s repository went by before projects were keyed by repository (``main`` 0
        rows of its key), when ``name`` is the repository's current name; a read of the project covers them
        too."""
        rows = self.db.query(
            "SELECT old.name AS name FROM project_keys cur JOIN project_keys old ON old.key = cur.key "
            "AND old.main = 0 WHERE cur.name = ? AND cur.main = 1 ORDER BY old.name",
            (name,),
        )
        return tuple(str(row["name"]) for row in rows)

    def mapping(self) -> dict[str, ProjectKey]:
        """Every mapped name: its repository ``key``, whether it is the key's ``main`` name, and ``source``."""
        return {
            row["name"]: {"key": row["key"], "main": bool(row["main"]), "source": row["source"]}
            for row in self.db.query("SELECT name, key, main, source FROM project_keys ORDER BY name")
        }

    def activity(self) -> list[ProjectActivity]:
        """Each project with observations: its name, how many, and the time of the latest; most recent first."""
        rows = self.db.query(
            "SELECT project, count(*) AS observations, max(created_at) AS last FROM observations "
            "GROUP BY project ORDER BY last DESC, project"
        )
        return cast("list[ProjectActivity]", rows)
