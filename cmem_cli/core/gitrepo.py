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
    symbolic link hashes its target text), None when it is not a regular file or a link, or unreadable.

    Content filters (``core.autocrlf``, clean filters, LFS) are not applied: cmem compares its own hashes,
    so only sameness matters, and an uncommitted edit counts as a change."""
    try:
        info = os.lstat(path)
        if stat_module.S_ISLNK(info.st_mode):
            data = os.fsencode(os.readlink(path))
        elif stat_module.S_ISREG(info.st_mode):
            with open(path, "rb") as handle:
                data = handle.read()
        else:
            return None
    except OSError:
        return None
    try:  # the interpreter's own SHA-1: importing hashlib loads OpenSSL, a cost a search need not pay
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's, no stub
    except ImportError:
        from hashlib import sha1
    digest = sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return str(digest.hexdigest())


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
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = (root / text[len("gitdir:") :].strip()).resolve()
    common = git_dir
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        common = (git_dir / named).resolve()
    except OSError:
        pass
    if not (git_dir / "HEAD").is_file():
        return None
    return Repo(str(root), str(git_dir), str(common))


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


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


def ref_commit(repo: Repo, ref: str) -> str | None:
    """The commit a ref names: its loose file (in the worktree's or the common git dir), else packed-refs."""
    if ".." in ref.split("/") or ref.startswith("/"):
        return None
    for base in dict.fromkeys((repo.git_dir, repo.common_dir)):
        text = _read(os.path.join(base, ref))
        if text is not None:
            value = text.strip()
            if value.startswith("ref:"):
                return ref_commit(repo, value[4:].strip())
            return value if is_commit_id(value) else None
    packed = _read(os.path.join(repo.common_dir, "packed-refs")) or ""
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref and is_commit_id(commit):
            return commit
    return None


def remote_key(repo: Repo) -> str | None:
    """The repository's name on every machine: its ``origin`` remote's URL (else the first remote's),
    without scheme, credentials, port or ``.git`` (``github.com/owner/repo``); None without a remote."""
    config = _read(os.path.join(repo.common_dir, "config")) or ""
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


def unreachable(repo: Repo, head: str, commits: list[str]) -> set[str] | None:
    """Which of ``commits`` are not reachable from commit ``head`` (not merged into it), in one git
    process: ``git rev-list C... --not HEAD`` lists exactly the commits reachable from some C but not from
    HEAD, so a C it prints is one HEAD does not contain. Commits this repository does not have count as
    reachable (nothing says otherwise). None when git cannot answer (no git, no such head)."""
    wanted = [c for c in dict.fromkeys(commits) if is_commit_id(c)]
    if not wanted:
        return set()
    if not is_commit_id(head):
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
