"""Hostile values at the input boundary (issue 8, item 8): each is a one-line error with its documented
exit code, never an internal error (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DEEP = "[" * 100_000 + "]" * 100_000


def _record(**fields) -> str:
    return json.dumps({"type": "change", "title": "t", **fields})


def _one_line_error(result, code: int) -> None:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert result.stderr.startswith("cmem: ") and result.stderr.count("\n") == 1
    assert "internal error" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "stdin", "code"),
    [
        (("add", "--json", "-"), DEEP, 4),
        (("summary", "add", "--session", "s1", "--json", "-"), DEEP, 4),
        (("add", "--json", "-"), '{"type": "change", "title": "t", "created_at": NaN}', 4),
        (("add", "--json", "-"), '{"type": "change", "title": "t", "created_at": Infinity}', 4),
        (("add", "--json", "-"), _record(created_at=1e20), 4),
        (("add", "--json", "-"), _record(created_at=-1e16), 4),
        (("add", "--json", "-"), _record(created_at="99999999y"), 4),
        (("add", "--json", "-"), _record(prompt_number=2**70), 4),
        (("add", "--json", "-"), _record(links=[{"type": "related", "id": 2**70}]), 4),
        (("add", "--json", "-"), _record(uid="01ARZ3NDEK../../x"), 4),
        (("add", "--json", "-"), _record(uid="abc\\def"), 4),
        (("search", "x", "--limit", str(10**30)), None, 2),
        (("search", "x", "--mode", "1.5"), None, 2),
        (("link", "1", "related", str(2**70)), None, 4),
        (("get", str(2**70)), None, 4),
        (("session", "list", "--project", "\udcff\udcfe"), None, 4),
        (("models", "path", "a" * 300), None, 7),
    ],
    ids=lambda value: value[:24] if isinstance(value, str) else None,
)
def test_hostile_values_get_their_documented_exit_code(cli, argv, stdin, code):
    assert cli("add", "-t", "anchor").exit_code == 0
    _one_line_error(cli(*argv, input=stdin), code)
    assert cli("search", "--json", "--limit", "50").json()[0]["title"] == "anchor"  # nothing half-written


def test_import_transcript_of_a_directory_is_an_error(cli, tmp_path):
    folder = tmp_path / "transcripts"
    folder.mkdir()
    result = cli("import", "transcript", str(folder))
    assert result.exit_code == 7, result.stderr  # the import's documented code for a file it cannot read
    assert "internal error" not in result.stderr and "not a transcript file" in result.stderr


def test_a_bad_busy_timeout_is_a_usage_error(sh):
    _one_line_error(sh("add", "-t", "x", env={"CMEM_BUSY_TIMEOUT_MS": "abc"}), 2)
    _one_line_error(sh("search", "x", env={"CMEM_BUSY_TIMEOUT_MS": "-5"}), 2)


def test_a_config_home_that_is_not_a_path_is_invalid_input(sh, tmp_path: Path):
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("home = 5\n")
    _one_line_error(sh("add", "-t", "x"), 4)


def test_a_hook_payload_nested_too_deep_is_logged_not_crashed(sh, home):
    payload = '{"session_id": "s", "tool_input": ' + DEEP + "}"
    result = sh("hook", "PostToolUse", input=payload)
    assert result.exit_code == 0
    log = (home / "logs" / "hooks.log").read_text()
    assert "nested deeper" in log and "bug" not in log


@pytest.mark.parametrize("argv", [("models", "path"), ("collection", "remove"), ("get",)])
def test_an_error_echoing_hostile_input_is_one_printable_line(cli, sh, argv):
    hostile = "\udcff\x1b[31mred\nsecond"
    for result in (sh(*argv, hostile), cli(*argv, hostile)):
        assert result.exit_code == {"models": 8, "collection": 3, "get": 4}[argv[0]]
        assert "\x1b" not in result.stderr and result.stderr.count("\n") == 1
        assert "internal error" not in result.stderr


@pytest.mark.parametrize("agent", ["transcript", "opencode"])
def test_an_import_of_a_file_whose_name_is_not_utf8_reports_it_escaped(
    sh, tmp_path: Path, agent: str
) -> None:
    """A file name is bytes; one that is not UTF-8 reaches cmem as surrogates, which neither stdout nor
    stderr can encode as they are: `--json` and the error line show it escaped."""
    name = str(tmp_path / "\udcff\udcfe.json")  # the bytes ff fe: no such file
    result = sh("import", agent, name, "--settle", "0", "--json")
    assert result.exit_code == 7, result.stderr
    assert "internal error" not in result.stderr
    assert json.loads(result.stdout)[0]["path"] == name
    assert result.stderr.count("\n") == 1 and "\\udcff\\udcfe" in result.stderr
