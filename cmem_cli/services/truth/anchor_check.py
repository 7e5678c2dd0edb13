"""Staleness: whether what an observation is about in its cited files still holds (docs/truth.md).

Checking stats only the files of the rows shown, hashes a file again only when its size or modification time
moved since cmem last hashed it (the ``file_blobs`` stat cache), and reads a changed file only when a region
must be looked up in it (``cmem_cli.core.regions``). Git is asked (and its answer kept per HEAD, table
``git_answers``) only when a changed file's memory may be behind (its commit not in HEAD's history), or a
vanished file may have been renamed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cmem_cli.core import worktree
from cmem_cli.core.regions import Region
from cmem_cli.services.truth.anchor_record import hash_file, locate
from cmem_cli.store.anchors import Anchor, CachedBlob

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store

# A file modified this close to when its hash was taken may have changed again within the same tick of the
# file system's clock without its size or time moving (git's "racily clean" entries): hash it again.
# A file modified this close to when its hash was taken may have changed again within the same tick of the
# file system's clock without its size or time moving (git's "racily clean" entries): hash it again.
RACY_NS = 100_000_000


UNCHANGED, DRIFTED, CHANGED, VANISHED, BEHIND = "unchanged", "drifted", "changed", "vanished", "behind"


class FileState:
    """A cited file now: ``path`` relative to the repository's top level; ``status`` unchanged (what the
    memory is about still holds), drifted (some of its lines changed, most hold), changed, vanished, or behind (the checkout lacks the commit the memory
    was recorded at, and what it is about); ``modified_at`` its modification time (ms) when the file
    changed; ``file_changed`` whether its blob differs at all; ``renamed_to`` where git says it went."""

    __slots__ = ("path", "status", "modified_at", "file_changed", "renamed_to")

    def __init__(
        self,
        path: str,
        status: str,
        modified_at: int | None,
        file_changed: bool | None = None,
        renamed_to: str | None = None,
    ) -> None:
        self.path, self.status, self.modified_at = path, status, modified_at
        self.file_changed = status != UNCHANGED if file_changed is None else file_changed
        self.renamed_to = renamed_to


class Checked:
    """An anchor as it stands now: ``root`` is where its repository is on this machine (None: not here),
    ``files`` the state of each cited file (None when the repository is not here)."""

    __slots__ = ("anchor", "root", "files")

    def __init__(self, anchor: Anchor, root: str | None, files: list[FileState] | None) -> None:
        self.anchor, self.root, self.files = anchor, root, files

    @property
    def stale(self) -> list[str] | None:
        """The cited files whose region (else the file) changed or vanished; None when nothing can be
        checked here."""
        if self.files is None or not self.anchor.files:
            return None
        return [f.path for f in self.files if f.status in (CHANGED, VANISHED)]

    @property
    def drifted(self) -> list[str] | None:
        """The cited files where some of the lines the memory is about changed, but most still hold (not
        stale: worth a look); None as ``stale``."""
        if self.files is None or not self.anchor.files:
            return None
        return [f.path for f in self.files if f.status == DRIFTED]

    @property
    def behind(self) -> list[str] | None:
        """The cited files this checkout is behind on (it lacks the memory's commit); None as ``stale``."""
        if self.files is None or not self.anchor.files:
            return None
        return [f.path for f in self.files if f.status == BEHIND]


def check(store: Store, obs_ids: Iterable[int], *, cwd: str | None = None) -> dict[int, Checked]:
    """The anchors of these observations as they stand now (observations without one are left out)."""
    return check_anchors(store, store.anchors.for_ids(obs_ids), cwd=cwd)


def check_anchors(store: Store, anchors: dict[int, Anchor], *, cwd: str | None = None) -> dict[int, Checked]:
    """Each anchor as it stands (see :class:`FileState`): a file whose blob is the same is unchanged; one
    that changed is unchanged while its region holds (:func:`cmem_cli.core.regions.holds`), else
    changed; without a region, any change counts. A changed or vanished file whose memory was recorded at
    a commit this checkout's HEAD does not contain is ``behind``; a vanished one that git says was renamed
    is looked at where it went."""
    if not anchors:
        return {}
    roots = locate(store, anchors.values(), cwd=cwd)
    wanted: dict[str, None] = {}
    seen: dict[str, str] = {}
    for anchor in anchors.values():
        root = roots.get((anchor.repo, anchor.root))
        if root is not None:
            for path in anchor.files:
                full = os.path.join(root, path)
                if full not in wanted and worktree.inside(full, root, seen):  # no link out of the tree
                    wanted[full] = None
    blobs, modified = current_blobs(store, list(wanted))
    views = _Views()
    out: dict[int, Checked] = {}
    doubtful = False
    for obs_id, anchor in anchors.items():
        root = roots.get((anchor.repo, anchor.root))
        if root is None:
            out[obs_id] = Checked(anchor, None, None)
            continue
        states = []
        for path, blob in anchor.files.items():
            full = os.path.join(root, path)
            now = blobs.get(full)
            if now == blob:
                states.append(FileState(path, UNCHANGED, None, False))
                continue
            if now is None:
                states.append(FileState(path, VANISHED, None, True))
            else:
                region = anchor.regions.get(path)
                status = views.standing(full, region) if region is not None else CHANGED
                states.append(FileState(path, status, modified.get(full), True))
            doubtful = doubtful or states[-1].status != UNCHANGED
        out[obs_id] = Checked(anchor, root, states)
    if doubtful:
        _second_look(store, out, views, blobs)
    return out


class _Views:
    """The files a check looked into, each read and its lines hashed once, and which names each defines
    (decoded and looked up once per file and name)."""

    __slots__ = ("files", "names")

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, set[int]] | None] = {}
        self.names: dict[str, tuple[str, dict[str, bool]]] = {}

    def standing(self, path: str, region: Region) -> str:
        """The file's state for this region: unchanged, drifted or changed."""
        from cmem_cli.core import regions as region_rules

        if path not in self.files:
            data = worktree.read_regular(path, worktree.MAX_CITED_BYTES, follow=False)
            text = data is not None and b"\0" not in data[:8192]
            self.files[path] = (data, region_rules.file_keys(data)) if data is not None and text else None
        view = self.files[path]
        if view is None:
            return CHANGED

        def names(wanted: list[str]) -> set[str]:
            if path not in self.names:
                self.names[path] = (view[0].decode("utf-8", "surrogateescape"), {})
            text, known = self.names[path]
            ask = [name for name in wanted if name not in known]
            if ask:
                found = region_rules.defined(text, ask)
                known.update({name: name in found for name in ask})
            return {name for name in wanted if known[name]}

        found = region_rules.standing(region, view[1], names)
        return {region_rules.INTACT: UNCHANGED, region_rules.DRIFTED: DRIFTED}.get(found, CHANGED)


