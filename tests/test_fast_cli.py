"""The fast path for search/timeline/get/add parses exactly as typer does, or hands the line to typer."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.cli import fast as fast_cli
from cmem_cli.cli.app import run as run_typer

REPO = Path(__file__).resolve().parent.parent

SIMPLE_LINES = [
    ["search"],
    ["search", "auth bug"],
    ["search", "auth", "--json"],
    ["search", "--json", "auth"],
    ["search", "-n", "5", "--offset=2", "-pwebapp", "q"],
    ["search", "-n5", "--limit", "7", "q"],  # the last value wins
    ["search", "q", "--type", "bugfix", "--type=feature", "--concept", "jwt", "--file", "src/a.py"],
    ["search", "q", "--agent", "claude", "--session", "s1", "--since", "7d", "--until", "2026-01-02"],
    ["search", "q", "--order", "newest", "--mode", "keyword", "--no-rerank", "--min-score", "0.25"],
    ["search", "q", "--rerank", "--explain", "-c", "notes", "--collection", "memories", "-f", "csv"],
    ["search", "--", "-leading dash"],
    ["search", "-"],
    ["search", "--project", "-p", "q"],  # click takes the next token as the value, dash or not
    ["search", ""],
    ["search", "--min-score", "1e-1", "q"],
    ["--home", "/tmp/elsewhere", "search", "q"],
    ["--home=/tmp/elsewhere", "search", "q"],
    ["timeline", "42"],
    ["timeline", "--query", "jwt", "-b", "2", "-a", "3", "-p", "webapp", "--json"],
    ["timeline", "S3", "--format", "md"],
    ["get", "1"],
    ["get", "1", "2", "S3", "--links", "--json"],
    ["get", "--format", "ndjson", "7"],
    ["get", "--", "-1"],
    [
        "add",
        "--title",
        "Fix JWT expiry",
        "--type",
        "bugfix",
        "--narrative",
        "why",
        "--fact",
        "a",
        "--fact",
        "b",
    ],
    ["add", "-tT", "--concept", "jwt", "--read", "a.py", "--modified", "b.py", "--tool", "Edit"],
    ["add", "-t", "T", "-p", "web", "--session", "s1", "--agent", "bot", "--key", "k", "--confidence", "0.5"],
    ["add", "--json", "-", "--link", "related:3"],
    ["add", "--json=records.ndjson"],
    ["add", "Fix the login bug", "--type", "bugfix"],
    ["context"],
    ["context", "-p", "shop", "--budget", "200", "--json"],
]

FALLBACK_LINES = [
    ["search", "--help"],
    ["search", "q", "-h"],
    ["search", "--limit", "many", "q"],
    ["search", "--limit"],
    ["search", "--no-such-option", "q"],
    ["search", "one", "two"],
    ["search", "--json=yes", "q"],
    ["search", "-xyz"],
    ["get"],
    ["get", "--links=1", "3"],
    ["--version"],
    ["--home"],
    ["add", "title", "extra"],
    ["add", "--confidence", "high", "-t", "T"],
    ["stats"],
    ["search", "--mode", "1.5", "q"],  # choices are checked at parse time: click names the valid ones
    ["search", "--type", "bugfx", "q"],
    ["add", "--type", "nonsense", "-t", "T"],
    ["collection", "list"],
    ["context", "--budget", "many"],
    [],
]


def _typer_kwargs(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[str, dict[str, Any]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    for command, target in fast_cli.FAST_COMMANDS.items():
        module, _, function = target.body.partition(":")
        monkeypatch.setattr(
            importlib.import_module(module), function, lambda _c=command, **kw: seen.append((_c, kw))
        )
    assert run_typer(args) == 0
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("args", SIMPLE_LINES, ids=" ".join)
def test_simple_lines_parse_exactly_as_typer_parses_them(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = fast_cli.parse(args)
    assert parsed is not None
    home, command, kwargs = parsed
    assert (command, kwargs) == _typer_kwargs(monkeypatch, args)
    expected_home = "/tmp/elsewhere" if any("--home" in a for a in args) else None
    assert home == expected_home


@pytest.mark.parametrize("args", FALLBACK_LINES, ids=lambda a: " ".join(a) or "(nothing)")
def test_lines_needing_help_or_an_error_message_go_to_typer(args: list[str]) -> None:
    assert fast_cli.parse(args) is None


def test_a_bad_value_gets_typers_usage_error(cli) -> None:
    result = cli("search", "--limit", "many", "q")
    assert result.exit_code == 2
    assert "'many' is not a valid integer" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "valid"),
    [
        (["search", "--mode", "1.5", "q"], "'auto', 'keyword', 'vector', 'hybrid'"),
        (["search", "--order", "random"], "'relevance', 'newest', 'oldest'"),
        (["get", "1", "--format", "yaml"], "'md', 'json', 'ndjson'"),
        (["add", "-t", "T", "--type", "bugfx"], "'decision', 'bugfix'"),
    ],
)
def test_choices_are_validated_at_parse_time_with_a_usage_error(cli, args, valid) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert valid in result.stderr
    assert result.stdout == ""


def test_fast_path_errors_are_one_line_with_the_documented_exit_code(cli) -> None:
    result = cli("get", "999")
    assert result.exit_code == 3
    assert result.stderr.startswith("cmem: ") and result.stderr.count("\n") == 1


def test_fast_path_add_and_search_import_neither_typer_nor_click(home: Path) -> None:
    """Nor the API's result types: both print JSON rows or ids and never build a named tuple."""
    code = (
        "import sys; from cmem_cli.__main__ import main; "
        "a = main(['add', '--title', 'JWT expiry bug', '--type', 'bugfix']); "
        "s = main(['search', 'jwt', '--mode', 'keyword', '-f', 'ids']); "
        "heavy = {'typer', 'click', 'rich', 'numpy', 'cmem_cli.core.results'}; "
        "print(a, s, sorted((set(sys.modules) | {m.split('.')[0] for m in sys.modules}) & heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1", "1", "0 0 []"]


def test_a_search_and_the_briefing_leave_out_what_only_other_paths_need(home: Path) -> None:
    """datetime (only an ISO date is parsed with it), csv (one output format) and the index's code and
    scope-word rules (only a search with a model) are not imported by a keyword search or `cmem context`."""
    code = (
        "import sys; from cmem_cli.__main__ import main; "
        "a = main(['add', '--title', 'JWT expiry bug', '--type', 'bugfix']); "
        "s = main(['search', 'jwt expiry', '--since', '7d', '-f', 'plain']); "
        "c = main(['context']); "
        "unused = {'datetime', 'csv', 'cmem_index.codelike', 'cmem_index.scope_words'}; "
        "print(a, s, c, sorted(set(sys.modules) & unused))"
    )  # the add writes a file too: its name has the date
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "0 0 0 []"


@pytest.mark.parametrize("ms", [0, 999, 1_000, 86_399_999, 1_795_681_850_551, 253_402_300_799_999])
def test_times_are_shown_as_datetime_shows_them(ms: int) -> None:
    from datetime import UTC, datetime

    from cmem_cli.core.timeutil import date_words, ms_date_words, to_date, to_iso

    shown = datetime.fromtimestamp(ms / 1000, tz=UTC)
    assert to_iso(ms) == shown.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    assert to_date(ms) == shown.strftime("%Y-%m-%d")
    assert ms_date_words(ms) == date_words(shown)
