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