def _second_look(store: Store, checked: dict[int, Checked], views: _Views, blobs: dict[str, str]) -> None:
    """For the files a check found changed or vanished: ``behind`` when the memory's commit is not in
    HEAD's history (the clone lacks it, or has it on a branch HEAD has not merged): the checkout lacks
    the change the memory describes, it is not out of date. A file that vanished where HEAD contains the
    commit is followed through git's renames. Git's answers are kept until HEAD moves."""
    by_root: dict[str, list[Checked]] = {}
    for state in checked.values():
        if (
            state.root is not None
            and state.anchor.commit
            and state.files
            and any(f.status != UNCHANGED for f in state.files)
        ):
            by_root.setdefault(state.root, []).append(state)
    for root, states in by_root.items():
        repo = worktree.find_repo(root)
        head = worktree.head(repo).commit if repo is not None else None
        if repo is None or head is None:
            continue
        commits = [s.anchor.commit for s in states if s.anchor.commit and s.anchor.commit != head]
        known = _history(store, repo, head, commits) if commits else {}
        gone: list[tuple[Checked, int]] = []
        for state in states:
            commit = state.anchor.commit or ""
            answer = "yes" if commit == head else known.get(commit)
            for index, file in enumerate(state.files or []):
                if file.status == UNCHANGED:
                    continue
                if answer in ("no", "missing"):
                    file.status = BEHIND
                elif answer == "yes" and file.status == VANISHED:
                    gone.append((state, index))
        # git's renames since the newest anchor of each vanished path: a path anchored at a later commit
        # still existed then, so what renamed it came after every older anchor of it too (one question
        # per path, not per memory)
        newest: dict[str, Anchor] = {}
        for state, index in gone:
            path = (state.files or [])[index].path
            if path not in newest or state.anchor.anchored_at > newest[path].anchored_at:
                newest[path] = state.anchor
        for state, index in gone:
            file = (state.files or [])[index]
            moved = _renamed(store, repo, head, newest[file.path].commit or "").get(file.path)
            if moved is not None:
                (state.files or [])[index] = _moved(state.anchor, file, root, moved, views)


