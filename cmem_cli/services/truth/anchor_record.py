"""Recording code anchors: which files an observation cited, what it is about in them (its region), and the
branch and commit it was made on (docs/truth.md). Checking them is :mod:`.anchor_check`.

Recording reads the work tree's own files (``cmem_cli.core.worktree``, bounded and non-blocking): one hash per
cited file, and for ``--modified`` files one or two ``git diff`` processes (``cmem_cli.core.gitdiff``; hooks
never run git).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cmem_cli.core import worktree
from cmem_cli.core.regions import Region
from cmem_cli.core.timeutil import now_ms, to_iso
from cmem_cli.store.anchors import Anchor, CachedBlob

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NotRequired, TypedDict

    from cmem_cli.services.write.home import WriteHome
    from cmem_cli.store.repository import Store

    class Verified(TypedDict):
        """What `cmem verify` says of one observation: verified (its files, branch and time), or why not."""

        id: int
        verified: bool
        files: NotRequired[list[str]]
        branch: NotRequired[str | None]
        verified_at: NotRequired[str | None]
        reason: NotRequired[str]


def cited_files(record: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys([*(record.get("files_read") or []), *(record.get("files_modified") or [])]))


class Hints:
    """What a caller knows of what a memory is about in its files, by cited path (as given): ``spans``,
    line ranges someone cited (``path:12-30``, ``--lines``); ``written``, the text a tool call wrote
    (a hook's Edit or Write); ``modified``, files the memory says were modified (their change, as git
    sees it, is the region). ``diffs`` keeps git's answers across the records of one import."""

    __slots__ = ("spans", "written", "modified", "diffs", "previous")

    def __init__(
        self,
        spans: dict[str, tuple[int, int]] | None = None,
        written: dict[str, str] | None = None,
        modified: Iterable[str] = (),
    ) -> None:
        self.spans = spans or {}
        self.written = written or {}
        self.modified = set(modified)
        self.diffs: dict[tuple[str, str], list[tuple[int, int]] | None] = {}
        # (repository name, top level, path) -> the blob the newest earlier anchor recorded for it
        self.previous: Callable[[str | None, str, str], str | None] | None = None

    @classmethod
    def of(
        cls,
        record: Mapping[str, Any],
        written: dict[str, str] | None = None,
        diffs: dict[tuple[str, str], list[tuple[int, int]] | None] | None = None,
    ) -> Hints:
        """The hints a prepared record carries (its cited ranges and modified files), plus ``written``
        (given, even empty, by a caller that must not wait for git: a hook; its modified files are then
        anchored by what it wrote alone); ``diffs``: git's answers shared by the records of one import."""
        modified = record.get("files_modified") or () if written is None else ()
        hints = cls(record.get("_spans"), written, modified)
        if diffs is not None:
            hints.diffs = diffs
        return hints

    def __bool__(self) -> bool:
        return bool(self.spans or self.written or self.modified)


def record_anchor(
    store: Store,
    obs_id: int,
    paths: Sequence[str],
    cwd: str,
    *,
    verified: bool = False,
    keep: Anchor | None = None,
    repos: dict[str, worktree.Repo | None] | None = None,
    hints: Hints | None = None,
) -> Anchor | None:
    """Anchor observation ``obs_id`` to ``paths`` (see :func:`make_anchor`), inside the caller's
    transaction. Outside any repository the observation gets no anchor (an earlier one is dropped, unless
    ``verified``: a verify changes nothing it cannot anchor)."""
    anchors = store.anchors
    if hints is not None and hints.modified and hints.previous is None:
        hints.previous = anchors.latest_blob
    anchor, fresh = make_anchor(paths, cwd, verified=verified, keep=keep, repos=repos, hints=hints)
    if anchor is None:
        if not verified:
            anchors.drop(obs_id)
        return None
    anchors.put(obs_id, anchor)
    anchors.cache_blobs(fresh)
    return anchor


