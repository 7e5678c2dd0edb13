"""What an installed cmem gives a shell: completion scripts, the manual, help that reads as written."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize(("shell", "path"), [("bash", "cmem.bash"), ("zsh", "_cmem"), ("fish", "cmem.fish")])
def test_completion_prints_the_script_an_install_needs(sh, shell, path):
    result = sh("completion", shell)
    assert result.exit_code == 0
    assert result.stdout == (REPO / "completions" / path).read_text()


def test_unknown_shell_is_a_usage_error(sh):
    result = sh("completion", "tcsh")
    assert result.exit_code == 2
    assert result.stderr == "cmem: unknown shell 'tcsh' (expected one of: bash, zsh, fish)\n"


def test_bash_completion_offers_choice_values(sh, tmp_path):
    script = tmp_path / "cmem.bash"
    script.write_text(sh("completion", "bash").stdout)
    lines = [
        ("cmem search --order n", 3, "newest"),
        ("cmem search --type bu", 3, "bugfix"),
        ("cmem search --mode h", 3, "hybrid"),
        ("cmem search -f c", 3, "csv"),
        ("cmem get 1 --format nd", 4, "ndjson"),
        ("cmem session list --status ab", 4, "abandoned"),
    ]
    probe = "".join(
        f'COMP_WORDS=({words}); COMP_CWORD={cword}; _cmem; echo "${{COMPREPLY[@]}}"\n'
        for words, cword, _ in lines
    )
    out = subprocess.run(
        ["bash", "-c", f"source {script}\n{probe}"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [expected for _, _, expected in lines]


def test_man_prints_the_page_with_examples_when_piped(sh):
    result = sh("man")
    assert result.exit_code == 0
    assert result.stdout == (REPO / "man" / "cmem.1").read_text()
    assert ".SH EXAMPLES" in result.stdout and ".SS search" in result.stdout
    assert (
        "\\fIFROM\\fR\nObservation the link starts at (id, uid or uid prefix)." in result.stdout
    )  # positional arguments have help


def test_help_has_no_markup_escapes_and_whole_summaries(sh):
    top = sh("--help").stdout
    assert "Link two observations (FROM TYPE TO), e.g. `cmem link 14" in top
    assert not re.search(r"e\.g\.\s*$", top, re.MULTILINE)
    assert "Examples:" in top and 'cmem add "Chose WAL mode' in top
    for command in (["search"], ["add"], ["link"], ["collection", "list"], ["session", "list"]):
        text = sh(*command, "--help").stdout
        assert "\\[" not in text and "``" not in text, command
    assert "[default: 20]" in sh("search", "--help").stdout


def test_json_help_does_not_promise_a_format_option_the_command_lacks(sh):
    for command in ("stats", "doctor", "status"):
        text = sh(command, "--help").stdout
        assert "--format" not in text, command


def test_each_short_flag_has_one_meaning_across_commands():
    import click
    import typer.main

    from cmem_cli.cli.app import app

    meanings: dict[str, set[str]] = {}

    def walk(command: click.Command) -> None:
        for param in command.params:
            if isinstance(param, click.Option):
                long = next(o for o in param.opts if o.startswith("--"))
                for short in (o for o in param.opts if len(o) == 2):
                    meanings.setdefault(short, set()).add(long)
        for child in getattr(command, "commands", {}).values():
            walk(child)

    walk(typer.main.get_command(app))
    assert meanings["-n"] == {"--limit"}
    assert {short: longs for short, longs in meanings.items() if len(longs) > 1} == {}


def test_man_install_puts_the_page_where_man_finds_it_for_an_editable_install(sh, tmp_path):
    """`pip install -e` installs no data files, so the README's install runs `cmem man --install`: the page
    goes to PREFIX/share/man/man1, which man(1) searches for PREFIX/bin on PATH."""
    import shutil
    import subprocess

    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    result = sh("man", "--install", "--prefix", str(prefix))
    page = prefix / "share" / "man" / "man1" / "cmem.1"
    assert (result.exit_code, result.stdout) == (0, f"{page}\n")
    assert page.read_text() == (REPO / "man" / "cmem.1").read_text()
    if shutil.which("man"):
        env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
        found = subprocess.run(["man", "-w", "cmem"], env=env, capture_output=True, text=True)
        assert found.stdout.strip() == str(page)


def test_sync_help_speaks_of_both_remotes_and_what_exit_9_means_for_each(sh):
    """`cmem sync --help` described a git remote alone, and exit 9 as "git fails", while a home on a
    team database meets exit 9 when its read-only role's push is refused (after pulling)."""
    shown = " ".join(sh("sync", "--help").stdout.split())
    assert "team database" in shown
    assert "read-only" in shown