def _moved(anchor: Anchor, file: FileState, root: str, moved: str, views: _Views) -> FileState:
    """A cited file git says was renamed to ``moved``: unchanged when it is the same blob, or its region
    is intact there; drifted when the region drifted there; else changed."""
    full = os.path.join(root, moved)
    if not worktree.inside(full, root):
        return file
    now = hash_file(full)
    if now is None:
        return file
    region = anchor.regions.get(file.path)
    if now.blob == anchor.files.get(file.path):
        return FileState(file.path, UNCHANGED, None, True, moved)
    status = views.standing(full, region) if region is not None else CHANGED
    modified = None if status == UNCHANGED else now.mtime_ns // 1_000_000
    return FileState(file.path, status, modified, True, moved)


def _history(store: Store, repo: worktree.Repo, head: str, commits: list[str]) -> dict[str, str]:
    """Whether HEAD commit ``head`` contains each commit (``yes``, ``no``, ``missing``), kept per HEAD; a
    ``missing`` answer holds only while no pack and no loose object arrived (a fetch may bring it)."""
    from cmem_cli.core import gitdiff

    anchors = store.anchors
    questions = {f"history:{c}": c for c in dict.fromkeys(commits)}
    kept = anchors.answers(repo.git_dir, head, questions)
    found: dict[str, str] = {}
    ask: list[str] = []
    packs: int | None = None
    for question, commit in questions.items():
        got = kept.get(question)
        if got is not None and got[1] is not None:
            packs = worktree.packs_stamp(repo) if packs is None else packs
            if got[1] != packs or worktree.stored_loose(repo, commit):
                got = None
        if got is None:
            ask.append(commit)
        else:
            found[commit] = got[0]
    if not ask:
        return found
    packs = worktree.packs_stamp(repo)
    answers = gitdiff.history(repo, head, ask)
    if answers is None:
        return found  # git cannot say: what a check cannot tell stays stale
    fresh = {f"history:{c}": (a, packs if a == "missing" else None) for c, a in answers.items()}
    store.write_if_free(lambda: anchors.remember_answers(repo.git_dir, head, fresh))
    return found | answers


def _renamed(store: Store, repo: worktree.Repo, head: str, commit: str) -> dict[str, str]:
    """Git's renames since ``commit`` (old path -> new), kept per HEAD and state of the index."""
    import json

    from cmem_cli.core import gitdiff

    try:
        index = os.stat(os.path.join(repo.git_dir, "index")).st_mtime_ns
    except OSError:
        index = 0
    question = f"renames:{commit}:{index}"
    anchors = store.anchors
    got = anchors.answers(repo.git_dir, head, [question]).get(question)
    if got is not None:
        try:
            value = json.loads(got[0])
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
        except ValueError:
            pass
    moved = gitdiff.renames(repo, commit)
    if moved is None:
        return {}
    answer: dict[str, tuple[str, int | None]] = {question: (json.dumps(moved), None)}
    store.write_if_free(lambda: anchors.remember_answers(repo.git_dir, head, answer))
    return moved


def current_blobs(store: Store, paths: list[str]) -> tuple[dict[str, str], dict[str, int]]:
    """Each existing file's blob id now (absent: it is gone or not a file) and its modification time (ms),
    hashing only files whose stat moved since the cache saw them; new hashes go to the cache when the
    database is free (a search never waits for a writer to save a hash)."""
    if not paths:
        return {}, {}
    anchors = store.anchors
    cached = anchors.cached_blobs(paths)
    blobs: dict[str, str] = {}
    modified: dict[str, int] = {}
    fresh: dict[str, CachedBlob] = {}
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        modified[path] = info.st_mtime_ns // 1_000_000
        entry = cached.get(path)
        if (
            entry is not None
            and entry.size == info.st_size
            and entry.mtime_ns == info.st_mtime_ns
            and info.st_mtime_ns + RACY_NS < entry.seen_ns
        ):
            blobs[path] = entry.blob
            continue
        found = hash_file(path)
        if found is not None:
            blobs[path] = found.blob
            fresh[path] = found
    if fresh:
        store.write_if_free(lambda: anchors.cache_blobs(fresh))
    return blobs, modified
