"""CLI command modules. Each exposes ``register(app)``; ``register_all`` wires them into the root app."""

from __future__ import annotations

import importlib

import typer

# Order is the order of `cmem --help`.
COMMAND_MODULES = [
    "cmem_cli.cli.commands.write",
    "cmem_cli.cli.commands.read",
    "cmem_cli.cli.commands.view",
    "cmem_cli.cli.commands.verify",
    "cmem_cli.cli.commands.recall",
    "cmem_cli.cli.commands.sessions",
    "cmem_cli.cli.commands.maintenance",
    "cmem_cli.cli.commands.sync",
    "cmem_cli.cli.commands.index_cmds",
    "cmem_cli.cli.commands.models",
    "cmem_cli.cli.commands.agents",
    "cmem_cli.cli.commands.mcp",
    "cmem_cli.cli.commands.shell",
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
