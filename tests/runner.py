"""Run ``cmem`` in this process, as click's CliRunner does: for tests that check what a command stored or printed.

A real process costs about a second of start-up on an idle machine (2.4 s on a loaded one); most tests only
read back stored fields, for which the process is not what is under test. :func:`invoke` calls
``cmem_cli.__main__.main(argv)`` with the environment, the working folder, ``sys.argv`` and the standard
streams swapped for the call and restored after it, and resets the caches cmem keeps per process (the
invocation's config, git identities, privacy rules, the stop flag), so that one call cannot see another's
home. What a process alone shows stays with real processes (``cmem_process`` in tests/conftest.py): the
hook contract, start-up imports, signals, locks held across processes, kill loops, detached passes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Processes started while a test runs, by kind: conftest reports them at the end of a run.
STARTED: dict[str, int] = {"in_process": 0, "process": 0}


@dataclass
class Result:
    """What a run of cmem gave: its exit code and its two streams (text)."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def returncode(self) -> int:  # the name subprocess.CompletedProcess uses
        return self.exit_code

    def json(self) -> Any:
        return json.loads(self.stdout)


def reset_caches() -> None:
    """Forget what cmem keeps per process between commands: a long-lived process (MCP) may keep it; a
    test's next command, with another home or config, must not."""
    from cmem_cli.cli import invocation
    from cmem_cli.core import repo_identity, stopping
    from cmem_cli.services.write import privacy

    invocation.set_home(None)
    stopping.stop_waiting_when(None)
    repo_identity._answers.clear()
    privacy._RULES_CACHE.clear()
    if "index.loading" in sys.modules:  # models by path: keep a loaded one (immutable), drop a deleted one
        loading = sys.modules["index.loading"]
        for cache in (loading._embedders, loading._rerankers):
            for path in [path for path in cache if not Path(path).exists()]:
                del cache[path]


class _Buffer(io.BytesIO):
    """Bytes written to a stream, kept when the stream over them is closed or collected."""

    def close(self) -> None:
        pass


class _Stream(io.TextIOWrapper):
    """A standard stream over bytes that is no terminal, as a pipe to a process is."""

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def _swapped(
    argv: list[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None, stdin: bytes
) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_argv = sys.argv
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    out, err = _Buffer(), _Buffer()
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["cmem", *argv]
        sys.stdin = _Stream(io.BytesIO(stdin), encoding="utf-8", errors="surrogateescape")
        sys.stdout = _Stream(out, encoding="utf-8", errors="surrogateescape", write_through=True)
        sys.stderr = _Stream(err, encoding="utf-8", errors="backslashreplace", write_through=True)
        reset_caches()
        yield out, err
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError, OSError):  # closed by the command (a broken pipe, say)
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.umask(saved_umask)
        for sig, handler in saved_signals.items():
            if handler is not None:
                signal.signal(sig, handler)
        reset_caches()


def invoke(
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    replace_env: bool = False,
) -> Result:
    """``cmem ARGS`` in this process: its exit code and output, as :func:`subprocess.run` would give them.

    ``env`` is laid over this process's environment (as ``env={**os.environ, **env}`` for a process), or
    replaces it with ``replace_env``; ``input`` is stdin. An exit (``SystemExit``) gives its code, a message
    in it one line on stderr (as the interpreter does); an exception that escapes ``main`` (``main`` maps
    every error to one line and its exit code, cmem_cli/cli/exits.py, unless ``CMEM_DEBUG=1``) prints its
    traceback and exits 1, as the interpreter would: a test sees what a user of the process would."""
    from cmem_cli.__main__ import main
    from cmem_cli.cli.exits import EXIT_ERROR

    STARTED["in_process"] += 1
    environment = dict(env or {}) if replace_env else {**os.environ, **(env or {})}
    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    with _swapped(list(args), environment, cwd, data) as (out, err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            print("cmem: interrupted", file=sys.stderr)
            code = 130
        except Exception:  # escaped main (a bug, or CMEM_DEBUG=1): the interpreter's traceback and exit 1
            traceback.print_exc(file=sys.stderr)
            code = EXIT_ERROR
    return Result(
        code,
        out.getvalue().decode("utf-8", "replace"),
        err.getvalue().decode("utf-8", "replace"),
    )
