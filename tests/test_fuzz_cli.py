"""Seeded fuzzing of every command: random options, hostile values and stdin never give an internal error
(exit 1) or a traceback (issue 8). Bounded: a few hundred in-process calls, a few seconds."""

from __future__ import annotations

import random

import click
import pytest
import typer

from cmem_cli.cli.app import app

# Long-running or networked commands: `watch` never returns, `models pull` downloads.
SKIP = {("watch",), ("models", "pull")}
# `doctor` exits 1 by contract when it finds a problem (fuzzed input may well cause one).
EXIT_1_ALLOWED = {("doctor",)}

VALUES = [
    "", "0", "1", "-1", "S1", "P1", "#abc123", "memories:a.md:1:2", "related", "decision", "7d", "2026-01-01",
    str(2**70), str(10**30), "1e20", "NaN", "-inf", "1.5", "../../x", "a\\b", "/etc/passwd", "-", "--",
    "\x1b[31mred", "\udcff\udcfe", "x" * 300, "[[[[", "{}", "🙂", "a,b", "%s%n", "none",
]  # fmt: skip
STDINS = [
    "",
    "{}",
    "[]",
    "null",
    '{"type": "change", "title": "fuzzed"}',
    '{"type": "change", "title": "t", "created_at": 1e300}',
    '{"type": "bugfix", "title": "t", "links": [{"type": "related", "id": -5}]}',
    "[" * 5000 + "]" * 5000,
    '{"title": ' * 200,
    "not json at all\n{\n",
    '{"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": 5}',
]


def _commands() -> list[tuple[tuple[str, ...], click.Command]]:
    root = typer.main.get_command(app)
    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, click.Group):
            for name, child in command.commands.items():
                walk(child, (*path, name))
        elif path not in SKIP:
            found.append((path, command))

    walk(root, ())
    return found


def _argv(rng: random.Random, path: tuple[str, ...], command: click.Command) -> list[str]:
    argv = list(path)
    for param in command.params:
        if rng.random() < 0.5:
            continue
        if isinstance(param, click.Argument):
            count = 1 if param.nargs == 1 else rng.randint(1, 3)
            argv += [rng.choice(VALUES) for _ in range(count)]
        elif isinstance(param, click.Option) and param.opts[0] not in ("--help", "--yes"):
            flag = rng.choice(param.opts)
            if param.is_flag:
                argv.append(flag)
            else:
                argv += [flag, rng.choice(VALUES)]
    if rng.random() < 0.1:
        argv.insert(rng.randrange(len(argv) + 1), rng.choice(["--bogus", "-Z", "extra"]))
    return argv


COMMANDS = _commands()


def test_every_command_is_fuzzed():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"add", "search", "get", "timeline", "doctor", "session list", "summary add", "index"} <= names


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_command_lines_never_crash(cli, home, seed):
    rng = random.Random(seed)
    assert cli("add", "-t", "anchor", "--concept", "c", "--session", "S").exit_code == 0
    failures = []
    for _ in range(120):
        path, command = rng.choice(COMMANDS)
        argv = _argv(rng, path, command)
        result = cli(*argv, input=rng.choice(STDINS))
        crashed = "Traceback" in result.stderr or "internal error" in result.stderr
        if crashed or (result.exit_code == 1 and path not in EXIT_1_ALLOWED):
            failures.append((argv, result.exit_code, result.stderr[-300:]))
    assert failures == []
