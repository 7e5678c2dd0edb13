"""The git repository that carries the export tree to other machines: where it lives, how git is run in
it, the one-sync-at-a-time lock, and the debris a killed git leaves behind.

git's own directory is ``<home>/sync.git`` (0700), outside the export tree: ``grep -r`` over the export
never reads git's files, and a ``git status`` a person runs there under umask 022 (which rewrites git's
index 0644) loosens nothing doctor has to police, since nobody else can enter a 0700 folder. The export
tree holds only a ``.git`` pointer file (``gitdir: ../sync.git``), so plain git commands still work in
the tree; cmem itself always names both folders (``--git-dir``, ``--work-tree``), so a pointer file that
is deleted or stale changes nothing for it. A tree connected before this layout keeps working where it
is and is moved into the home on its next sync (:func:`move_into_home`).

git runs with a fixed environment: the user's and the system's git configuration are ignored (no pager,
editor, signing or hook surprises from cron), prompts are off (a remote that wants a password fails
instead of hanging), cmem's commits carry a fixed author, and every file git creates is private (umask
077).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cmem_cli.core.errors import SyncError

if TYPE_CHECKING:
    import subprocess  # imported where git runs: `cmem status` reads the repository's config alone

GIT_DIR_NAME = "sync.git"
MARKER_SECTION = "cmem"  # `cmem sync init` sets cmem.sync = true in the repository's config
MARKER = "cmem.sync"
REMOTE = "origin"
BRANCH = "main"
REGULAR_MODES = ("100644", "100755")  # git's modes of a plain file; 120000 a symlink, 160000 a submodule

# Options every git call gets: they override anything a repository's own config might say.
FIXED_OPTIONS = (
    "-c", "core.quotepath=false",
    "-c", "core.autocrlf=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "commit.gpgsign=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "advice.detachedHead=false",
    "-c", "init.defaultBranch=main",
)  # fmt: skip
PASSED_THROUGH = ("PATH", "HOME", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "TMPDIR", "SYSTEMROOT")


def git_environment() -> dict[str, str]:
    """The whole environment git runs with: nothing from the caller but what reaching a remote needs."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    import socket

    author = os.environ.get("CMEM_SYNC_AUTHOR") or f"cmem on {socket.gethostname() or 'localhost'}"
    email = os.environ.get("CMEM_SYNC_EMAIL") or "cmem@localhost"
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="true",
        SSH_ASKPASS="true",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_EDITOR="true",
        GIT_MERGE_AUTOEDIT="no",
        GIT_AUTHOR_NAME=author,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=author,
        GIT_COMMITTER_EMAIL=email,
        LC_ALL="C",
    )
    return env


class Git:
    """git commands run on one repository: ``git_dir`` (None: git finds it from ``root``) and its tree."""

    def __init__(self, root: Path, git_dir: Path | None = None):
        self.root = root
        self.git_dir = git_dir
        self.env = git_environment()

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None, what: str | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; a failure (when ``check``) raises SyncError naming what failed in one line."""
        import subprocess

        where = [f"--git-dir={self.git_dir}", f"--work-tree={self.root}"] if self.git_dir else []
        try:
            proc = subprocess.run(
                ["git", *FIXED_OPTIONS, *where, *args],
                cwd=self.root,
                env=self.env,
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                umask=0o077,
                check=False,
            )
        except FileNotFoundError:
            raise SyncError("git is not installed (cmem sync needs git on PATH)") from None
        if check and proc.returncode != 0:
            raise SyncError(f"{what or 'git ' + args[0]} failed: {last_line(proc.stderr or proc.stdout)}")
        return proc

    def text(self, *args: str, what: str | None = None, input: bytes | None = None) -> str:
        return self.run(*args, what=what, input=input).stdout.decode("utf-8", "replace")

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def z_list(self, *args: str, input: bytes | None = None) -> list[str]:
        """Output of a ``-z`` command, split on NUL."""
        return [item for item in self.text(*args, input=input).split("\0") if item]


def last_line(output: bytes) -> str:
    """The most telling line of git's output (its last non-empty one), with the ``fatal:`` prefix dropped."""
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return "no message from git"
    for prefix in ("fatal: ", "error: "):
        for line in lines:
            if line.startswith(prefix):
                return line[len(prefix) :]
    return lines[-1]


