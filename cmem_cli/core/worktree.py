"""Reading a git work tree the way git would, without running git: its top level, HEAD, branch, origin and
the blob hash of a file.

A hook records an observation on every tool call and a search checks the files its rows cite, so neither
may start a git process per file (or at all, when a few small files under ``.git`` tell the same). Only
what a work tree states in plain files is read here: ``.git`` (a folder, or a file naming one for linked
worktrees and submodules), ``HEAD``, loose refs, ``packed-refs`` and ``config``. Reachability between
commits needs git itself (see :func:`unreachable`).
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from pathlib import Path

_SCP_URL = r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$"  # git@host:owner/repo.git (compiled on first use)
_GIT_TIMEOUT_S = 10
# What is read of a checkout, at most: refs, HEAD, commondir and gitdir files hold one line; a config or a
# packed-refs larger than these is not a repository cmem reads (it is left unanchored, never waited on).
SMALL_BYTES = 64 * 1024
CONFIG_BYTES = 1 << 20
PACKED_REFS_BYTES = 16 << 20
# A cited file larger than this is anchored by its size and modification time only (never read whole).
MAX_CITED_BYTES = 8 << 20
_HEX_DIGITS = "0123456789abcdef"

# Plain classes with slots, not named tuples: every search and hook imports this module, and a named
# tuple costs ten times as much to create at import.


class Repo:
    """One git work tree: ``root`` is its top-level folder, ``git_dir`` the folder HEAD lives in (a linked
    worktree's own), ``common_dir`` where refs, packed-refs, config and the objects live."""

    __slots__ = ("root", "git_dir", "common_dir")

    def __init__(self, root: str, git_dir: str, common_dir: str) -> None:
        self.root, self.git_dir, self.common_dir = root, git_dir, common_dir

    def __repr__(self) -> str:
        return f"Repo({self.root!r})"


class Head:
    """What HEAD names: ``branch`` is None on a detached HEAD, ``commit`` None before the first commit."""

    __slots__ = ("branch", "commit")

    def __init__(self, branch: str | None, commit: str | None) -> None:
        self.branch, self.commit = branch, commit


def is_commit_id(text: str) -> bool:
    """A full SHA-1 or SHA-256 object id in lower-case hex (what refs and HEAD hold)."""
    return len(text) in (40, 64) and not text.strip(_HEX_DIGITS)


def blob_hash(path: str | os.PathLike[str]) -> str | None:
    """The file's git blob id as ``git hash-object`` computes it (sha1 of ``blob <size>\\0<content>``; a
    symbolic link hashes its target text), None when it is not a regular file or a link, is larger than
    :data:`MAX_CITED_BYTES`, or unreadable.

    Content filters (``core.autocrlf``, clean filters, LFS) are not applied: cmem compares its own hashes,
    so only sameness matters, and an uncommitted edit counts as a change."""
    data = cited_bytes(path)
    return None if data is None else hash_blob(data)


def hash_blob(data: bytes) -> str:
    """``git hash-object`` of these bytes."""
    try:  # the interpreter's own SHA-1: importing hashlib loads OpenSSL, a cost a search need not pay
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's, no stub
    except ImportError:
        from hashlib import sha1
    digest = sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return str(digest.hexdigest())


def cited_bytes(path: str | os.PathLike[str]) -> bytes | None:
    """What git would hash for a cited file: a symbolic link's target text, a regular file's bytes (at
    most :data:`MAX_CITED_BYTES`); None for anything else (a FIFO, a device, a folder, a larger file)."""
    try:
        info = os.lstat(path)
        if stat_module.S_ISLNK(info.st_mode):
            return os.fsencode(os.readlink(path))
    except OSError:
        return None
    if not stat_module.S_ISREG(info.st_mode):
        return None
    return read_regular(path, MAX_CITED_BYTES, follow=False)


def read_regular(path: str | os.PathLike[str], limit: int, *, follow: bool = True) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None, without ever
    waiting: a checkout is read like an archive from a stranger. A FIFO, a socket or a device (a ref
    symlinked to ``/dev/zero``) is refused before it is opened (``stat``), opened without blocking
    (``O_NONBLOCK``) in case it was swapped in meanwhile, checked again on the open descriptor (``fstat``),
    and read no further than ``limit`` (a file that grows past it is refused too). ``follow`` False: a
    symbolic link is not followed (``O_NOFOLLOW``)."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat_module.S_ISREG(info.st_mode) or info.st_size > limit:
        return None
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    )
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return None if len(data) > limit else data
    except OSError:
        return None
    finally:
        os.close(fd)


