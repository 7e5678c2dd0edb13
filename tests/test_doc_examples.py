"""Every shell example in README.md and docs/*.md runs as pasted, so the documentation cannot rot.

Each ```sh block runs under ``bash -e -o pipefail`` in a fresh ``$HOME`` (``~/notes``, ``~/.local/state`` and
the like are temporary folders) holding two observations, ``~/notes`` and ``~/work/docs`` with a few markdown
files, ``~/models/all-MiniLM-L6-v2`` (the local test checkpoint: no network) and ``cmem`` in
``~/.local/bin`` and on the PATH, and an empty ``~/.claude/projects`` as Claude Code leaves; the working directory is a git repository with one commit and a
``notes.json``. A ```cron block runs each crontab line's command with ``sh`` and cron's short PATH, as cron would, and must
print nothing (cron mails any output). A block preceded by ``<!-- doc-test: skip (REASON) -->`` is not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.model_fixtures import minilm_checkpoint

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"(?:^<!-- doc-test: (?P<marker>[^\n]*?) -->\n)?^```(?P<lang>sh|cron)\n(?P<body>.*?)^```", re.M | re.S
)
SKIP = re.compile(r"skip \(\S[^)]*\)")


def _blocks() -> list[tuple[str, str | None, str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start("lang")].count("\n") + 1
            name = f"{path.relative_to(REPO)}:{line}"
            found.append((name, match.group("marker"), match.group("lang"), match.group("body")))
    return found


BLOCKS = _blocks()
RUNNABLE = [pytest.param(lang, body, id=name) for name, marker, lang, body in BLOCKS if marker is None]


def test_every_marker_is_a_skip_with_a_reason_and_most_blocks_run():
    markers = [(name, marker) for name, marker, _, _ in BLOCKS if marker is not None]
    assert all(SKIP.fullmatch(marker) for _, marker in markers), markers
    assert len(RUNNABLE) >= 12 and len(RUNNABLE) > len(markers)


def _without_the_venv(path: str) -> list[str]:
    """PATH's folders less the one of the Python running the tests (an activated venv's bin)."""
    venv_bin = os.path.realpath(os.path.dirname(sys.executable))
    return [folder for folder in path.split(os.pathsep) if folder and os.path.realpath(folder) != venv_bin]


@pytest.fixture
def user_home(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home = tmp_path / "home"
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    # The user's cmem, and `python3` as the Python it is installed in (what an activated venv gives): the
    # blocks run the same whether or not the test runner's venv is activated, since its bin is left out
    for name, command in (("cmem", f'"{sys.executable}" -m cmem_cli'), ("python3", f'"{sys.executable}"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    for relpath, text in {
        "notes/login.md": "# Login\n\nUsers were logged out early: the cookie max-age was multiplied twice.\n",
        "notes/deploy.md": "# Deploy\n\nDeploys go through the staging cluster first.\n",
        "work/docs/guides/setup.md": "# Setup\n\nInstall the toolchain, then run make.\n",
    }.items():
        (home / relpath).parent.mkdir(parents=True, exist_ok=True)
        (home / relpath).write_text(text)
    (home / ".claude" / "projects").mkdir(parents=True)  # a Claude Code user's (empty) transcript folder
    (home / "models").mkdir()
    (home / "models" / "all-MiniLM-L6-v2").symlink_to(minilm_checkpoint())
    # What a user's shell hands on, and where Python keeps its bytecode: the blocks' processes share the run's
    # folder of it (tests/conftest.py) instead of compiling cmem again and writing it next to the sources
    keep = (
        "PATH",
        "PYTHONPATH",
        "LANG",
        "LC_ALL",
        "TERM",
        "TMPDIR",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPYCACHEPREFIX",
    )
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(bin_dir), *_without_the_venv(os.environ["PATH"])]),
        GIT_AUTHOR_NAME="doc test",
        GIT_AUTHOR_EMAIL="doc@example.com",
        GIT_COMMITTER_NAME="doc test",
        GIT_COMMITTER_EMAIL="doc@example.com",
    )
    work = home / "src" / "webapp"
    work.mkdir(parents=True)
    notes = {
        "notes": [{"headline": "Retries need keys", "body": "Use idempotency keys.", "date": "2026-11-01"}]
    }
    (work / "notes.json").write_text(json.dumps(notes))
    for args in (["init", "-q"], ["add", "notes.json"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    for title in ("Fix the flaky test in CI", "Use advisory locks for the job queue"):
        subprocess.run(["cmem", "add", title], cwd=work, env=env, check=True, capture_output=True)
    return home, work, env


@pytest.mark.parametrize(("lang", "body"), RUNNABLE)
def test_documented_block_runs_as_pasted(user_home, lang, body):
    home, work, env = user_home
    if lang == "cron":
        lines = [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        # cron's own environment: HOME, LOGNAME, SHELL and a short PATH, not the user's shell's
        cron_env = {"HOME": env["HOME"], "LOGNAME": "doc", "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin"}
        cron_env.update({k: env[k] for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX") if k in env})
        for line in lines:
            command = line.split(None, 5)[5]
            done = subprocess.run(
                ["sh", "-c", command], cwd=home, env=cron_env, capture_output=True, text=True
            )
            assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), command
        return
    out, err = home / "block.out", home / "block.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", body],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # `cmem watch &` and the like are stopped with the block
        )
        try:
            code = proc.wait(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):  # nothing left running
                os.killpg(proc.pid, signal.SIGTERM)
    errors = err.read_text()
    assert code == 0, f"exit {code}\n{errors}"
    assert "Traceback" not in errors


def test_readme_xargs_lines_do_nothing_on_empty_input(tmp_path):
    """A search that finds nothing must not run `cmem get` with no ids (GNU xargs runs it once otherwise)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in readme.splitlines() if "| xargs" in line]
    assert lines
    env = {**os.environ, "CMEM_HOME": str(tmp_path / "empty-home"), "CMEM_EMBED_MODEL": "none"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the venv's cmem
    for line in lines:
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (0, ""), (line, done.stderr)
        assert "cmem get" not in done.stderr and "no ids" not in done.stderr, (line, done.stderr)
