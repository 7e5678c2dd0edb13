"""Entry point: keeps start-up fast and turns CmemError into one line on stderr."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        # Scripts and hooks call this constantly: answer without importing typer.
        from cmem_cli import __version__

        print(f"cmem {__version__}")
        return 0
    from cmem_cli.app import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