def inside(path: str, root: str, seen: dict[str, str] | None = None) -> bool:
    """Whether ``path`` lies in the work tree ``root`` once the symbolic links of its folders are followed
    (``repo/conf -> ~/.aws`` makes ``repo/conf/credentials`` a file outside it): the file itself may be
    a link (git stores the link, cmem hashes its text). ``seen`` keeps resolved folders across calls."""
    known = {} if seen is None else seen

    def real(folder: str) -> str:
        if folder not in known:
            known[folder] = os.path.realpath(folder)
        return known[folder]

    real_root = real(root)
    folder = real(os.path.dirname(os.path.abspath(path)))
    return folder == real_root or folder.startswith(real_root.rstrip(os.sep) + os.sep)


def find_repo(path: str | os.PathLike[str]) -> Repo | None:
    """The work tree that holds ``path`` (a file or a folder, which need not exist), or None."""
    start = Path(os.path.abspath(path))
    for candidate in (start, *start.parents):
        dot_git = candidate / ".git"
        try:
            if dot_git.is_dir():
                if (dot_git / "HEAD").is_file():
                    return Repo(str(candidate), str(dot_git), str(dot_git))
                continue
            if dot_git.is_file():
                return _linked(candidate, dot_git)
        except OSError:
            return None
    return None


def _linked(root: Path, dot_git: Path) -> Repo | None:
    """A ``.git`` file (``gitdir: PATH``): a linked worktree (its git dir names a ``commondir``) or a
    submodule (its git dir is the whole repository)."""
    text = (_read(dot_git) or "").strip()
    if not text.startswith("gitdir:"):
        return None
    git_dir = (root / text[len("gitdir:") :].strip()).resolve()
    common = git_dir
    named = (_read(git_dir / "commondir") or "").strip()
    if named:
        common = (git_dir / named).resolve()
    if not (git_dir / "HEAD").is_file():
        return None
    return Repo(str(root), str(git_dir), str(common))


def _read(path: str | os.PathLike[str], limit: int = SMALL_BYTES) -> str | None:
    """A small plain file of the checkout as text (see :func:`read_regular`), None otherwise."""
    data = read_regular(path, limit)
    return None if data is None else data.decode("utf-8", "replace")


def head(repo: Repo) -> Head:
    """The branch HEAD is on (None when detached) and the commit it points at (None before the first)."""
    text = (_read(os.path.join(repo.git_dir, "HEAD")) or "").strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
        return Head(branch, ref_commit(repo, ref))
    return Head(None, text if is_commit_id(text) else None)


def branch_commit(repo: Repo, branch: str) -> str | None:
    """The commit local branch ``branch`` points at, None when there is no such branch."""
    return ref_commit(repo, "refs/heads/" + branch)


def ref_commit(repo: Repo, ref: str, depth: int = 0) -> str | None:
    """The commit a ref names: its loose file (in the worktree's or the common git dir), else packed-refs.
    A symbolic ref is followed five deep at most (git's own limit; a cycle ends there)."""
    if ".." in ref.split("/") or ref.startswith("/") or depth > 5:
        return None
    for base in dict.fromkeys((repo.git_dir, repo.common_dir)):
        text = _read(os.path.join(base, ref))
        if text is not None:
            value = text.strip()
            if value.startswith("ref:"):
                return ref_commit(repo, value[4:].strip(), depth + 1)
            return value if is_commit_id(value) else None
    packed = _read(os.path.join(repo.common_dir, "packed-refs"), PACKED_REFS_BYTES) or ""
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref and is_commit_id(commit):
            return commit
    return None


def branch_fork(repo: Repo, branch: str) -> str | None:
    """The commit local branch ``branch`` was created at from a local line (``git checkout -b``, ``git
    switch -c``, ``git branch NAME [LOCAL]``), as the first entry of its reflog says; None when its reflog
    says otherwise (created from a remote branch, a clone), is gone or unreadable. A memory recorded on
    the branch at that commit was made before the branch's first commit: its work is not in that commit."""
    if ".." in branch.split("/") or branch.startswith("/"):
        return None
    line = _first_line(os.path.join(repo.common_dir, "logs", "refs", "heads", branch))
    old, _, rest = line.partition(" ")
    new, _, rest = rest.partition(" ")
    _, tab, message = rest.partition("\t")
    if not tab or old.strip("0") or not is_commit_id(new) or not message.startswith("branch: Created from "):
        return None
    source = message[len("branch: Created from ") :].strip()
    if source != "HEAD" and ref_commit(repo, "refs/heads/" + source.removeprefix("refs/heads/")) is None:
        return None  # from a remote branch (a teammate's work), a tag, a commit: not a fork of a local line
    return new


