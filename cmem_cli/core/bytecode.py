"""cmem's own bytecode, present where Python looks for it, so that no start-up compiles cmem from source.

A regular install (pip, pipx) compiles the packages once. An editable install leaves that to Python, which
never does it where ``PYTHONDONTWRITEBYTECODE`` is set (many Docker images, CI runners): then every hook
and every command compiles cmem's modules again, about as long as the whole command takes otherwise.
``cmem install`` compiles them (:func:`compile_packages`); a run that finds its own modules without
bytecode starts one detached compile (:func:`compile_soon`); `cmem doctor` reports what is missing
(:func:`stale_modules`). Python's own cache location is used (``__pycache__``, or ``PYTHONPYCACHEPREFIX``),
so nothing else has to know about it.
"""

from __future__ import annotations

import os
import sys
from importlib.util import cache_from_source
from pathlib import Path

PACKAGES = ("cmem_cli", "cmem_export", "cmem_index")


def package_dirs() -> list[Path]:
    """The folders of cmem's three packages, wherever they are installed (without importing them)."""
    from importlib.util import find_spec

    dirs: list[Path] = []
    for name in PACKAGES:
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(Path(p) for p in spec.submodule_search_locations)
    return dirs


def _current(source: str) -> bool:
    """Whether ``source`` has bytecode Python will use as it is (written after the source last changed)."""
    try:
        cached = os.stat(cache_from_source(source))
    except (OSError, NotImplementedError, ValueError):
        return False
    try:
        return cached.st_mtime >= os.stat(source).st_mtime
    except OSError:
        return True


def stale_modules(dirs: list[Path] | None = None) -> list[Path]:
    """cmem's source files whose bytecode is missing or older than the source."""
    found = []
    for folder in package_dirs() if dirs is None else dirs:
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts and not _current(str(path)):
                found.append(path)
    return found


def compile_packages(dirs: list[Path] | None = None) -> int:
    """Compile cmem's packages where Python will find the bytecode; returns how many files failed (0: all
    written). Written also where ``PYTHONDONTWRITEBYTECODE`` is set: that setting stops Python writing
    caches as it imports, not a compile asked for."""
    import compileall

    failed = 0
    for folder in package_dirs() if dirs is None else dirs:
        try:
            ok = compileall.compile_dir(str(folder), quiet=2, force=False)
        except OSError:
            ok = False
        failed += 0 if ok else 1
    return failed


def compile_soon() -> None:
    """Start a detached compile of cmem's packages (a command found one of its modules without current
    bytecode: :func:`cmem_cli.compile_if_missing`); later runs find it done. Never raises, never waits."""
    if not sys.dont_write_bytecode or os.environ.get("CMEM_COMPILE") == "off":
        return
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-m", "cmem_cli.core.bytecode"],
                os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
                setsid=True,
            )
        finally:
            os.close(devnull)
    except (OSError, AttributeError):
        return


def _main() -> int:
    """The detached compile: one at a time per user (a second finds the lock taken and leaves)."""
    import fcntl
    import tempfile

    try:
        os.nice(10)
        fd = os.open(
            Path(tempfile.gettempdir(), f"cmem-compile-{os.getuid()}.lock"), os.O_RDWR | os.O_CREAT, 0o600
        )
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    return 1 if compile_packages() else 0


if __name__ == "__main__":
    sys.exit(_main())
