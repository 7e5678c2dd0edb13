"""Reading a file that someone else may have put there, without ever blocking or following a link.

A FIFO named ``notes.md`` blocks a plain ``open()`` until a writer appears (forever, for `cmem get` or an
MCP server whose later calls queue behind it), a device can be read without end, and a symlink can point
anywhere. :func:`read_regular` opens without following a final symlink and without blocking, checks that
what it opened is a regular file, and reads at most ``limit`` bytes.

A tree other people write into (the export tree, which git fills from a shared repository) needs more:
:func:`read_in_tree` is the one way cmem reads a file there. It walks the path folder by folder without
following a link anywhere on it (a symlinked folder leads out of the tree as well as a symlinked file),
refuses ``..`` and absolute paths, and refuses a hard link (a file with a second name may be one from
outside the tree: git never makes one).
"""

from __future__ import annotations

import errno
import os
import stat


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket, folder or symlink: nothing cmem reads."""


class FileTooLarge(OSError):
    """The file is larger than the caller's limit; ``size`` says how large (nothing was read)."""

    def __init__(self, path: str, size: int, limit: int):
        super().__init__(errno.EFBIG, f"file too large ({size} bytes, limit {limit})", path)
        self.size = size


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``; :class:`NotRegularFile` for anything else,
    :class:`FileTooLarge` when it is over ``limit`` bytes, OSError if it cannot be read. A file that grows
    while it is read yields ``limit`` + 1 bytes at most."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
            raise NotRegularFile(
                errno.ELOOP, "a symbolic link, not a regular file", os.fspath(path)
            ) from None
        raise
    return _read_open(fd, os.fspath(path), limit, one_name=False)


def _read_open(fd: int, shown: str, limit: int | None, *, one_name: bool) -> bytes:
    """Read the file open at ``fd`` (closed here) when it is a regular file within ``limit``; ``one_name``:
    refuse a file with more than one name too (a hard link may be a file outside the tree)."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", shown)
        if one_name and info.st_nlink > 1:
            raise NotRegularFile(
                errno.EMLINK, f"a hard link ({info.st_nlink} names; may be a file outside the tree)", shown
            )
        if limit is not None and info.st_size > limit:
            raise FileTooLarge(shown, info.st_size, limit)
        os.set_blocking(fd, True)  # a regular file never blocks; plain reads from here on
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read() if limit is None else fh.read(limit + 1)
    finally:
        if fd != -1:
            os.close(fd)


def tree_path_problem(relpath: str) -> str | None:
    """Why ``relpath`` cannot name a file inside a tree (None: it can): absolute, empty parts, ``..``."""
    parts = relpath.split("/")
    if relpath.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\0" in relpath:
        return "not a path inside the tree"
    return None


def read_in_tree(
    root: str | os.PathLike[str], relpath: str, limit: int | None = None, *, follow_root: bool = True
) -> bytes:
    """The bytes of the regular file ``relpath`` (``/``-separated) inside ``root``, reached without
    following a symbolic link at any step: :class:`NotRegularFile` for a link (the file or a folder on the
    way), a FIFO, a device, a folder, a hard link or a path leaving the tree; :class:`FileTooLarge` over
    ``limit``; FileNotFoundError when nothing is there; OSError when it cannot be read. ``root`` itself
    may be a link (a user's choice of where the tree lives) unless ``follow_root`` is False."""
    problem = tree_path_problem(relpath)
    if problem is not None:
        raise NotRegularFile(errno.EINVAL, problem, relpath)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    folder_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(root, folder_flags | (0 if follow_root else nofollow))
    try:
        parts = relpath.split("/")
        for depth, part in enumerate(parts[:-1]):
            try:
                step = os.open(part, folder_flags | nofollow, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    where = "/".join(parts[: depth + 1])
                    raise NotRegularFile(
                        errno.ELOOP, f"inside {where}, a symbolic link: not followed", relpath
                    ) from None
                raise
            os.close(fd)
            fd = step
        return _read_at(fd, parts[-1], relpath, limit)
    finally:
        os.close(fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _read_at(dir_fd: int, name: str, shown: str, limit: int | None) -> bytes:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno != errno.ENOENT and _is_link(dir_fd, name)):
            raise NotRegularFile(errno.ELOOP, "a symbolic link: not followed", shown) from None
        raise
    return _read_open(fd, shown, limit, one_name=True)


def tree_entry_problem(root: str | os.PathLike[str], relpath: str) -> str | None:
    """Why :func:`read_in_tree` would refuse ``relpath`` as it is now (None: a regular file it would read,
    or nothing there), by ``lstat`` alone: what a scan reports of an entry it will not read."""
    try:
        read_in_tree(root, relpath, 0)
    except FileTooLarge:
        return None
    except NotRegularFile as exc:
        return exc.strerror
    except OSError:
        return None
    return None