def make_anchor(
    paths: Sequence[str],
    cwd: str,
    *,
    verified: bool = False,
    keep: Anchor | None = None,
    repos: dict[str, worktree.Repo | None] | None = None,
    hints: Hints | None = None,
) -> tuple[Anchor | None, dict[str, CachedBlob]]:
    """The anchor of ``paths`` (resolved against ``cwd``) in the repository that holds the first of them
    (else the one ``cwd`` lies in), with the hashes taken (for the stat cache); (None, {}) outside any
    repository. Files outside that repository (a symbolic link to a folder elsewhere included), or that
    are not files, are not anchored. ``verified`` records the time as a verification; ``keep``: the
    anchor whose branch and commit stay (its regions keep the lines still in the files). ``repos``
    remembers each folder's work tree across calls (a bulk import looks each folder up once); ``hints``
    say what the memory is about in its files (:class:`Hints`): those files get a region."""
    absolute = [os.path.abspath(os.path.join(cwd, os.path.expanduser(p))) for p in paths]
    repo = None
    seen_dirs: dict[str, worktree.Repo | None] = {} if repos is None else repos
    real: dict[str, str] = {}
    for folder in [*(os.path.dirname(path) for path in absolute), os.path.abspath(cwd)]:
        if folder not in seen_dirs:
            seen_dirs[folder] = _repo_of(folder, seen_dirs)
        repo = seen_dirs[folder]
        if repo is not None:
            break
    if repo is None:
        return None, {}
    files: dict[str, str] = {}
    fresh: dict[str, CachedBlob] = {}
    texts: dict[str, bytes | None] = {}
    given: dict[str, str] = {}
    top = repo.root.rstrip(os.sep) + os.sep
    for path, name in zip(absolute, paths, strict=True):
        if not path.startswith(top) or not worktree.inside(path, repo.root, real):
            continue
        found, data = _read_hash(path)
        if found is not None:
            key = os.path.relpath(path, repo.root).replace(os.sep, "/")
            files[key] = found.blob
            fresh[path] = found
            texts[key] = data
            given.setdefault(key, name)
    head = worktree.head(repo)
    regions: dict[str, Region] = {}
    if keep is not None and keep.regions:
        regions = _still_held(keep.regions, texts)
    elif hints:
        regions = _regions(repo, head.commit, hints, given, texts, files)
    now = now_ms()
    anchor = Anchor(
        repo=worktree.remote_key(repo),
        root=repo.root,
        branch=keep.branch if keep else head.branch,
        commit=keep.commit if keep else head.commit,
        files=files,
        anchored_at=now,
        verified_at=now if verified else None,
        regions=regions,
    )
    return anchor, fresh


def _regions(
    repo: worktree.Repo,
    head: str | None,
    hints: Hints,
    given: dict[str, str],
    texts: dict[str, bytes | None],
    blobs: dict[str, str],
) -> dict[str, Region]:
    """Each hinted file's region: a cited range, else the text written, else (a modified file) the lines
    its uncommitted change touched, else, when it has none, the lines the HEAD commit changed in it (a
    memory written just after a commit), else the lines that differ from what the file was when a memory
    last anchored it (committed since, in an earlier commit). A file with none of these has no region
    (the file-level rule)."""
    from cmem_cli.core import regions as region_rules

    lines: dict[str, list[str]] = {}
    for key, data in texts.items():
        if data is not None and (text := region_rules.text_lines(data)) is not None:
            lines[key] = text
    found: dict[str, Region] = {}
    by_diff: list[str] = []
    for key, name in given.items():
        if key not in lines:
            continue
        region = None
        if name in hints.spans:
            first, last = hints.spans[name]
            region = region_rules.region_of(lines[key], range(first, last + 1))
        elif name in hints.written:
            region = region_rules.written_region(lines[key], hints.written[name])
        elif name in hints.modified:
            by_diff.append(key)
        if region is not None:
            found[key] = region
    if by_diff:
        changes = _changes(repo, head, by_diff, hints.diffs)
        if hints.previous is not None:
            changes.update(_since_previous(repo, [k for k in by_diff if k not in changes], blobs, hints))
        for key, hunks in changes.items():
            region = region_rules.region_of(lines[key], region_rules.hunk_lines(lines[key], hunks))
            if region is not None:
                found[key] = region
    return found


def _changes(
    repo: worktree.Repo,
    head: str | None,
    keys: list[str],
    known: dict[tuple[str, str], list[tuple[int, int]] | None],
) -> dict[str, list[tuple[int, int]]]:
    """The hunks of each file's uncommitted change, else of the HEAD commit's change to it: two git
    processes at most (none for files an earlier record of the same import asked about)."""
    from cmem_cli.core import gitdiff

    ask = [key for key in keys if (repo.root, key) not in known]
    if ask and head is not None:
        work = gitdiff.worktree_hunks(repo, ask) or {}
        clean = [key for key in ask if not work.get(key)]
        committed = (gitdiff.commit_hunks(repo, head, clean) or {}) if clean else {}
        for key in ask:
            known[(repo.root, key)] = work.get(key) or committed.get(key) or None
    return {key: hunks for key in keys if (hunks := known.get((repo.root, key)))}


