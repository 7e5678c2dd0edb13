"""Typer parameters and commands built from the option table (``cmem_cli.cli.options``).

typer reads a command's parameters from its function signature; here the signature is made from the
table, so an option is declared once and the typer command needs no hand-written pass-through wrapper.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import GenericAlias
from typing import Annotated, Any

import click
import typer

from cmem_cli.cli.options import Command, Opt


def annotation(opt: Opt) -> Any:
    """``Annotated[type, typer.Option(...)]`` for one table entry (usable in a hand-written signature too)."""
    value_type: Any = GenericAlias(list, (opt.type,)) if opt.multiple else opt.type
    if not opt.required and (opt.default is None or opt.multiple):
        value_type = value_type | None
    choice = click.Choice(opt.choices) if opt.choices else None
    if opt.is_argument:
        info = typer.Argument(help=opt.help, metavar=opt.metavar, show_default=False)
    else:
        decls = (f"{opt.flags[0]}/{opt.off}", *opt.flags[1:]) if opt.off else opt.flags
        info = typer.Option(
            *decls,
            help=opt.help,
            metavar=opt.metavar,
            click_type=choice,
            show_default=opt.type is not bool and opt.default not in (None, ""),
        )
    return Annotated[value_type, info]


def parameter(opt: Opt) -> inspect.Parameter:
    default = inspect.Parameter.empty if opt.required else opt.default
    return inspect.Parameter(
        opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation(opt)
    )


def typer_command(command: Command) -> Callable[..., Any]:
    """A function typer can register, with the table's options as its signature; it calls the body."""
    module, _, function = command.body.partition(":")

    def run(**kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), function)(**kwargs)  # an int is the exit status

    params = [parameter(opt) for opt in command.options]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__name__ = command.name
    run.__doc__ = command.help
    return run


def register(app: typer.Typer, *commands: Command) -> None:
    for command in commands:
        app.command(command.name)(typer_command(command))
