"""Reading a file that someone else may have put there, without ever blocking or following a link.

A FIFO named ``notes.md`` blocks a plain ``open()`` until a writer appears (forever, for `cmem get` or an
MCP server whose later calls queue behind it), a device can be read without end, and a symlink can point
anywhere. :func:`read_regular` opens without following a final symlink and without blocking, checks that
what it opened is a regular file, and reads at most ``limit`` bytes.
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
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(path))
        if limit is not None and info.st_size > limit:
            raise FileTooLarge(os.fspath(path), info.st_size, limit)
        os.set_blocking(fd, True)  # a regular file never blocks; plain reads from here on
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read() if limit is None else fh.read(limit + 1)
    finally:
        if fd != -1:
            os.close(fd)
