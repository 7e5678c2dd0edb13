"""The typer application: a thin layer of commands over the library modules.

Command modules register themselves on ``app`` (or a sub-app) when imported below; each keeps its heavy
imports inside the command body so that ``cmem add`` never pays for numpy or llama.cpp.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import click
import typer

from cmem_cli import __version__
from cmem_cli.cli.build import annotation
from cmem_cli.cli.exits import EXIT_USAGE
from cmem_cli.cli.guard import run_guarded, say
from cmem_cli.cli.helptext import EXAMPLES, polish
from cmem_cli.cli.invocation import set_home
from cmem_cli.cli.options import HOME

APP_SETTINGS: dict[str, Any] = dict(
    name="cmem",
    help="Durable local memory for AI coding agents: record observations, search them, drill down.",
    epilog="Examples:\n\n\b\n" + EXAMPLES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app = typer.Typer(**APP_SETTINGS)
HomeOpt: Any = annotation(HOME)  # Annotated[...] built from the option table: a type only at run time


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"cmem {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    home: HomeOpt = None,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version_callback, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Durable local memory for AI coding agents."""
    set_home(home)


def _register_commands() -> None:
    # Imported for their side effect of adding commands to ``app``.
    from cmem_cli.cli.commands import register_all

    register_all(app)


_register_commands()


def _command_name(args: list[str]) -> str | None:
    """The subcommand named on the command line, skipping the root's own options."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "--home":
            skip_next = True
        elif not arg.startswith("-"):
            return arg
    return None


def app_for(args: list[str]) -> typer.Typer:
    """An app holding only the invoked command: typer builds every registered command's parser on each
    call, which costs tens of milliseconds that hooks and scripts would pay on every invocation."""
    name = _command_name(args)
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if name is None or not (commands or groups):
        return app
    slim = typer.Typer(**APP_SETTINGS)
    slim.registered_callback = app.registered_callback
    slim.registered_commands = commands
    slim.registered_groups = groups
    return slim


def _one_line(exc: click.ClickException) -> str:
    """Click's usage block as one line, like every other cmem error, naming where to read more."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def run(args: list[str]) -> int:
    """Run the CLI and map every failure to a one-line message and an exit code."""

    def invoke() -> int:
        try:
            command = polish(typer.main.get_command(app_for(args)))
            result = command.main(args, prog_name="cmem", standalone_mode=False)
        except typer.Exit as exc:
            return exc.exit_code
        except typer.Abort:
            print("cmem: aborted", file=sys.stderr)
            return 130
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `cmem` or `cmem session`: help is the answer
            print(exc.ctx.get_help())
            return 0
        except click.ClickException as exc:  # usage errors: unknown option, bad value, missing argument
            say(_one_line(exc))
            return exc.exit_code or EXIT_USAGE
        return result if isinstance(result, int) else 0

    return run_guarded(invoke)
