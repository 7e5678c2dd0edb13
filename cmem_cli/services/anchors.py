"""Code anchors and branches: which files an observation cited, what it is about in them (its region),
whether that still holds, and which branch it was made on (docs/truth.md).

Recording reads the work tree's own files (``cmem_cli.core.worktree``, bounded and non-blocking): one hash per
cited file, and for ``--modified`` files one or two ``git diff`` processes (``cmem_cli.core.gitdiff``; hooks
never run git). Checking stats only the files of the rows shown, hashes a file again only when its size or
modification time moved since cmem last hashed it (the ``file_blobs`` stat cache), and reads a changed file
only when a region must be looked up in it (``cmem_cli.core.regions``). Git is asked (and its answer kept per
HEAD, tables ``git_reach`` and ``git_answers``) only when some row was made on another branch, or a changed
file's memory may be behind (its commit not in HEAD's history), or a vanished file may have been renamed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cmem_cli.core import worktree
from cmem_cli.core.regions import Region
from cmem_cli.core.timeutil import now_ms, to_iso
from cmem_cli.store.anchors import Anchor as Anchor  # the services' callers name it from here
from cmem_cli.store.anchors import CachedBlob, Reach, parse_regions

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store

# A file modified this close to when its hash was taken may have changed again within the same tick of the
# file system's clock without its size or time moving (git's "racily clean" entries): hash it again.
RACY_NS = 100_000_000
ALL_BRANCHES = "all"

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


# -- recording -----------------------------------------------------------------------------------------------
def cited_files(record: dict[str, Any]) -> list[str]:
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
        record: dict[str, Any],
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
            found = _hash(absolute)
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


def _hash(path: str) -> CachedBlob | None:
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


# -- in the export file ---------------------------------------------------------------------------------------
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


# -- checking ----------------------------------------------------------------------------------------------
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
    now = _hash(full)
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
        found = _hash(path)
        if found is not None:
            blobs[path] = found.blob
            fresh[path] = found
    if fresh:
        store.write_if_free(lambda: anchors.cache_blobs(fresh))
    return blobs, modified


# -- rows ----------------------------------------------------------------------------------------------------
def annotate(
    store: Store,
    rows: list[dict[str, Any]],
    *,
    cwd: str | None = None,
    anchors: dict[int, Anchor] | None = None,
) -> list[dict[str, Any]]:
    """Give every row ``stale``, ``drifted``, ``behind`` and ``branch`` (None for rows that are not
    observations or not anchored)."""
    ids = [row["id"] for row in rows if _is_observation(row)]
    anchors = store.anchors.for_ids(ids) if anchors is None else {i: anchors[i] for i in ids if i in anchors}
    checked = check_anchors(store, anchors, cwd=cwd)
    for row in rows:
        state = checked.get(row["id"]) if _is_observation(row) else None
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


# -- branches -------------------------------------------------------------------------------------------------
def by_branch(
    store: Store,
    rows: list[dict[str, Any]],
    branch: str | None,
    *,
    demote: bool = True,
    cwd: str | None = None,
    read: Callable[[list[Any]], dict[Any, Anchor]] | None = None,
) -> tuple[list[dict[str, Any]], dict[Any, Anchor]]:
    """``rows`` by the branch each was recorded on, and the anchors read on the way (for :func:`annotate`).
    ``read`` reads the rows' anchors by their ids (default: this home's store; a team search reads the
    team database's).

    ``branch`` NAME keeps only observations recorded on that branch; ``all`` changes nothing. None (the
    default) with ``demote``: in a git work tree, observations of this repository recorded on another
    branch whose work HEAD does not contain (neither the commit they were recorded at nor the branch's tip
    is reachable from HEAD) weigh less (:func:`weigh_unmerged`); merging the branch ends it. One git
    process at most, and none when no row was recorded on another branch."""
    ids = [row["id"] for row in rows if _is_observation(row)]
    anchors = (read or store.anchors.for_ids)(ids) if ids else {}
    if branch == ALL_BRANCHES:
        return rows, anchors
    if branch is not None:
        kept = [r for r in rows if _is_observation(r) and (a := anchors.get(r["id"])) and a.branch == branch]
        return kept, anchors
    if not demote or not anchors:
        return rows, anchors
    demoted = _unmerged(store, anchors, cwd)
    if not demoted:
        return rows, anchors
    return weigh_unmerged(rows, {r["id"] for r in rows if _is_observation(r) and r["id"] in demoted}), anchors


# An unmerged branch's memory counts this share of its evidence against the current line's hits: below a
# memory of this line that matches as well (or nearly: down to this share), above the weaker matches.
UNMERGED_WEIGHT = 0.7


def weigh_unmerged(rows: list[dict[str, Any]], unmerged: set[int]) -> list[dict[str, Any]]:
    """``rows`` (best first) with each observation of ``unmerged`` moved down past the rows after it that
    have at least ``UNMERGED_WEIGHT`` of its evidence (``score``), and no further: work that HEAD does not
    contain may not hold here, so the current line's memory of the same strength wins, but it is still a
    match, and a loose one (a common word, a distant meaning) does not bury it. The other rows keep their
    order; so do the moved rows among rows of their own weight."""
    if not unmerged:
        return rows
    out: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []  # moved rows not placed yet, in their order

    def weighed(row: dict[str, Any]) -> float:
        return UNMERGED_WEIGHT * float(row.get("score") or 0.0)

    for row in rows:
        if _is_observation(row) and row["id"] in unmerged:
            waiting.append(row)
            continue
        evidence = float(row.get("score") or 0.0)
        out += [w for w in waiting if weighed(w) > evidence]
        waiting = [w for w in waiting if weighed(w) <= evidence]
        out.append(row)
    return out + waiting


def unmerged(store: Store, obs_ids: Iterable[int], *, cwd: str | None = None) -> set[int]:
    """Which of ``obs_ids`` were recorded on a branch of the current repository whose work HEAD has not
    merged (what search weighs lower; `cmem view` and the briefing mark them). One git process at most, none while HEAD
    stays where it was when git last answered."""
    anchors = store.anchors.for_ids(list(obs_ids))
    return _unmerged(store, anchors, cwd) if anchors else set()


def _unmerged(store: Store, anchors: dict[int, Anchor], cwd: str | None) -> set[int]:
    """The observations recorded on a branch of the current repository that HEAD has not merged."""
    here = worktree.find_repo(cwd or os.getcwd())
    if here is None:
        return set()
    head = worktree.head(here)
    if head.commit is None:
        return set()
    here_key: list[str | None] = []  # read on first need
    tips: dict[str, str | None] = {}
    forks: dict[str, str | None] = {}
    evidence: dict[int, list[str]] = {}
    unborn: set[int] = set()  # recorded on a branch that has no commit of its own yet
    for obs_id, anchor in anchors.items():
        if anchor.branch is not None and anchor.branch == head.branch:
            continue
        if anchor.root != here.root:
            if not here_key:
                here_key.append(worktree.remote_key(here))
            if anchor.repo is None or anchor.repo != here_key[0]:
                continue  # another repository's memory: this HEAD says nothing about it
        if anchor.branch is not None and anchor.branch not in tips:
            tips[anchor.branch] = worktree.branch_commit(here, anchor.branch)
        tip = tips.get(anchor.branch or "")
        if anchor.branch is not None and tip is not None and anchor.commit is not None:
            if anchor.branch not in forks:
                forks[anchor.branch] = worktree.branch_fork(here, anchor.branch)
            if forks[anchor.branch] == anchor.commit:
                # recorded before the branch's first commit: its work is in none of the commits so far,
                # so it is merged once the branch's own commits are (its tip moved on and HEAD holds it)
                if tip == anchor.commit:
                    unborn.add(obs_id)
                else:
                    evidence[obs_id] = [tip]
                continue
        commits = [c for c in (anchor.commit, tip) if c]
        if commits and commits != [head.commit]:
            evidence[obs_id] = commits
    if not evidence:
        return unborn
    gone = _unreachable(store, here, head.commit, [c for commits in evidence.values() for c in commits])
    return unborn | {obs_id for obs_id, commits in evidence.items() if all(c in gone for c in commits)}


def _unreachable(store: Store, repo: worktree.Repo, head: str, commits: list[str]) -> set[str]:
    """Which of ``commits`` HEAD commit ``head`` does not contain: git's answer, kept per work tree and
    HEAD commit (a commit's ancestry never changes), so git runs again only when HEAD moves or a commit
    is new. A commit the repository lacked when asked counts as merged (as git says nothing of it), an
    answer kept only while no pack and no loose object arrived since (a fetch may bring it). When git
    cannot answer, what was kept is all there is."""
    anchors = store.anchors
    wanted = list(dict.fromkeys(commits))
    kept = anchors.reach(repo.git_dir, head, wanted)
    packs: int | None = None
    gone: set[str] = set()
    ask: list[str] = []
    for commit in wanted:
        answer = kept.get(commit)
        if answer is not None and answer.packs_ns is not None:
            packs = worktree.packs_stamp(repo) if packs is None else packs
            if answer.packs_ns != packs or worktree.stored_loose(repo, commit):
                answer = None  # it may have arrived since: ask again
        if answer is None:
            ask.append(commit)
        elif not answer.merged:
            gone.add(commit)
    if not ask:
        return gone
    packs = worktree.packs_stamp(repo)  # before git looks: a pack that lands meanwhile moves it
    loose = {commit for commit in ask if worktree.stored_loose(repo, commit)}
    unmerged = worktree.unreachable(repo, head, ask)
    if unmerged is None:
        return gone
    fresh = {
        commit: Reach(False, None) if commit in unmerged else Reach(True, None if commit in loose else packs)
        for commit in ask
    }
    store.write_if_free(lambda: anchors.remember_reach(repo.git_dir, head, fresh))
    return gone | unmerged


def _is_observation(row: dict[str, Any]) -> bool:
    """An observation's row: its id is this home's (an integer) or, in a team search, its uid."""
    ident = row.get("id")
    return row.get("kind", "observation") == "observation" and isinstance(ident, int | str) and ident != ""


# -- full records -----------------------------------------------------------------------------------------------
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


# -- verifying --------------------------------------------------------------------------------------------------
def verify(service: Any, obs_ids: list[int], *, cwd: str) -> list[dict[str, Any]]:
    """Re-anchor each observation to its files as they are now (one transaction; an unknown id fails it
    before anything changes). An anchored observation keeps its repository, branch and commit and its
    files are hashed again where the repository is on this machine (files that vanished leave the anchor);
    one never anchored is anchored now, its cited files resolved against ``cwd``."""
    store = service.store
    results: list[dict[str, Any]] = []
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
            service.export_observation(store.observations.get(row["id"]), files)
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


def _not_verified(obs_id: int, reason: str) -> dict[str, Any]:
    return {"id": obs_id, "verified": False, "reason": reason}