# -- where the repository is ------------------------------------------------------------------------------
def home_git_dir(home: Path) -> Path:
    return home / GIT_DIR_NAME


def git_dir_of(home: Path, export: Path) -> Path | None:
    """The repository cmem syncs through: ``<home>/sync.git``, or a ``.git`` folder inside the tree (a
    tree connected before git's folder moved to the home, or one a person keeps under git)."""
    for candidate in (home_git_dir(home), export / ".git"):
        if candidate.is_dir():
            return candidate
    return None


def indexed_links(home: Path, export: Path) -> set[str]:
    """Paths git's index holds as a link (or submodule) in the export tree's repository (none without
    one). Under ``core.symlinks=false`` git checks a link out as a small text file holding its target:
    only the index tells it from a memory a person wrote."""
    git_dir = git_dir_of(home, export)
    if git_dir is None:
        return set()
    try:
        listed = Git(export, git_dir).run("ls-files", "-s", "-z", check=False).stdout
    except SyncError:  # no git installed: no index to read either
        return set()
    links = set()
    for entry in listed.split(b"\0"):
        info, _, relpath = entry.decode("utf-8", "replace").partition("\t")
        if relpath and info.split()[0] not in REGULAR_MODES:
            links.add(relpath)
    return links


def _config_value(git_dir: Path, wanted_section: str, wanted_key: str) -> str | None:
    """One value of the repository's config, read directly (no git process: status and every sync read
    it); ``wanted_section`` lower-case as git writes it (``cmem``, ``remote "origin"``)."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == wanted_section and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == wanted_key:
                return config_text(value)
    return None


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def config_text(raw: str) -> str:
    """A value as git reads it from its config file: quotes removed, escapes read, a ``#`` or ``;``
    outside quotes starting a comment (git writes a URL holding either quoted, so a password with
    ``#`` is not cut short, nor shown whole with its quotes)."""
    out: list[str] = []
    quoted = False
    chars = iter(raw.strip())
    for char in chars:
        if char == '"':
            quoted = not quoted
        elif char == "\\":
            following = next(chars, "")
            out.append(_ESCAPES.get(following, following))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


def _marked(git_dir: Path) -> bool:
    """Does the repository's config say ``cmem.sync = true``?"""
    return (_config_value(git_dir, MARKER_SECTION, "sync") or "").lower() == "true"


def remote_url(git_dir: Path) -> str | None:
    """The URL this repository pushes to, as its config holds it (credentials and all: see
    :func:`cmem_cli.services.inbound.remote_state.shown_url`)."""
    return _config_value(git_dir, f'remote "{REMOTE}"', "url")


def connected_git_dir(home: Path, export: Path) -> Path | None:
    """The repository `cmem sync init` connected this tree to; None when there is none (a tree a person
    keeps under git with a remote of their own is not connected: cmem never commits or pushes there)."""
    for candidate in (home_git_dir(home), export / ".git"):
        if candidate.is_dir() and _marked(candidate):
            return candidate
    return None


def is_connected(home: Path, export: Path) -> bool:
    return connected_git_dir(home, export) is not None


def pointer_text(home: Path, export: Path) -> str:
    return f"gitdir: {os.path.relpath(home_git_dir(home), export)}\n"


def write_pointer(home: Path, export: Path) -> None:
    """The ``.git`` file that lets plain git commands find ``<home>/sync.git`` from inside the tree."""
    from cmem_export.atomic import atomic_write

    pointer = export / ".git"
    text = pointer_text(home, export)
    if pointer.is_dir():
        return
    with contextlib.suppress(OSError):
        if pointer.read_text(encoding="utf-8") == text:
            return
    atomic_write(pointer, text)


def move_into_home(home: Path, export: Path) -> Path | None:
    """Move a connected ``.git`` folder out of the tree into ``<home>/sync.git`` and leave a pointer file;
    returns the repository's folder (where it was if it cannot move: another filesystem). Kill-safe: the
    move is one rename, and the pointer is written again on every sync."""
    inside, target = export / ".git", home_git_dir(home)
    if not target.exists() and inside.is_dir() and _marked(inside):
        try:
            os.rename(inside, target)
        except OSError:
            return inside
    if target.is_dir():
        write_pointer(home, export)
        return target
    return connected_git_dir(home, export)


# -- debris of a killed git ----------------------------------------------------------------------------
LOCK_AGE_SECONDS = 2.0  # a lock this young may be a git that is starting: wait, then look again
UNKNOWN_AGE_SECONDS = 600.0  # when running git processes cannot be seen, only this old a lock is stale


@dataclass
class GitDebris:
    """What a git killed mid-command leaves: lock files, and an unfinished merge (MERGE_HEAD)."""

    locks: list[Path] = field(default_factory=list)
    merge: bool = False

    def __bool__(self) -> bool:
        return bool(self.locks or self.merge)

    def describe(self, git_dir: Path) -> list[str]:
        names = [path.relative_to(git_dir).as_posix() for path in self.locks]
        return names + (["MERGE_HEAD (an unfinished merge)"] if self.merge else [])


def _lock_files(git_dir: Path) -> list[Path]:
    """``*.lock`` files in git's folder and under ``refs/`` (index.lock, HEAD.lock, a branch's lock...)."""
    found = []
    with contextlib.suppress(OSError):
        found += [git_dir / name for name in os.listdir(git_dir) if name.endswith(".lock")]
    refs = git_dir / "refs"
    if refs.is_dir():
        for folder, _dirs, names in os.walk(refs):
            found += [Path(folder, name) for name in names if name.endswith(".lock")]
    return sorted(found)


def git_running_in(places: list[Path]) -> bool | None:
    """Is a git process working in one of ``places`` (its working folder inside one)? None: cannot tell
    (no /proc, or a git process whose folder this user cannot read)."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return None
    roots = [os.path.realpath(p) for p in places]
    unknown = False
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "comm"), encoding="utf-8", errors="replace") as fh:
                if not fh.read().strip().startswith("git"):
                    continue
            cwd = os.readlink(os.path.join(entry.path, "cwd"))
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended meanwhile (ENOENT or ESRCH, as far as /proc had got)
        except OSError:
            unknown = True
            continue
        if any(cwd == root or cwd.startswith(root + os.sep) for root in roots):
            return True
    return None if unknown else False


def find_git_debris(git_dir: Path, worktree: Path, *, wait: bool = False) -> GitDebris:
    """Locks and a MERGE_HEAD that no live git holds. A git process working in the tree means none is
    debris; when processes cannot be seen, only locks older than ten minutes are. ``wait``: a lock
    younger than two seconds is looked at again once it is that old (a sync that must clear it), else
    it is left alone (doctor reports only what is certainly stale)."""
    locks = _lock_files(git_dir)
    merge = (git_dir / "MERGE_HEAD").exists()
    if not locks and not merge:
        return GitDebris()
    running = git_running_in([worktree, git_dir])
    if running:
        return GitDebris()
    youngest = UNKNOWN_AGE_SECONDS if running is None else LOCK_AGE_SECONDS
    now = time.time()
    stale = []
    for lock in locks:
        try:
            age = now - lock.lstat().st_mtime
        except FileNotFoundError:
            continue
        if age < youngest and wait and running is False:
            time.sleep(youngest - age)
            if git_running_in([worktree, git_dir]):
                return GitDebris()
            age = youngest
        if age >= youngest:
            stale.append(lock)
    if merge and running is None:
        with contextlib.suppress(FileNotFoundError):
            merge = now - (git_dir / "MERGE_HEAD").lstat().st_mtime >= youngest
    return GitDebris([p for p in stale if p.exists()], merge)


def clear_git_debris(git: Git, debris: GitDebris) -> None:
    """Remove stale locks and abandon an unfinished merge (its result was never committed, and nothing
    of it was adopted: the next sync merges again)."""
    for lock in debris.locks:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
    if debris.merge:
        git.run("merge", "--abort", check=False)
        if git.git_dir is not None and (git.git_dir / "MERGE_HEAD").exists():
            for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):
                with contextlib.suppress(FileNotFoundError):
                    (git.git_dir / name).unlink()
            git.run("reset", "-q", check=False)
