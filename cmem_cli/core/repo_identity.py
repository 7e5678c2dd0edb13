"""Which repository a folder's work belongs to, the same for every worktree and clone of it.

A project inside git is keyed by its repository, not by the folder it was checked out into: a linked
worktree in ``../app-feature`` and a second clone in ``~/src/app`` are the same memory, and two unrelated
repositories that are both called ``api`` are not. The key is the ``origin`` remote's URL normalised as the
anchors normalise it (``github.com/owner/app``), else the repository's own folder (where its git common
directory lives: ``/home/me/app`` for ``/home/me/app/.git``, ``/srv/app`` for a bare ``/srv/app.git``), so
a clone whose origin is that folder shares it. A remote that is itself a folder on this machine is followed
(a few hops at most) to the repository it clones.

Only plain files are read (:mod:`cmem_cli.core.worktree`): ``.git``, ``commondir`` and ``config``, a few
hundred bytes, with no git process, because every hook call asks.
"""

from __future__ import annotations

import os

from cmem_cli.core import worktree

_MAX_HOPS = 3  # local remotes followed: a clone of a clone of a clone


class RepoIdentity:
    """``key``: the repository's name everywhere (see the module); ``name``: its short name (the key's last
    part), what a project is called unless another repository already took it; ``owner``: the part before
    that, which tells two same-named repositories apart."""

    __slots__ = ("key", "name", "owner")

    def __init__(self, key: str, name: str, owner: str) -> None:
        self.key, self.name, self.owner = key, name, owner

    def __repr__(self) -> str:
        return f"RepoIdentity({self.key!r})"


# The last answers of this process by folder, each with the stat of the config it read: a hook asks before
# and after it opens the store, and a long-lived MCP server asks on every search.
_answers: dict[str, tuple[RepoIdentity | None, str, int]] = {}


def repository_identity(directory: str | os.PathLike[str]) -> RepoIdentity | None:
    """The identity of the git repository holding ``directory``, None outside git."""
    folder = os.path.abspath(directory)
    known = _answers.get(folder)
    if known is not None and _stamp(known[1]) == known[2]:
        return known[0]
    repo = worktree.find_repo(folder)
    if repo is None:
        return None
    config = os.path.join(repo.common_dir, "config")
    stamp = _stamp(config)
    identity = identity_of_key(_key(repo))
    if len(_answers) > 64:
        _answers.clear()
    _answers[folder] = (identity, config, stamp)
    return identity


def _stamp(path: str) -> int:
    """When the file last changed (ns), -1 when it cannot be read: a remote added or changed moves it."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def identity_of_key(key: str) -> RepoIdentity | None:
    """A key split into its short name and owner; None for a key with no name in it."""
    parts = [part for part in key.rstrip("/").split("/") if part]
    if not parts:
        return None
    return RepoIdentity(key, parts[-1], parts[-2] if len(parts) > 1 else "")


def key_of_remote(remote: str | None, folder: str | None = None) -> str | None:
    """The key for a repository whose normalised remote URL is ``remote`` (an anchor's ``repo``) or, with
    none, whose own folder is ``folder``; a remote that is a folder on this machine is followed."""
    if remote is None:
        return _folder_key(folder) if folder else None
    for _ in range(_MAX_HOPS):
        if not os.path.isabs(remote):
            return remote
        repo = _repo_at(remote)
        if repo is None:
            return remote
        further = worktree.remote_key(repo)
        if further is None:
            return _common_key(repo)
        remote = further
    return remote


def _key(repo: worktree.Repo) -> str:
    remote = worktree.remote_key(repo)
    if remote is None:
        return _common_key(repo)
    return key_of_remote(remote) or remote


def _common_key(repo: worktree.Repo) -> str:
    """A repository without a remote: the folder its common git directory belongs to."""
    return _folder_key(os.path.realpath(repo.common_dir))


def _folder_key(common: str) -> str:
    common = common.rstrip("/") or "/"
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    return common[:-4] if common.endswith(".git") else common


def _repo_at(path: str) -> worktree.Repo | None:
    """The repository at a local remote's path: a work tree (``PATH/.git``) or a bare one (``PATH.git``
    or ``PATH`` holding ``HEAD`` and ``config``)."""
    for folder in (path, path + ".git"):
        dot_git = os.path.join(folder, ".git")
        if os.path.isdir(dot_git) and os.path.isfile(os.path.join(dot_git, "config")):
            return worktree.Repo(folder, dot_git, dot_git)
        if os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isfile(os.path.join(folder, "config")):
            return worktree.Repo(folder, folder, folder)
    return None
