"""A fast path for the commands that hooks, scripts and agents run constantly: search, timeline, get, add.

Importing typer and click costs 30-40 ms, more than a keyword search itself. For these commands a simple
command line is parsed here, from the same option table the typer app is built from
(``cmem_cli.cli.options``), and the typer-free command body (``cmem_cli.cli.read_bodies``,
``cmem_cli.cli.write_bodies``) runs directly.
Anything this parser is not sure about (``--help``, an unknown option, a missing or malformed value, an extra
argument, a cluster of short flags) returns None, and the full typer CLI handles the line instead, with
its own help and error messages. So the fast path can only ever be faster, never different:
tests/test_fast_cli.py runs the same command lines through both and compares the arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.cli.options import FAST_COMMANDS, ROOT_OPTIONS, Opt

if TYPE_CHECKING:
    from collections.abc import Mapping

_ROOT_BY_FLAG = {flag: opt for opt in ROOT_OPTIONS for flag in opt.flags}


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
    module, _, function = FAST_COMMANDS[name].body.partition(":")
    command = getattr(importlib.import_module(module), function)

    def invoke() -> int:
        return command(**kwargs) or 0  # a body may return an exit status (search: 10 for no match)

    return run_guarded(invoke)


def _parse(args: list[str]) -> tuple[str | None, str, dict[str, Any]]:
    if "-h" in args or "--help" in args:
        raise _Unsure
    root, at = _options_before_command(args)
    if at >= len(args) or args[at] not in FAST_COMMANDS:
        raise _Unsure
    name = args[at]
    return root.get("home"), name, _command_arguments(FAST_COMMANDS[name].options, args[at + 1 :])


def _options_before_command(args: list[str]) -> tuple[dict[str, Any], int]:
    values: dict[str, Any] = {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option, _, attached = args[i].partition("=")
        spec = _ROOT_BY_FLAG.get(option)
        if spec is None:
            raise _Unsure  # --version and friends: the full CLI
        if "=" in args[i]:
            values[spec.name] = attached
            i += 1
        elif i + 1 < len(args):
            values[spec.name] = args[i + 1]
            i += 2
        else:
            raise _Unsure
    return values, i


def _command_arguments(spec: tuple[Opt, ...], args: list[str]) -> dict[str, Any]:
    """Click's parsing of one command's options and arguments, for the forms click accepts unambiguously."""
    by_flag: dict[str, tuple[Opt, bool]] = {}
    for opt in spec:
        for flag in opt.flags:
            by_flag[flag] = (opt, True)
        if opt.off:
            by_flag[opt.off] = (opt, False)
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
        flag, has_value, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if flag not in by_flag and not token.startswith("--") and token[:2] in by_flag:
            flag, has_value, attached = token[:2], "=", token[2:]  # -n5, -pwebapp
        if flag not in by_flag:
            raise _Unsure
        opt, primary = by_flag[flag]
        if opt.type is bool:
            if has_value:
                raise _Unsure  # --json=1, or a cluster of short flags
            given[opt.name] = primary
            continue
        if has_value:
            value = attached
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            raise _Unsure  # missing value: click says so
        value = _convert(opt, value)
        if opt.multiple:
            given.setdefault(opt.name, []).append(value)
        else:
            given[opt.name] = value
    return _bind(spec, given, positionals)


def _convert(opt: Opt, value: str) -> Any:
    if opt.choices and value not in opt.choices:
        raise _Unsure  # click names the valid choices
    try:
        return opt.type(value) if opt.type in (int, float) else value
    except ValueError:
        raise _Unsure from None


def _bind(spec: tuple[Opt, ...], given: Mapping[str, Any], positionals: list[str]) -> dict[str, Any]:
    """Fill in arguments and defaults the way typer hands them to a command function."""
    kwargs: dict[str, Any] = {}
    for opt in spec:
        if opt.is_argument:
            if opt.multiple:
                value: Any = list(positionals)
                positionals = []
            elif positionals:
                value = positionals.pop(0)
            else:
                value = opt.default
            if opt.required and not value:
                raise _Unsure  # a missing argument: click says so
            kwargs[opt.name] = value
        else:
            kwargs[opt.name] = given.get(opt.name, opt.default)
        if opt.multiple and not opt.is_argument and not kwargs[opt.name]:
            kwargs[opt.name] = None  # typer passes None for an empty repeatable option without a default
    if positionals:
        raise _Unsure  # an extra argument: click says so
    return kwargs
