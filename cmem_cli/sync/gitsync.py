"""`cmem sync` through git: commit local changes, fetch, merge without a person, adopt, push.

The export tree is the git working tree. Only observations and summaries travel (`.gitignore` keeps
temporary and lock files out); the database, prompts, sessions and the index stay on the machine.
One sync at a time (a lock file in the cmem home); the merge and the adoption of what it brought run
inside one store transaction, so hooks wait a moment instead of writing into a half-merged tree, and a
failed adoption puts the tree back where it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cmem_cli.core.errors import CmemError, DatabaseBusy, SyncError, UsageError
from cmem_cli.services.writes import FileTransaction, Memory
from cmem_cli.sync import adopt as sync_adopt
from cmem_cli.sync.git import Git
from cmem_cli.sync.merge import resolve_conflicts, split_duplicates

REMOTE = "origin"
MARKER = "cmem.sync"  # set in the tree's .git/config by `cmem sync init`
BRANCH = "main"
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
PUSH_ATTEMPTS = 3


@contextlib.contextmanager
def sync_lock(home: Path, *, timeout: float = 0.0) -> Iterator[None]:
    """One `cmem sync` per home at a time (cron and a person may overlap); released if the process dies."""
    fd = os.open(home / "sync.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DatabaseBusy("another cmem sync is running; try again later") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def is_connected(root: Path) -> bool:
    """Has `cmem sync init` connected this export tree to a remote? (A tree a person keeps under git with
    a remote of their own is not: cmem never commits or pushes there unasked.)"""
    if not (root / ".git").is_dir():
        return False
    marker = Git(root).run("config", "--get", MARKER, check=False)
    return marker.returncode == 0 and marker.stdout.strip() == b"true"


class Syncer:
    """One sync run over one memory's export tree."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.root = memory.export_root
        self.git = Git(self.root)
        self.report: dict[str, Any] = {
            "committed": 0,
            "adopted": 0,
            "forgotten": 0,
            "conflicts": [],
            "rejected": [],
            "notes": [],
            "pushed": False,
        }

    # -- set-up -----------------------------------------------------------------------------------------
    def is_connected(self) -> bool:
        return is_connected(self.root)

    def init(self, url: str) -> dict[str, Any]:
        """Connect the tree to ``url``: bring in its history (adopting every file), or push to an empty one."""
        if not url.strip() or url.startswith("-"):
            raise UsageError(f"not a git URL: {url!r}")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        # reach the remote before changing anything: a mistyped URL must not stick to the tree
        self.git.run("ls-remote", "-q", "--heads", url, what="git ls-remote")
        if not (self.root / ".git").exists():
            self.git.run("init", "-q", "-b", BRANCH, what="git init")
        current = self.git.run("remote", "get-url", REMOTE, check=False)
        if current.returncode == 0:
            existing = current.stdout.decode().strip()
            if existing != url:
                raise UsageError(f"the export tree already syncs with {existing}")
        else:
            self.git.run("remote", "add", REMOTE, url, what="git remote add")
        self.git.run("config", MARKER, "true", what="git config")
        self._write_gitignore()
        return self.sync(first=True)

    def _write_gitignore(self) -> None:
        """cmem's rules in ``.gitignore``; a person's own file is kept, with cmem's rules appended once."""
        from cmem_export.atomic import atomic_write

        ignore = self.root / ".gitignore"
        try:
            current = ignore.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise SyncError(f"cannot read {ignore}: {exc}") from None
        if GITIGNORE in current:
            return
        atomic_write(ignore, (current.rstrip("\n") + "\n\n" if current.strip() else "") + GITIGNORE)

    # -- one sync ---------------------------------------------------------------------------------------
    def sync(self, *, first: bool = False) -> dict[str, Any]:
        if not self.is_connected():
            raise UsageError("the export tree is not connected to a remote; run `cmem sync init URL` first")
        remote_has_branch = self._fetch()
        for attempt in range(PUSH_ATTEMPTS):
            rejected = self._adopt_local()
            if rejected is not None:  # None: the tree is clean and has a commit, nothing to stage
                self._commit("local change(s)", unstage=rejected)
            if remote_has_branch:
                self._merge(first=first and attempt == 0)
            if self._push():
                return self.report
            remote_has_branch = self._fetch()
        raise SyncError("git push kept being overtaken by other machines; run `cmem sync` again")

    def _fetch(self) -> bool:
        """Fetch the remote branch; False when the remote has none yet (an empty repository)."""
        self.git.run("fetch", "-q", "--no-tags", REMOTE, what="git fetch")
        return self.git.ok("rev-parse", "-q", "--verify", f"refs/remotes/{REMOTE}/{BRANCH}")

    def _has_head(self) -> bool:
        return self.git.ok("rev-parse", "-q", "--verify", "HEAD")

    def _adopt_local(self) -> list[str] | None:
        """Adopt what people changed in the tree since the last commit (``sync_local`` on just those
        paths, its own store transaction); returns the paths it refused, which stay out of the commit,
        or None when the tree is clean (and has a first commit)."""
        from cmem_cli.services.sync_local import sync_local

        changed, deleted = self._local_changes()
        if not changed and not deleted and self._has_head():
            return None
        if deleted and self._tree_emptied(deleted):
            raise UsageError(
                "every file of the export tree is gone: nothing forgotten, nothing pushed "
                "(`cmem doctor --fix` restores the files)"
            )
        paths = [self.root / p for p in changed + deleted if p.endswith(".md")]
        if not paths:
            return []
        result = sync_local(self.memory, paths)
        self.report["adopted"] += len(result.adopted) + len(result.created)
        self.report["forgotten"] += len(result.forgotten)
        refused = []
        for relpath, reason in result.invalid + result.conflicts:
            self._reject(relpath, reason)
            refused.append(relpath)
        refused += result.ignored  # a person's own file in the export root: never committed either
        return [p for p in refused if (self.root / p).exists() or p in deleted]

    def _tree_emptied(self, deleted: list[str]) -> bool:
        """All of the committed observations and summaries gone at once: a lost tree, not a forget."""
        tracked = [p for p in self.git.z_list("ls-files", "-z") if p.endswith(".md")]
        return bool(tracked) and {p for p in deleted if p.endswith(".md")} >= set(tracked)

    def _reject(self, relpath: str, reason: str) -> None:
        self.report["rejected"].append({"path": relpath, "reason": reason})

    def _apply(self, files: FileTransaction, incoming: list[sync_adopt.Incoming], deleted: list[str]) -> None:
        incoming, conflicts = split_duplicates(incoming)
        self.report["conflicts"] += conflicts
        result = sync_adopt.apply(self.memory, files, incoming, deleted)
        self.report["adopted"] += result["adopted"]
        self.report["forgotten"] += result["forgotten"]
        self.report["notes"] += result["notes"]

    def _commit(self, what: str, *, unstage: Sequence[str] = ()) -> None:
        """Stage the whole tree (minus ``unstage``: rejected files stay out of history) and commit it."""
        self.git.run("add", "-A", what="git add")
        if unstage and self._has_head():
            self.git.run("reset", "-q", "--", *unstage, what="git reset")
        elif unstage:
            self.git.run("rm", "-q", "--cached", "--", *unstage, what="git rm")
        if self._has_head() and self.git.run("diff", "--cached", "--quiet", check=False).returncode == 0:
            return
        n = self.git.text("diff", "--cached", "--name-only", "-z").count("\0")
        self.git.run("commit", "-q", "--allow-empty", "-m", f"cmem sync: {n} {what}", what="git commit")
        self.report["committed"] += n

    def _local_changes(self) -> tuple[list[str], list[str]]:
        """(added or modified paths, deleted paths) in the tree since the last commit."""
        changed: list[str] = []
        deleted: list[str] = []
        entries = self.git.z_list("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
        for entry in entries:
            status, relpath = entry[:2], entry[3:]
            if "D" in status:
                deleted.append(relpath)
            else:
                changed.append(relpath)
        return changed, deleted

    def _merge(self, *, first: bool) -> None:
        """Merge the fetched branch, resolve every conflict, adopt what arrived; undo it all on failure."""
        target = f"{REMOTE}/{BRANCH}"
        if self.git.ok("merge-base", "--is-ancestor", target, "HEAD"):
            return  # nothing new
        before = self.git.text("rev-parse", "HEAD").strip()
        try:
            with self.memory._write(fsync=False, skip_identical=True) as files:
                args = ["merge", "-q", "--no-edit"]
                if first:
                    args.append("--allow-unrelated-histories")
                merged = self.git.run(*args, target, check=False)
                copies: list[sync_adopt.Incoming] = []
                if merged.returncode != 0:
                    if not self.git.z_list("ls-files", "-u", "-z"):
                        raise SyncError(f"git merge failed: {_last(merged)}")
                    conflicts, copies = resolve_conflicts(self.memory, self.git)
                    self.report["conflicts"] += conflicts
                    message = f"cmem sync: merge, {len(conflicts)} conflict(s) resolved"
                    self.git.run("commit", "-q", "--no-edit", "-m", message, what="git commit (merge)")
                self._adopt_arrivals(files, before, copies)
        except BaseException:
            self.git.run("merge", "--abort", check=False)
            self.git.run("reset", "-q", "--hard", before, check=False)
            raise
        self._commit("file(s) written while adopting (conflict copies, moves, normalised files)")

    def _adopt_arrivals(self, files: FileTransaction, before: str, copies: list[sync_adopt.Incoming]) -> None:
        entries = self.git.z_list("diff", "--name-status", "-z", "--no-renames", before, "HEAD")
        changed: list[str] = []
        deleted: list[str] = []
        for status, relpath in zip(entries[::2], entries[1::2], strict=False):
            if relpath.endswith(".md"):
                (deleted if status == "D" else changed).append(relpath)
        incoming = list(copies)
        for relpath in changed:
            try:
                data = (self.root / relpath).read_bytes()
                incoming.append(sync_adopt.parse_file(self.memory, relpath, data))
            except CmemError as exc:
                self._reject(relpath, exc.message)
            except OSError as exc:
                self._reject(relpath, exc.strerror or str(exc))
        self._apply(files, incoming, deleted)

    def _push(self) -> bool:
        """Push; False when the remote moved on meanwhile (fetch and merge again), SyncError if refused."""
        if self.git.ok("rev-parse", "-q", "--verify", f"refs/remotes/{REMOTE}/{BRANCH}") and self.git.ok(
            "merge-base", "--is-ancestor", "HEAD", f"{REMOTE}/{BRANCH}"
        ):
            return True  # the remote already has everything
        proc = self.git.run("push", "-q", REMOTE, f"HEAD:refs/heads/{BRANCH}", check=False)
        if proc.returncode == 0:
            self.report["pushed"] = True
            return True
        message = proc.stderr.decode("utf-8", "replace")
        if "[rejected]" in message and ("fetch first" in message or "non-fast-forward" in message):
            return False
        raise SyncError(f"git push failed: {_last(proc)}")


def _last(proc: Any) -> str:
    from cmem_cli.sync.git import last_line

    return last_line(proc.stderr or proc.stdout)


def run_sync(memory: Memory, url: str | None = None) -> dict[str, Any]:
    """`cmem sync [init URL]` under the sync lock."""
    with sync_lock(memory.config.home):
        syncer = Syncer(memory)
        return syncer.init(url) if url is not None else syncer.sync()
