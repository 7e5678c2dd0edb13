"""A fast path for the commands that hooks, scripts and agents run constantly: search, timeline, get, add.

Importing typer and click costs 30-40 ms, more than a keyword search itself. For these commands a simple
command line is parsed here, from a table of their options that ``scripts/generate.py`` writes out of the
typer app (``cmem_cli/cli/spec.py``), and the typer-free command body (``cmem_cli.cli.read_bodies``,
``cmem_cli.cli.write_bodies``) runs directly.
Anything this parser is not sure about (``--help``, an unknown option, a missing or malformed value, an extra
argument, a cluster of short flags) returns None, and the full typer CLI handles the line instead, with
its own help and error messages. So the fast path can only ever be faster, never different:
tests/test_fast_cli.py runs the same command lines through both and compares the arguments.
"""

from __future__ import annotations

from typing import Any

from cmem_cli.cli.spec import COMMANDS, ROOT_OPTIONS

# command name -> the typer-free function that runs it ("module:function")
FAST_COMMANDS = {
    "search": "cmem_cli.cli.read_bodies:search",
    "timeline": "cmem_cli.cli.read_bodies:timeline",
    "get": "cmem_cli.cli.read_bodies:get",
    "add": "cmem_cli.cli.write_bodies:add",
}


class _Unsure(Exception):
    """The line needs the full CLI (help, an error message, an unusual form)."""


def parse(args: list[str]) -> tuple[str | None, str, dict[str, Any]] | None:
    """(--home value, command, keyword arguments) for a simple fast-path command line, else None."""
    try:
        return _parse(args)
    except _Unsure:
        return None


def try_run(args: list[str]) -> int | None:
    """Run a fast-path command and return its exit code, or None when the full CLI must handle ``args``."""
    parsed = parse(args)
    if parsed is None:
        return None
    home, name, kwargs = parsed
    import importlib

    from cmem_cli.cli.guard import run_guarded
    from cmem_cli.cli.invocation import set_home

    set_home(home)
    module, _, function = FAST_COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(module), function)

    def invoke() -> int:
        return command(**kwargs) or 0  # a body may return an exit status (search: 9 for no match)

    return run_guarded(invoke)


def _parse(args: list[str]) -> tuple[str | None, str, dict[str, Any]]:
    if "-h" in args or "--help" in args:
        raise _Unsure
    root, at = _options_before_command(args)
    if at >= len(args) or args[at] not in FAST_COMMANDS or args[at] not in COMMANDS:
        raise _Unsure
    name = args[at]
    return root.get("home"), name, _command_arguments(COMMANDS[name], args[at + 1 :])


def _options_before_command(args: list[str]) -> tuple[dict[str, Any], int]:
    values: dict[str, Any] = {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option, _, attached = args[i].partition("=")
        spec = ROOT_OPTIONS.get(option)
        if spec is None or spec["kind"] != "value":
            raise _Unsure  # --version and friends: the full CLI
        if "=" in args[i]:
            values[spec["name"]] = attached
            i += 1
        elif i + 1 < len(args):
            values[spec["name"]] = args[i + 1]
            i += 2
        else:
            raise _Unsure
    return values, i


def _command_arguments(spec: list[dict[str, Any]], args: list[str]) -> dict[str, Any]:
    """Click's parsing of one command's options and arguments, for the forms click accepts unambiguously."""
    by_opt: dict[str, tuple[dict[str, Any], bool]] = {}
    for param in spec:
        for opt in param.get("opts", []):
            by_opt[opt] = (param, True)
        for opt in param.get("secondary", []):
            by_opt[opt] = (param, False)
    given: dict[str, Any] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            positionals.extend(args[i:])
            break
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        option, has_value, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if option not in by_opt and not token.startswith("--") and token[:2] in by_opt:
            option, has_value, attached = token[:2], "=", token[2:]  # -n5, -pwebapp
        if option not in by_opt:
            raise _Unsure
        param, primary = by_opt[option]
        if param["kind"] == "flag":
            if has_value:
                raise _Unsure  # --json=1, or a cluster of short flags
            given[param["name"]] = primary
            continue
        if has_value:
            value = attached
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            raise _Unsure  # missing value: click says so
        value = _convert(param["type"], value)
        if param["multiple"]:
            given.setdefault(param["name"], []).append(value)
        else:
            given[param["name"]] = value
    return _bind(spec, given, positionals)


def _convert(kind: str, value: str) -> Any:
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except ValueError:
        raise _Unsure from None
    return value


def _bind(spec: list[dict[str, Any]], given: dict[str, Any], positionals: list[str]) -> dict[str, Any]:
    """Fill in arguments and defaults the way typer hands them to a command function."""
    kwargs: dict[str, Any] = {}
    for param in spec:
        name = param["name"]
        if param["kind"] == "argument":
            if param["nargs"] == -1:
                value: Any = list(positionals)
                positionals = []
            elif positionals:
                value = positionals.pop(0)
            else:
                value = param["default"]
            if param["required"] and not value:
                raise _Unsure  # a missing argument: click says so
            kwargs[name] = value
        elif name in given:
            kwargs[name] = given[name]
        else:
            kwargs[name] = param["default"]
        if param.get("multiple") and kwargs[name] == [] and param["default"] is None:
            kwargs[name] = None  # typer passes None for an empty repeatable option without a default
    if positionals:
        raise _Unsure  # an extra argument: click says so
    return kwargs
