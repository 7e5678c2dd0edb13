"""Generated files (completions, man page, CLI reference) must match the current CLI."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_generated_files_are_up_to_date():
    result = subprocess.run(
        [sys.executable, "scripts/generate.py", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_bash_completion_completes_commands_and_options():
    script = f"""
        source {REPO}/completions/cmem.bash
        COMP_WORDS=(cmem sea); COMP_CWORD=1; _cmem; echo "${{COMPREPLY[@]}}"
        COMP_WORDS=(cmem session st); COMP_CWORD=2; _cmem; echo "${{COMPREPLY[@]}}"
        COMP_WORDS=(cmem search --or); COMP_CWORD=2; _cmem; echo "${{COMPREPLY[@]}}"
    """
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["search", "start", "--order"]


def test_man_page_documents_every_command_and_exit_code():
    page = (REPO / "man" / "cmem.1").read_text()
    for command in ("add", "search", "timeline", "get", "doctor"):
        assert f".SS {command}" in page
    assert ".SH EXIT STATUS" in page and "\\fB8\\fR" in page


def test_only_options_that_take_a_path_complete_file_names(tmp_path):
    """`--project al<TAB>` must not offer alpha.txt; `--file al<TAB>` should."""
    (tmp_path / "alpha.txt").write_text("")
    script = f"""
        source {REPO}/completions/cmem.bash
        COMP_WORDS=(cmem search --project al); COMP_CWORD=3; _cmem; echo "project:${{COMPREPLY[@]}}"
        COMP_WORDS=(cmem add --session al); COMP_CWORD=3; _cmem; echo "session:${{COMPREPLY[@]}}"
        COMP_WORDS=(cmem search --file al); COMP_CWORD=3; _cmem; echo "file:${{COMPREPLY[@]}}"
    """
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.splitlines() == ["project:", "session:", "file:alpha.txt"]
    zsh = (REPO / "completions" / "_cmem").read_text()
    assert "[Project name.]:name: '" in zsh and "[Project name.]:name:_files" not in zsh
    fish = (REPO / "completions" / "cmem.fish").read_text()
    assert "complete -c cmem -n '__fish_seen_subcommand_from search' -l project -s p -r -f " in fish