def _since_previous(
    repo: worktree.Repo, keys: list[str], blobs: dict[str, str], hints: Hints
) -> dict[str, list[tuple[int, int]]]:
    """For committed, clean files the HEAD commit did not touch: the hunks since the blob the newest earlier
    anchor of the same repository recorded (one git process a file that has one, and only when git holds
    that blob: an earlier anchor of an uncommitted state has none)."""
    from cmem_cli.core import gitdiff

    if hints.previous is None:
        return {}
    name = worktree.remote_key(repo)
    found: dict[str, list[tuple[int, int]]] = {}
    for key in keys:
        old, new = hints.previous(name, repo.root, key), blobs.get(key)
        if old is None or new is None or old == new:
            continue
        hunks = gitdiff.blob_hunks(repo, old, new)
        if hunks:
            found[key] = hunks
    return found


def _still_held(regions: dict[str, Region], texts: dict[str, bytes | None]) -> dict[str, Region]:
    """A verify says the memory holds for its files as they are now: each region keeps the lines and
    definitions still in its file (none left: the file is anchored as a whole)."""
    from cmem_cli.core import regions as region_rules

    kept: dict[str, Region] = {}
    for key, region in regions.items():
        data = texts.get(key)
        lines = region_rules.text_lines(data) if data is not None else None
        if lines is None:
            continue
        present = region_rules.file_keys(data or b"")
        keys = [k for k in region.lines if int(k, 16) in present]
        if keys:
            defined = region_rules.defined((data or b"").decode("utf-8", "surrogateescape"), region.symbols)
            symbols = [name for name in region.symbols if name in defined]
            kept[key] = Region(keys, symbols, region.start, region.end)
    return kept


def reanchor_edit(store: Store, obs_id: int, before: Sequence[str], after: Sequence[str], cwd: str) -> None:
    """An edit changed the files an observation cites (``before`` -> ``after``): anchor the files it now
    cites that it did not (hashed as they are now, paths resolved against ``cwd``), drop those it no
    longer cites, and leave the others as they were anchored, so a file that changed since the memory was
    made stays stale. Its branch and commit stay. A memory never anchored is anchored as `cmem add` would
    anchor it; one whose repository is not on this machine only loses the files it no longer cites."""
    if set(before) == set(after):
        return
    anchors = store.anchors
    known = anchors.for_ids([obs_id]).get(obs_id)
    if known is None:
        record_anchor(store, obs_id, after, cwd)
        return
    root = locate(store, [known], cwd=cwd).get((known.repo, known.root))
    kept = set(after)
    gone = {
        key for path in before if path not in kept for key in _anchored_keys(path, known.files, root, cwd)
    }
    files = {key: blob for key, blob in known.files.items() if key not in gone}
    fresh: dict[str, CachedBlob] = {}
    if root is not None:
        top = root.rstrip(os.sep) + os.sep
        for path in dict.fromkeys(after):
            if path in before:
                continue
            absolute = os.path.abspath(os.path.join(cwd, os.path.expanduser(path)))
            key = os.path.relpath(absolute, root).replace(os.sep, "/")
            if not absolute.startswith(top) or key in files:
                continue
            found = hash_file(absolute)
            if found is not None:
                files[key] = found.blob
                fresh[absolute] = found
    if files == known.files:
        return
    regions = {key: region for key, region in known.regions.items() if key in files}
    anchors.put(
        obs_id,
        Anchor(
            known.repo,
            known.root,
            known.branch,
            known.commit,
            files,
            known.anchored_at,
            known.verified_at,
            regions,
        ),
    )
    anchors.cache_blobs(fresh)


def _anchored_keys(path: str, files: dict[str, str], root: str | None, cwd: str) -> list[str]:
    """The anchored repository-relative paths a cited path names: resolved against ``cwd`` in the
    repository's folder here, or, for a relative path recorded elsewhere (another folder, another
    machine), the anchored paths it ends."""
    keys = []
    if root is not None:
        absolute = os.path.abspath(os.path.join(cwd, os.path.expanduser(path)))
        keys.append(os.path.relpath(absolute, root).replace(os.sep, "/"))
    if not os.path.isabs(path):
        tail = os.path.normpath(path).replace(os.sep, "/")
        if not tail.startswith("../"):
            keys += [key for key in files if key == tail or key.endswith("/" + tail)]
    return [key for key in dict.fromkeys(keys) if key in files]


def _repo_of(folder: str, known: dict[str, worktree.Repo | None]) -> worktree.Repo | None:
    """:func:`worktree.find_repo` of ``folder``: a folder that does not exist holds no ``.git``, so its work
    tree is its nearest existing ancestor's, looked up once for all of them (an import of records made on
    another machine names thousands of folders that are not here)."""
    existing = folder
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if existing not in known:
        known[existing] = worktree.find_repo(existing)
    return known[existing]


