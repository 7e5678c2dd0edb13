"""`cmem sync` through git: adopt, commit exactly what cmem adopted, fetch, merge by uid, adopt, push.

The export tree is git's working tree (git's own folder is ``<home>/sync.git``, see
``cmem_cli.services.inbound.sync_repo``). Only observations and summaries travel (`.gitignore` keeps temporary and
lock files out); the database, prompts, sessions and the index stay on the machine.

Kill-safety rests on three rules:

- **The store knows how far it adopted.** ``sync.last_adopted`` (the store's ``state`` table) is written
  in the same transaction as each adoption; every sync first adopts ``last..HEAD``
  (``cmem_cli.services.inbound.arrivals``), so a sync killed after `git merge`, after the merge's commit (whose
  conflict copies are files in that commit) or while a new machine joins converges on the next run.
- **Only what cmem adopted is committed.** A path is staged only when its bytes are exactly what cmem
  wrote there (the store's content hash), or when it is gone and the store holds nothing there; the index
  is checked blob by blob after staging. A file saved while a sync runs (or anything a person staged by
  hand) is left for the next sync, which adopts it (scrubbed) first.
- **Debris of a killed run is cleared first:** interrupted export writes are rolled back, stale git locks
  are removed and an unfinished merge is abandoned, when no git process works in the tree.

One sync at a time (a lock file in the cmem home); the merge and the adoption of what it brought run
inside one store transaction, so hooks wait a moment instead of writing into a half-merged tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import InvalidInput, SyncError, UsageError
from cmem_cli.core.files import NotRegularFile, read_in_tree
from cmem_cli.core.sync_report import SyncReport
from cmem_cli.core.synclock import sync_lock
from cmem_cli.services.inbound import arrivals, remote_state
from cmem_cli.services.inbound.reconcile.rule import tell
from cmem_cli.services.inbound.sync_repo import (
    BRANCH,
    MARKER,
    REGULAR_MODES,
    REMOTE,
    Git,
    clear_git_debris,
    connected_git_dir,
    find_git_debris,
    home_git_dir,
    move_into_home,
    remote_url,
)
from cmem_cli.services.write.service import WriteService
from cmem_cli.sync.merge import Resolution, merge_versions, read_blobs
from cmem_export import atomic, digest

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import ConflictItem

GITIGNORE = """\
# cmem sync: only observations and summaries travel; everything else stays on this machine.
*
!*/
!*.md
!.gitignore
.tmp-*
.*.swp
*~
"""
PUSH_ATTEMPTS = 5
# What git says when another push holds the remote branch's lock at that moment: a race, not a refusal.
LOCK_RACE = ("cannot lock ref", "failed to update ref", "failed to lock", "but expected")
NOT_A_RACE = ("permission denied", "read-only file system", "no space left", "hook declined")
BACK_OFF_S = 0.2  # the first back-off's mean; doubled each attempt (about 6 s at most in all)
Progress = Callable[[str, int, int], None]  # (phase, done, total or 0 when unknown)
TARGET = f"{REMOTE}/{BRANCH}"
MERGE_MARK = "cmem-merging"  # in git's folder while a merge writes the tree: "<HEAD before> <target>"
HEAD_REF = f"refs/heads/{BRANCH}"


def is_connected(home: Path, export: Path) -> bool:
    """Has `cmem sync init` connected this export tree to a remote? (A tree a person keeps under git with
    a remote of their own is not: cmem never commits or pushes there unasked.)"""
    return connected_git_dir(home, export) is not None


def blob_id(data: bytes) -> str:
    """The id git gives a blob of ``data`` (SHA-1 repositories, git's default)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Syncer:
    """One sync run over one memory's export tree."""

    def __init__(self, memory: WriteService, progress: Progress | None = None):
        self.memory = memory
        # (phase, done, total or 0): a first sync of a large tree runs for minutes (1,000,000 files: 11)
        self.progress: Progress = progress or (lambda phase, done, total: None)
        self.home = memory.config.home
        self.root = memory.export_root
        self.git = Git(self.root, connected_git_dir(self.home, self.root))
        known = self.git.git_dir
        # pulled: memories that arrived from the remote and were adopted; queued: files saved while this
        # sync ran, left for the next one
        self.report = SyncReport(
            kind="git",
            remote=remote_state.shown_url((remote_url(known) if known else None) or ""),
            pushed=False,
        )
        self.head: str | None = None  # this branch's commit, kept current through the run
        self.remote_head: str | None = None
        self.write_gitignore = False
        self._raced = False  # the last push met another machine's push holding the branch's lock
        self._untold: list[ConflictItem] = []  # conflicts adoption settled, for the next commit to carry

    # -- set-up -----------------------------------------------------------------------------------------
    def init(self, url: str) -> SyncReport:
        """Connect the tree to ``url``: start from its history (adopting every file), or push to an empty one."""
        if not url.strip() or url.startswith("-"):
            raise UsageError(f"not a git URL: {url!r}")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        # reach the remote before changing anything: a mistyped URL must not stick to the tree
        Git(self.root).run("ls-remote", "-q", "--heads", url, what="git ls-remote")
        git_dir = self.root / ".git" if (self.root / ".git").is_dir() else home_git_dir(self.home)
        self.git = Git(self.root, git_dir)
        if not git_dir.is_dir():
            self.git.run("init", "-q", "-b", BRANCH, what="git init")
            self.git.run("config", "--unset", "core.worktree", check=False)
        current = self.git.run("remote", "get-url", REMOTE, check=False)
        if current.returncode == 0:
            existing = current.stdout.decode().strip()
            if existing != url:
                raise UsageError(f"the export tree already syncs with {existing}")
        else:
            self.git.run("remote", "add", REMOTE, url, what="git remote add")
        self.git.run("config", MARKER, "true", what="git config")
        self.report.remote = remote_state.shown_url(url)
        self._write_gitignore()
        return self.sync()

    def _write_gitignore(self) -> None:
        """cmem's rules in ``.gitignore``; a person's own file is kept, with cmem's rules appended once."""
        ignore = self.root / ".gitignore"
        try:  # never through a link: its target's text would be written here and pushed
            current = read_in_tree(self.root, ".gitignore").decode("utf-8")
        except FileNotFoundError:
            current = ""
        except NotRegularFile as exc:
            raise InvalidInput(f"{ignore}: {exc.strerror} (make it a regular file)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SyncError(f"cannot read {ignore}: {exc}") from None
        self.write_gitignore = True  # cmem's own file: staged with this sync's commit
        if GITIGNORE in current:
            return
        atomic.atomic_write(ignore, (current.rstrip("\n") + "\n\n" if current.strip() else "") + GITIGNORE)

    # -- one sync ---------------------------------------------------------------------------------------
    def sync(self) -> SyncReport:
        git_dir = move_into_home(self.home, self.root) if self.git.git_dir else None
        if git_dir is None:
            raise UsageError("the export tree is not connected to a remote; run `cmem sync init URL` first")
        self.git = Git(self.root, git_dir)
        self._clear_debris()
        if self._moved() is None:  # a first sync: the remote's history (if any) comes first
            remote = self._fetch()
            if remote:
                self._join()
            unstaged = self._adopt_and_commit()
        else:  # local work is adopted and committed before the network is needed (it fails offline)
            unstaged = self._adopt_and_commit()
            remote = self._fetch()
        for attempt in range(PUSH_ATTEMPTS):
            if remote:
                self._merge(unstaged)
            if self._push():
                break
            if self._raced and attempt < PUSH_ATTEMPTS - 1:
                _back_off(attempt)
            remote = self._fetch()
            unstaged = self._adopt_and_commit()
        else:
            if self._raced:
                raise SyncError(
                    "git push kept meeting another machine's push (the remote's branch was locked); "
                    "run `cmem sync` again"
                )
            raise SyncError("git push kept being overtaken by other machines; run `cmem sync` again")
        self.report.queued = len(unstaged)
        self._report_rejected()
        return self.report

    def _clear_debris(self) -> None:
        """What a killed sync (or a killed git) left: interrupted export writes are rolled back first, so
        their files are not taken for a person's, then stale git locks and an unfinished merge go."""
        from cmem_cli.services.upkeep.recovery import recover
        from cmem_export.journal import pending as pending_journals

        if pending_journals(self.memory.journal_dir):
            with self.memory.write_transaction(fsync=False):
                recover(self.memory)
        assert self.git.git_dir is not None
        debris = find_git_debris(self.git.git_dir, self.root, wait=True)
        if debris:
            clear_git_debris(self.git, debris)
            self.report.notes.append(
                "cleared what a killed git left: " + ", ".join(debris.describe(self.git.git_dir))
            )
        self._undo_half_merge()

    # -- a git killed while it wrote the tree ----------------------------------------------------------------
    def _mark(self, target: str) -> None:
        """Note, before git writes the tree for a merge, what it goes from and to (see _undo_half_merge)."""
        assert self.git.git_dir is not None
        atomic.atomic_write(self.git.git_dir / MERGE_MARK, f"{self.head or '-'} {target}\n")

    def _unmark(self) -> None:
        assert self.git.git_dir is not None
        atomic.remove_file(self.git.git_dir / MERGE_MARK)

    def _undo_half_merge(self) -> None:
        """A git killed while a merge wrote the tree (no MERGE_HEAD yet, HEAD not moved) leaves some files
        at the new version, some cut short, some removed, and maybe the index half-way. Those are git's
        writes, not a person's edits: each file the merge was changing is put back as HEAD has it when it is
        the new version, a piece of it (a cut-short write) or gone; any other text (a person's) stays. The
        index goes back to HEAD. The next merge does it all again."""
        assert self.git.git_dir is not None
        mark = self.git.git_dir / MERGE_MARK
        try:
            before, target = mark.read_text(encoding="ascii").split()
        except (OSError, ValueError, UnicodeDecodeError):
            return
        head = self._moved()
        if head is not None and head == before and self.git.ok("cat-file", "-e", f"{target}^{{commit}}"):
            self.git.run("reset", "-q", what="git reset")
            paths = self.git.z_list("diff", "--name-only", "-z", "--no-renames", before, target)
            blobs = read_blobs(self.git, [f"{rev}:{p}" for p in paths for rev in (before, target)])
            for relpath in paths:
                mine, theirs = blobs.get(f"{before}:{relpath}"), blobs.get(f"{target}:{relpath}")
                try:
                    current: bytes | None = read_in_tree(self.root, relpath)
                except FileNotFoundError:
                    current = None
                except OSError:  # a link or anything else no merge writes: not git's, left alone
                    continue
                if current == mine:
                    continue
                if current is None or (theirs is not None and theirs.startswith(current)):
                    self._write_resolution(Resolution(relpath, mine))
        self._unmark()

    def _fetch(self) -> bool:
        """Fetch the remote branch; False when the remote has none yet (an empty repository). Reads this
        branch's head and the remote's in one go; the run keeps both current from then on."""
        self.progress("fetch", 0, 0)
        self.git.run("fetch", "-q", "--no-tags", REMOTE, what="git fetch")
        heads = {}
        refs = self.git.text(
            "for-each-ref", "--format=%(objectname) %(refname)", HEAD_REF, f"refs/remotes/{TARGET}"
        )
        for line in refs.splitlines():
            sha, _, ref = line.partition(" ")
            heads[ref] = sha
        self.head = heads.get(HEAD_REF)
        self.remote_head = heads.get(f"refs/remotes/{TARGET}")
        return self.remote_head is not None

    def _moved(self) -> str | None:
        """HEAD again, after a command that moved it (read from the branch's ref file when git left one
        there, as a commit does: no process)."""
        assert self.git.git_dir is not None
        try:
            sha = (self.git.git_dir / HEAD_REF).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            sha = ""
        self.head = sha if len(sha) in (40, 64) else arrivals.head_of(self.git)
        return self.head

    def _join(self) -> None:
        """A machine joining a remote with history starts from that history: the remote's files are put in
        the tree (a file this machine also has, with other text, is merged by uid), then HEAD and the
        index become the remote's branch. This machine's own memories are committed on top by the next
        step. Killed half-way, the next sync joins again (files already there are skipped)."""
        self.progress("join", 0, 0)
        listed: list[str] = []
        links: list[str] = []
        for entry in self.git.z_list("ls-tree", "-r", "-z", TARGET):
            meta, _, relpath = entry.partition("\t")
            if relpath != ".gitignore":
                (listed if meta.split()[0] in REGULAR_MODES else links).append(relpath)
        present: dict[str, bytes] = {}
        for relpath in listed:
            with contextlib.suppress(OSError):  # a link or FIFO of this machine's is not read, nor replaced
                present[relpath] = read_in_tree(self.root, relpath)
        # git checks a link out as a link: never followed, its arrival refused by name (arrivals.pending)
        missing = [p for p in [*listed, *links] if not os.path.lexists(self.root / p)]
        if present:
            theirs = read_blobs(self.git, [f"{TARGET}:{p}" for p in present])
            for relpath, ours in present.items():
                other = theirs.get(f"{TARGET}:{relpath}")
                if other is None or other == ours:
                    continue
                if other.startswith(ours):  # cut short by a git killed while it wrote it: again
                    missing.append(relpath)
                    continue
                self._write_resolution(merge_versions(self.memory, relpath, None, ours, other))
        if missing:
            self.git.run(
                "checkout", TARGET, "--pathspec-from-file=-", "--pathspec-file-nul",
                input=b"\0".join(p.encode() for p in missing), what="git checkout",
            )  # fmt: skip
        self.git.run("reset", "-q", TARGET, what="git reset")
        self._moved()

    # -- local changes ----------------------------------------------------------------------------------
    def _status(self) -> tuple[dict[str, str], bool]:
        """Paths that differ from HEAD (status code per path), and whether the index holds staged changes.

        Ignored files are listed too: a `.gitignore` pulled from a teammate (``*``, ``*.md``) must not
        hide this machine's memories from the sync (cmem stages exactly what it wrote, and
        ``git update-index`` never asks `.gitignore`). Of the ignored, only what adoption would take is
        kept (markdown outside hidden folders): cmem's own rules ignore a person's other files."""
        changed: dict[str, str] = {}
        staged = False
        for entry in self.git.z_list(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignored=traditional"
        ):
            code, relpath = entry[:2], entry[3:]
            if code == "!!" and not _memory_path(relpath):
                continue
            changed[relpath] = code
            staged = staged or code[0] not in " ?!"
        return changed, staged

    def _adopt_and_commit(self) -> set[str]:
        """Adopt what git brought that the store lacks (``last..HEAD``), then what people changed in the
        tree; commit exactly the files cmem adopted or wrote. Returns the paths left uncommitted."""
        from cmem_cli.services.inbound.sync_local import sync_local

        self.progress("status", 0, 0)
        status, staged = self._status()
        dirty = set(status)
        candidates: set[str] = set()
        todo = arrivals.pending(self.memory, self.git, self.head) if self.head else None
        if todo is not None:
            with self.memory.write_transaction(fsync=False, skip_identical=True) as files:
                self._count(arrivals.adopt_pending(self.memory, files, todo, dirty=dirty))
            self._told(todo)
            candidates.update(files.written, files.to_delete)
        local = [p for p in status if p.endswith(".md")]
        if local:
            self._refuse_a_lost_tree(status)
            self.progress("adopt", 0, len(local))
            result = sync_local(self.memory, [self.root / p for p in local])
            self.progress("adopt", len(local), len(local))
            self.report.adopted += len(result.adopted) + len(result.created)
            self.report.forgotten += len(result.forgotten)
            for relpath, reason in result.invalid + result.conflicts:
                self._reject(relpath, reason)
            candidates.update(local, result.written, result.removed)
        if self.write_gitignore:
            candidates.add(".gitignore")
        if staged:  # something a person staged by hand: only what cmem verifies goes into a commit
            self.git.run("reset", "-q", what="git reset")
        if not candidates and self.head is not None:
            return dirty
        committed = self._stage_and_commit(candidates, "local change(s)")
        return {p for p in dirty if p not in committed}

    def _refuse_a_lost_tree(self, status: dict[str, str]) -> None:
        """Every committed memory gone at once, with no markdown left in the tree and the store still
        holding them, is a lost tree (a deleted folder), not a forget of everything: refuse. Memories
        forgotten through cmem are not in the store any more, and a renamed file is still markdown."""
        deleted = [p for p, code in status.items() if "D" in code and p.endswith(".md")]
        if not deleted or any("D" not in code and p.endswith(".md") for p, code in status.items()):
            return
        tracked = [p for p in self.git.z_list("ls-files", "-z") if p.endswith(".md")]
        if set(tracked) - set(deleted):
            return
        held = self.memory.store.export_files.uids_at_paths(deleted)
        if held and not any(self.root.rglob("*.md")):
            raise UsageError(
                "every file of the export tree is gone: nothing forgotten, nothing pushed "
                "(`cmem doctor --fix` restores the files)"
            )

    def _count(self, result: arrivals.Adoption) -> None:
        self.report.adopted += result.adopted
        self.report.pulled += result.adopted
        self.report.forgotten += result.forgotten
        for item in result.conflicts:
            tell(self.report.conflicts, item)
            if item.get("uid"):
                self._untold.append(item)
        self.report.notes += result.notes
        for relpath, reason in result.rejected:
            self._reject(relpath, reason)

    def _told(self, todo: arrivals.Pending) -> None:
        """The conflicts other machines settled in the merges this sync adopted: told here too."""
        if todo.last and not todo.whole_tree:
            for item in arrivals.told(self.git, todo.last, todo.head):
                tell(self.report.conflicts, item)

    def _reject(self, relpath: str, reason: str) -> None:
        """A file not taken, with the memory and the machine its front matter names (None: not stated)."""
        if all(item["path"] != relpath for item in self.report.rejected):
            uid, machine = arrivals.named(self.memory, relpath)
            self.report.rejected.append({"path": relpath, "uid": uid, "machine": machine, "reason": reason})

    def _report_rejected(self) -> None:
        """Arrived files that still cannot be adopted are reported on every sync until fixed or removed."""
        for relpath, reason in arrivals.still_rejected(self.memory):
            self._reject(relpath, reason)

    # -- staging exactly what cmem wrote ----------------------------------------------------------------
    def _verified(self, candidates: set[str]) -> tuple[dict[str, bytes], list[str]]:
        """The candidates whose bytes are exactly what cmem wrote (path -> bytes), and those that are gone
        while the store holds nothing at their path (deletions cmem made or a person's of an unadopted
        file). Everything else (a file saved mid-sync, an invalid file) is left out."""
        store = self.memory.store
        hashes = store.export_files.hashes()
        held = store.export_files.record_paths()
        add: dict[str, bytes] = {}
        remove: list[str] = []
        for relpath in sorted(candidates):
            try:
                data = read_in_tree(self.root, relpath)
            except FileNotFoundError:
                if relpath not in held:
                    remove.append(relpath)
                continue
            except OSError:  # a link, a FIFO, a hard link, a path through a linked folder: never staged
                continue
            ours = relpath == ".gitignore" and self.write_gitignore and GITIGNORE.encode() in data
            if ours or hashes.get(relpath) == digest.bytes_hash(data):
                add[relpath] = data
        return add, remove

    def _stage(self, add: dict[str, bytes], remove: list[str]) -> None:
        """Put exactly these blobs in the index (and these deletions), then check the index holds them: a
        file changed between reading and staging gets the blob cmem read, not the new text."""
        paths = [*add, *remove]
        if not paths:
            return
        self.progress("stage", 0, len(paths))
        self.git.run(
            "update-index", "--add", "--remove", "-z", "--stdin",
            input=b"".join(p.encode() + b"\0" for p in paths), what="git update-index",
        )  # fmt: skip
        listed = self.git.z_list("ls-files", "-s", "-z") if add else []
        indexed = {}
        for entry in listed:
            info, relpath = entry.split("\t", 1)
            indexed[relpath] = info.split()[1]
        for relpath, data in add.items():
            if indexed.get(relpath) != blob_id(data):
                blob = self.git.text(
                    "hash-object", "-w", "--stdin", input=data, what="git hash-object"
                ).strip()
                self.git.run(
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"100644,{blob},{relpath}",
                    what="git update-index",
                )

    def _stage_and_commit(self, candidates: set[str], what: str) -> set[str]:
        """Stage the verified candidates and commit them (nothing staged, no commit, unless the branch has
        none yet). Returns the paths committed."""
        add, remove = self._verified(candidates)
        self._stage(add, remove)
        head = self.head
        if head is not None and not add and not remove:
            return set()
        names = self.git.z_list("diff", "--cached", "--name-only", "-z", *([] if head is None else ["HEAD"]))
        if head is not None and not names:
            return set()
        self.progress("commit", 0, 0)
        message = f"cmem sync: {len(names)} {what}"
        if self._untold:  # what this sync's adoption settled: every machine that adopts the commit is told
            message += "\n\n" + "\n".join(arrivals.conflict_trailer(item) for item in self._untold)
            self._untold = []
        self.git.run("commit", "-q", "--allow-empty", "-m", message, what="git commit")
        self.report.committed += len(names)
        self._moved()
        self._advance_last(head)
        return set(names)

    def _advance_last(self, parent: str | None) -> None:
        """The commit just made holds only what the store holds: if its parent was adopted, so is it."""
        arrivals.advance_adopted(self.memory, parent, self.head)

    # -- merging ----------------------------------------------------------------------------------------
    def _merge(self, unstaged: set[str]) -> None:
        """Merge the fetched branch by uid, commit the result, adopt what arrived; undo it all on failure."""
        before = self.head
        if before == self.remote_head:
            return
        base = None
        if before is not None:
            found = self.git.run("merge-base", "HEAD", TARGET, check=False)
            base = found.stdout.decode().strip() or None if found.returncode == 0 else None
            if base == self.remote_head:
                return  # the remote has nothing this branch lacks
        fast_forward = base == before
        self.progress("merge", 0, 0)
        try:
            with self.memory.write_transaction(fsync=False, skip_identical=True) as files:
                if fast_forward:
                    self._mark(self.remote_head or TARGET)
                    self.git.run("merge", "-q", "--ff-only", TARGET, what="git merge")
                    self._unmark()
                else:
                    self._merge_commit(base)
                todo = arrivals.pending(self.memory, self.git, self._moved(), ancestor=before)
                if todo is not None:
                    self._count(arrivals.adopt_pending(self.memory, files, todo, dirty=unstaged))
                    self._told(todo)
        except BaseException:
            self.git.run("merge", "--abort", check=False)
            if before is not None:
                self.git.run("reset", "-q", "--keep", before, check=False)
            self._moved()
            raise
        self._stage_and_commit(set(files.written) | set(files.to_delete), "file(s) written while adopting")

    def _merge_commit(self, base: str | None) -> None:
        """`git merge` without rename detection and without committing; every path both sides changed is
        merged by uid, field by field (``cmem_cli.sync.merge``), staged exactly, and the merge committed."""
        self._mark(self.remote_head or TARGET)
        merged = self.git.run(
            "merge", "-q", "--no-commit", "--no-ff", "-X", "no-renames", "--allow-unrelated-histories", TARGET,
            check=False,
        )  # fmt: skip
        self._unmark()
        unmerged = {entry.split("\t", 1)[1] for entry in self.git.z_list("ls-files", "-u", "-z")}
        if merged.returncode != 0 and not unmerged:
            raise SyncError(f"git merge failed: {_last(merged)}")
        both = self._changed_on_both_sides(base) | unmerged
        conflicts = 0
        settled: list[ConflictItem] = []
        if both:
            specs = [
                f"{rev}:{p}" for p in sorted(both) for rev in ((base,) if base else ()) + ("HEAD", TARGET)
            ]
            blobs = read_blobs(self.git, specs)
            add: dict[str, bytes] = {}
            remove: list[str] = []
            for relpath in sorted(both):
                resolution = merge_versions(
                    self.memory,
                    relpath,
                    blobs.get(f"{base}:{relpath}") if base else None,
                    blobs.get(f"HEAD:{relpath}"),
                    blobs.get(f"{TARGET}:{relpath}"),
                )
                written = self._write_resolution(resolution)
                for path, data in written.items():
                    if data is None:
                        remove.append(path)
                    else:
                        add[path] = data
                if resolution.conflict is not None:
                    tell(self.report.conflicts, resolution.conflict)
                    settled.append(resolution.conflict)
                    conflicts += 1
            self._stage(add, remove)
        if self.git.z_list("ls-files", "-u", "-z"):
            raise SyncError("git merge left unresolved paths; nothing committed")
        message = f"cmem sync: merge, {conflicts} conflict(s) resolved"
        if conflicts:  # every machine that adopts this merge is told, as this one is
            told = [c for c in settled if c.get("uid")]
            message += "\n\n" + "\n".join(arrivals.conflict_trailer(item) for item in told)
        self.git.run("commit", "-q", "--no-edit", "-m", message, what="git commit (merge)")

    def _changed_on_both_sides(self, base: str | None) -> set[str]:
        def changed(rev: str) -> set[str]:
            if base is None:
                return set(self.git.z_list("ls-tree", "-r", "-z", "--name-only", rev))
            return set(self.git.z_list("diff", "--name-only", "-z", "--no-renames", base, rev))

        return changed("HEAD") & changed(TARGET)

    def _write_resolution(self, resolution: Resolution) -> dict[str, bytes | None]:
        """Write a merged path and its conflict copies into the tree (plain atomic writes: they become the
        merge's commit, and the adoption that follows journals its own rewrites over them)."""
        from cmem_export import layout

        written: dict[str, bytes | None] = {}
        for relpath, data in [(resolution.relpath, resolution.data), *resolution.copies]:
            path = layout.resolve_inside(self.root, relpath)
            if data is None:
                if atomic.remove_file(path):
                    atomic.prune_empty_dirs(path.parent, self.root)
            else:
                atomic.ensure_dir(path.parent, self.root)
                atomic.atomic_write_bytes(path, data)
            written[relpath] = data
        return written

    # -- pushing ----------------------------------------------------------------------------------------
    def _push(self) -> bool:
        """Push; False when the remote moved on meanwhile (fetch and merge again), SyncError if refused."""
        head = self.head
        if head is None or head == self.remote_head:
            return True  # nothing to push
        self.progress("push", 0, 0)
        proc = self.git.run("push", "-q", REMOTE, f"HEAD:refs/heads/{BRANCH}", check=False)
        if proc.returncode == 0:
            self.report.pushed = True
            self.remote_head = head
            return True
        message = proc.stderr.decode("utf-8", "replace")
        self._raced = lock_race(message)
        if self._raced or (
            "[rejected]" in message and ("fetch first" in message or "non-fast-forward" in message)
        ):
            return False
        error = SyncError(f"git push failed: {_last(proc)}")
        remote_state.refused(self.memory.store, error.message, read_only=False)
        raise error


def lock_race(message: str) -> bool:
    """Did a push fail only because another push held the remote's ref lock at that moment (and not for
    a lasting reason: permissions, a full disk, a hook's refusal)?"""
    lowered = message.lower()
    return any(sign in lowered for sign in LOCK_RACE) and not any(sign in lowered for sign in NOT_A_RACE)


def _back_off(attempt: int) -> None:
    """A short randomised wait before pushing again, so two machines that raced do not race again."""
    import random
    import time

    time.sleep(BACK_OFF_S * (2**attempt) * random.uniform(0.5, 1.5))


def _memory_path(relpath: str) -> bool:
    """Could ``relpath`` be a memory's file (what adoption reads: markdown, no hidden part)?"""
    return relpath.endswith(".md") and not any(part.startswith(".") for part in relpath.split("/"))


def _last(proc: Any) -> str:
    from cmem_cli.services.inbound.sync_repo import last_line

    return last_line(proc.stderr or proc.stdout)


def run_sync(
    memory: WriteService,
    url: str | None = None,
    *,
    on_start: Callable[[SyncReport], object] | None = None,
    progress: Progress | None = None,
) -> SyncReport:
    """`cmem sync [init URL]` under the sync lock. ``on_start``: handed the report the run fills in as it
    goes, so a caller can still say what was done when the sync fails half-way; ``progress``: told each
    phase."""
    with sync_lock(memory.config.home):
        syncer = Syncer(memory, progress)
        if on_start is not None:
            on_start(syncer.report)
        done = syncer.init(url) if url is not None else syncer.sync()
        remote_state.synced(memory.store)
        return done
