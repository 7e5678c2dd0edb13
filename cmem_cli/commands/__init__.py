"""CLI command modules. Each exposes ``register(app)``; ``register_all`` wires them into the root app."""

from __future__ import annotations

import importlib

import typer

# Order is the order of `cmem --help`.
COMMAND_MODULES = [
    "cmem_cli.commands.write",
    "cmem_cli.commands.read",
    "cmem_cli.commands.sessions",
    "cmem_cli.commands.maintenance",
    "cmem_cli.commands.sync",
    "cmem_cli.commands.index_cmds",
    "cmem_cli.commands.models",
    "cmem_cli.commands.agents",
    "cmem_cli.commands.mcp",
    "cmem_cli.commands.shell",
]


def register_all(app: typer.Typer) -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # not written yet in this checkout
                continue
            raise
        module.register(app)
