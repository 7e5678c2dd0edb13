"""`cmem completion SHELL` and `cmem man`: what an installed cmem ships for the shell, printed on demand.

Printing them (as gh and llm do) works from any install, wheel or checkout, with nothing to copy from a
clone; the text is built from the CLI itself, so it always matches the installed version.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from cmem_cli.cli.render import write
from cmem_cli.core.errors import UsageError

SHELLS = ("bash", "zsh", "fish")


def completion(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.", metavar="SHELL", show_default=False)],
) -> None:
    """Print the tab-completion script for SHELL; see README for where each shell loads it from."""
    from cmem_cli.cli import clidocs

    if shell not in SHELLS:
        raise UsageError(f"unknown shell {shell!r} (expected one of: {', '.join(SHELLS)})")
    write(clidocs.completion_script(shell))


def man_cmd(
    raw: Annotated[bool, typer.Option("--raw", help="Print the roff source even on a terminal.")] = False,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="Write the page to PREFIX/share/man/man1/cmem.1, where `man cmem` finds it when PREFIX/bin is "
            "on PATH (a wheel puts it there; an editable install cannot).",
        ),
    ] = False,
    prefix: Annotated[
        str | None,
        typer.Option(
            "--prefix",
            help="With --install: the prefix (default: this Python's, e.g. the venv).",
            metavar="DIR",
        ),
    ] = None,
) -> None:
    """Show the manual page: formatted by man(1) on a terminal, roff source when piped (to install it)."""
    from cmem_cli.cli import clidocs

    page = clidocs.man(clidocs.build_tree())
    if install:
        from cmem_cli.cli.input import check_cli_text

        check_cli_text("--prefix", prefix)  # a path that is not UTF-8 cannot be said back: refused first
        _install_page(page, Path(prefix).expanduser() if prefix else Path(sys.prefix))
        return
    if prefix is not None:
        raise UsageError("--prefix goes with --install")
    viewer = shutil.which("man")
    if raw or viewer is None or not sys.stdout.isatty():
        write(page)
        return
    subprocess.run([viewer, "-l", "-"], input=page.encode("utf-8"), check=False)


def _install_page(page: str, prefix: Path) -> None:
    from cmem_cli.core.errors import StorageError
    from cmem_export.atomic import atomic_write

    target = prefix / "share" / "man" / "man1" / "cmem.1"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, page, mode=0o644)  # a manual page is for every user of the prefix
    except OSError as exc:
        raise StorageError(f"cannot write {target}: {exc.strerror or exc}") from None
    write(f"{target}\n")


def register(app: typer.Typer) -> None:
    app.command("completion")(completion)
    app.command("man")(man_cmd)
