"""Entry point: keeps start-up fast and turns CmemError into one line on stderr."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    try:
        # A process of its own (the `cmem` script, `python -m cmem_cli`), not a caller's function call: it
        # may end without the interpreter's teardown, and a hook may hand its write to a child.
        return _run(sys.argv[1:] if argv is None else argv, whole_process=argv is None)
    finally:
        if sys.dont_write_bytecode:  # then nothing writes cmem's bytecode: compile it once, detached
            from cmem_cli import compile_if_missing

            compile_if_missing()


def _run(args: list[str], *, whole_process: bool = False) -> int:
    if args in (["--version"], ["-V"]):
        # Scripts and hooks call this constantly: answer without importing typer.
        from cmem_cli import __version__

        print(f"cmem {__version__}")
        return 0
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        # Claude Code runs this on every prompt and tool call: skip typer, import only the hook runner.
        from cmem_cli.capture.hooks.runner import main as hook_main

        return hook_main(args[1:], detach=whole_process)
    if args == ["mcp"]:
        # MCP clients start this with every session and wait for its first answer: skip typer.
        from cmem_cli.cli.guard import run_guarded
        from cmem_cli.cli.invocation import current_config
        from cmem_cli.mcp.front import start

        return run_guarded(lambda: start(current_config()))
    from cmem_cli.cli.fast import try_run

    code = try_run(args)  # search/timeline/get without typer when the line is simple; None otherwise
    if code is not None:
        if whole_process and _READS.intersection(args[:4]) and os.environ.get("CMEM_FAST_EXIT") != "off":
            _exit_now(code)  # a read has closed what it opened: skip the interpreter's teardown
        return code
    from cmem_cli.cli.app import run

    return run(args)


_READS = frozenset(["search", "timeline", "get"])


def _exit_now(code: int) -> None:
    """End the process as it is: output flushed, no module teardown (a few milliseconds of every search)."""
    if sys.dont_write_bytecode:
        from cmem_cli import compile_if_missing

        compile_if_missing()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 0
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