def _first_line(path: str, limit: int = 4096) -> str:
    """The first line of a file of any size (its first ``limit`` bytes), read as :func:`read_regular`
    reads: never from a FIFO or a device, never waiting; empty when it cannot be read."""
    try:
        if not stat_module.S_ISREG(os.stat(path).st_mode):
            return ""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return ""
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return ""
        data = os.read(fd, limit)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")


def remote_key(repo: Repo) -> str | None:
    """The repository's name on every machine: its ``origin`` remote's URL (else the first remote's),
    without scheme, credentials, port or ``.git`` (``github.com/owner/repo``); None without a remote."""
    config = _read(os.path.join(repo.common_dir, "config"), CONFIG_BYTES) or ""
    remotes: dict[str, str] = {}
    section: str | None = None
    for raw in config.splitlines():
        line = raw.strip()
        if line.startswith("["):
            match = re.match(r'^\[\s*remote\s+"(.*)"\s*\]', line)
            section = match.group(1) if match else None
        elif section is not None and section not in remotes:
            name, sep, value = line.partition("=")
            if sep and name.strip().lower() == "url" and value.strip():
                remotes[section] = value.strip().strip('"')
    url = remotes.get("origin") or next(iter(remotes.values()), None)
    return normalize_url(url) if url else None


def normalize_url(url: str) -> str:
    """``https://user:token@GitHub.com:443/Owner/Repo.git/`` and ``git@github.com:Owner/Repo`` ->
    ``github.com/Owner/Repo``: one name for a repository however it is cloned, never with credentials."""
    url = url.strip()
    host, path = "", url
    if "://" in url:
        rest = url.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2]  # no user or password
        if not host.startswith("["):
            host = host.partition(":")[0]  # no port
    elif (match := re.match(_SCP_URL, url)) and not os.path.isabs(url):
        host, path = match.group(1), match.group(2)
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4].rstrip("/")
    if host:
        return f"{host.lower()}/{path}"
    return "/" + path if url.startswith(("/", "file:")) else path


def plain(repo: Repo) -> bool:
    """Whether git may be run in this work tree without waiting for ever: the files every git command
    opens (``HEAD``, the ref it names, ``packed-refs``, ``config``, ``commondir``) are regular files or
    absent. git opens them without ``O_NONBLOCK``, so a FIFO there would hold it (and cmem) until the
    timeout; a few stats tell beforehand."""
    names = [
        os.path.join(repo.git_dir, "HEAD"),
        os.path.join(repo.git_dir, "commondir"),
        os.path.join(repo.common_dir, "packed-refs"),
        os.path.join(repo.common_dir, "config"),
    ]
    text = (_read(names[0]) or "").strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        if ".." not in ref.split("/") and not ref.startswith("/"):
            names += [os.path.join(repo.git_dir, ref), os.path.join(repo.common_dir, ref)]
    for name in names:
        try:
            info = os.stat(name)
        except OSError:
            continue
        if not stat_module.S_ISREG(info.st_mode):
            return False
    return True


def unreachable(repo: Repo, head: str, commits: list[str]) -> set[str] | None:
    """Which of ``commits`` are not reachable from commit ``head`` (not merged into it), in one git
    process: ``git rev-list C... --not HEAD`` lists exactly the commits reachable from some C but not from
    HEAD, so a C it prints is one HEAD does not contain. Commits this repository does not have count as
    reachable (nothing says otherwise). None when git cannot answer (no git, no such head)."""
    wanted = [c for c in dict.fromkeys(commits) if is_commit_id(c)]
    if not wanted:
        return set()
    if not is_commit_id(head) or not plain(repo):
        return None
    import subprocess  # only a search that found memories of another branch runs git, once per HEAD

    try:
        proc = subprocess.run(
            ["git", "-C", repo.root, "rev-list", "--ignore-missing", *wanted, "--not", head],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            env=_git_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    printed = set(proc.stdout.decode("ascii", "replace").split())
    return {c for c in wanted if c in printed}


def stored_loose(repo: Repo, object_id: str) -> bool:
    """Whether the object is a loose file of the repository's object store (a stat, no git)."""
    return os.path.isfile(os.path.join(repo.common_dir, "objects", object_id[:2], object_id[2:]))


def packs_stamp(repo: Repo) -> int:
    """The modification time (ns) of the object store's pack folder, 0 when it has none: it moves when a
    fetch, a push or a repack adds or removes a pack."""
    try:
        return os.stat(os.path.join(repo.common_dir, "objects", "pack")).st_mtime_ns
    except OSError:
        return 0


def _git_env() -> dict[str, str]:
    """The caller's environment without what would point git elsewhere (GIT_DIR set by a hook, say)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["LC_ALL"] = "C"
    return env