def locate(
    store: Store, anchors: Iterable[Anchor], *, cwd: str | None = None
) -> dict[tuple[Any, ...], str | None]:
    """Where each anchor's repository is on this machine: the folder it was recorded in when that is still
    a work tree; else (an anchor from another machine, a moved clone) a work tree with the same origin —
    the current directory's, or one where other anchors were recorded. None when it is not here."""
    found: dict[tuple[Any, ...], str | None] = {}
    pending: list[tuple[Any, ...]] = []
    for anchor in anchors:
        key = (anchor.repo, anchor.root)
        if key in found:
            continue
        if anchor.root and _is_top(anchor.root):
            found[key] = anchor.root
        else:
            found[key] = None
            if anchor.repo:
                pending.append(key)
    if not pending:
        return found
    here = worktree.find_repo(cwd or os.getcwd())
    here_key = worktree.remote_key(here) if here else None
    others = store.anchors.roots(repo for repo, _ in pending)
    for key in pending:
        repo = key[0]
        if here is not None and here_key == repo:
            found[key] = here.root
            continue
        for root in others.get(repo, []) if repo is not None else []:
            if (
                _is_top(root)
                and (located := worktree.find_repo(root))
                and worktree.remote_key(located) == repo
            ):
                found[key] = root
                break
    return found


def _is_top(root: str) -> bool:
    repo = worktree.find_repo(root)
    return repo is not None and repo.root == os.path.abspath(root)


def hash_file(path: str) -> CachedBlob | None:
    """The file's blob id with the stat it was taken at (stat first: a change while hashing shows later)."""
    return _read_hash(path)[0]


def _read_hash(path: str) -> tuple[CachedBlob | None, bytes | None]:
    """The file's blob id with the stat it was taken at, and its bytes (None for a symbolic link). A
    regular file larger than ``worktree.MAX_CITED_BYTES`` is never read: its size and modification time
    stand for its blob (``size:N:MTIME``). A FIFO, a device or a folder is not a file: (None, None)."""
    import stat as stat_module

    try:
        info = os.lstat(path)
    except OSError:
        return None, None
    if stat_module.S_ISREG(info.st_mode) and info.st_size > worktree.MAX_CITED_BYTES:
        blob = f"size:{info.st_size}:{info.st_mtime_ns}"
        return CachedBlob(info.st_size, info.st_mtime_ns, blob, _now_ns()), None
    data = worktree.cited_bytes(path)
    if data is None:
        return None, None
    found = CachedBlob(info.st_size, info.st_mtime_ns, worktree.hash_blob(data), _now_ns())
    return found, data if stat_module.S_ISREG(info.st_mode) else None


def _now_ns() -> int:
    import time

    return time.time_ns()


def verify(service: WriteHome, obs_ids: list[int], *, cwd: str) -> list[Verified]:
    """Re-anchor each observation to its files as they are now (one transaction; an unknown id fails it
    before anything changes). An anchored observation keeps its repository, branch and commit and its
    files are hashed again where the repository is on this machine (files that vanished leave the anchor);
    one never anchored is anchored now, its cited files resolved against ``cwd``."""
    store = service.store
    results: list[Verified] = []
    with (
        service.write_transaction() as files
    ):  # the file carries the anchor: it is written again (git sync shares it)
        rows = [store.observations.get(obs_id) for obs_id in dict.fromkeys(obs_ids)]
        known = store.anchors.for_ids(obs_ids)
        for row in rows:
            anchor = known.get(row["id"])
            if anchor is not None and anchor.files:
                root = locate(store, [anchor], cwd=cwd).get((anchor.repo, anchor.root))
                if root is None:
                    results.append(_not_verified(row["id"], "its repository is not on this machine"))
                    continue
                paths = [os.path.join(root, path) for path in anchor.files]
                made = record_anchor(store, row["id"], paths, root, verified=True, keep=anchor)
            else:
                made = record_anchor(store, row["id"], cited_files(row), cwd, verified=True, keep=anchor)
            if made is None:
                results.append(
                    _not_verified(
                        row["id"], "not in a git work tree (neither its files nor the current directory)"
                    )
                )
                continue
            service.export.export_observation(store.observations.get(row["id"]), files)
            results.append(
                {
                    "id": row["id"],
                    "verified": True,
                    "files": sorted(made.files),
                    "branch": made.branch,
                    "verified_at": to_iso(made.verified_at),
                }
            )
    return results


def _not_verified(obs_id: int, reason: str) -> Verified:
    return {"id": obs_id, "verified": False, "reason": reason}
