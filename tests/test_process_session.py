"""An agent that gives its shell no session (Gemini CLI, opencode, Kilo Code, Qwen Code, Factory Droid,
Copilot CLI, Cline) still has its own notes join its session: the SessionStart hook names the session after
the agent's process (cmem_cli/core/process_session.py) and a `cmem add` run below that process finds it. A
note from any other process gets no session; nothing is guessed. Real processes: an "agent" (a Python
process) runs the hook through ``sh -c`` and its note through ``bash -c``, as the clients do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.core import process_session

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="the process tree is read in /proc"
)

CMEM = f"{sys.executable} -m cmem_cli"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "orders-api"
    (repo / ".git").mkdir(parents=True)
    return repo


def agent(project: Path, session: str | None, note: str | None, agent_name: str = "gemini") -> str:
    """One agent process: its SessionStart hook (if ``session``), then its shell's `cmem add` (if ``note``);
    returns the note's id."""
    start = {
        "hook_event_name": "SessionStart",
        "session_id": session,
        "cwd": str(project),
        "source": "startup",
    }
    body = textwrap.dedent(f"""
        import subprocess, sys
        if {session!r}:
            subprocess.run(["sh", "-c", "{CMEM} hook --agent {agent_name} SessionStart"], input={json.dumps(start)!r},
                           text=True, check=True, capture_output=True)
        if {note!r}:
            out = subprocess.run(["bash", "-c", "{CMEM} add --type decision -t " + {json.dumps(note)!r}],
                                 text=True, check=True, capture_output=True)
            print(out.stdout.strip())
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_SESSION", "CMEM_AGENT", "CODEX_SESSION_ID")}
    done = subprocess.run([sys.executable, "-c", body], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def note_row(sh: Any, note: str) -> tuple[Any, ...]:
    [row] = sh("get", note, "--json").json()
    return row["session"], row["agent"], row["project"]


def test_a_note_from_the_shell_of_an_agent_with_no_env_file_joins_the_session_its_hook_started(
    sh, home, project
):
    note = agent(project, "gem-1111-session", "Orders ship in batches of 42")
    assert note_row(sh, note) == ("gem-1111-session", "gemini", "orders-api")
    [(name, data)] = [(p.name, p.read_text()) for p in (home / process_session.FOLDER).iterdir()]
    assert json.loads(data) == {"session": "gem-1111-session", "agent": "gemini"}
    assert oct((home / process_session.FOLDER).stat().st_mode & 0o777) == "0o700"
    assert oct((home / process_session.FOLDER / name).stat().st_mode & 0o777) == "0o600"


def test_a_note_from_another_process_gets_no_session_and_a_gone_agents_file_is_removed(sh, home, project):
    agent(project, "gem-2222-session", None)  # this agent started a session, then exited
    note = agent(project, None, "Refunds go back to the original card")  # another agent, no hook of its own
    assert note_row(sh, note) == (None, "cli", "orders-api")  # never guessed
    agent(project, "gem-3333-session", None)  # the next SessionStart clears the gone agent's file
    names = [json.loads(p.read_text())["session"] for p in (home / process_session.FOLDER).iterdir()]
    assert names == ["gem-3333-session"]  # the gone agent's file is removed, the writer's kept


def test_cmem_session_in_the_environment_still_wins(sh, home, project, monkeypatch):
    monkeypatch.setenv("CMEM_SESSION", "named-by-hand")
    monkeypatch.setenv("CMEM_AGENT", "cli")
    env = dict(os.environ)
    start = {"hook_event_name": "SessionStart", "session_id": "gem-4444", "cwd": str(project)}
    subprocess.run(["sh", "-c", f"{CMEM} hook --agent gemini SessionStart"], input=json.dumps(start), text=True,
                   check=True, env=env, cwd=project, capture_output=True)  # fmt: skip
    out = subprocess.run(["bash", "-c", f"{CMEM} add -t 'Named by hand'"], text=True, env=env, cwd=project,
                         capture_output=True, check=True)  # fmt: skip
    assert note_row(sh, out.stdout.strip())[:2] == ("named-by-hand", "cli")


def planted(home: Path, mode: int, folder_mode: int = 0o700, fifo: bool = False) -> Path:
    """A sessions file for this test's own process (the parent of the `cmem add` it starts)."""
    folder = home / process_session.FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(folder_mode)
    key = process_session._key(os.getpid())
    assert key is not None
    path = folder / key
    if fifo:
        os.mkfifo(path, mode)
    else:
        path.write_text(json.dumps({"session": "planted-session", "agent": "gemini"}))
    path.chmod(mode)
    return path


def note_session(sh: Any, project: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in ("CMEM_SESSION", "CMEM_AGENT", "CODEX_SESSION_ID")}
    out = subprocess.run([sys.executable, "-m", "cmem_cli", "add", "-t", "Planted or not"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return note_row(sh, out.stdout.strip())[0]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("mode", "folder_mode"), [(0o666, 0o700), (0o600, 0o777), (0o620, 0o700)], ids=["file", "folder", "group"]
)
def test_a_sessions_file_others_could_have_written_is_never_trusted(sh, home, project, mode, folder_mode):
    planted(home, mode, folder_mode)
    assert note_session(sh, project) is None


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can plant another user's file")
def test_a_sessions_file_owned_by_another_user_is_never_trusted(sh, home, project):
    path = planted(home, 0o600)
    os.chown(path, 4242, 4242)
    assert note_session(sh, project) is None


@pytest.mark.integration
def test_a_fifo_where_the_sessions_file_is_never_blocks_a_note(sh, home, project):
    planted(home, 0o600, fifo=True)
    assert note_session(sh, project) is None  # returns (timeout 30 s), with no session


def test_the_session_start_hook_makes_a_loose_sessions_folder_private(sh, home, project):
    (home / process_session.FOLDER).mkdir(parents=True, mode=0o755)
    (home / process_session.FOLDER).chmod(0o755)
    agent(project, "gem-5555-session", None)
    assert oct((home / process_session.FOLDER).stat().st_mode & 0o777) == "0o700"


def test_private_text_in_a_session_id_never_reaches_the_sessions_file(sh, home, project):
    note = agent(project, "gem-6666 <private>hidden-part</private>", "Orders ship on Mondays")
    [data] = [p.read_text() for p in (home / process_session.FOLDER).iterdir()]
    assert "hidden-part" not in data
    assert note_row(sh, note)[0] == json.loads(data)["session"]  # the session the store keeps


def test_private_text_in_a_cline_agent_id_never_reaches_the_sessions_file(sh, home, project):
    start = json.loads((Path(__file__).parent / "fixtures/agents/cline/TaskStart.json").read_text())
    start.update(taskId="cline-7777", workspaceRoots=[str(project)], parent_agent_id="agent_0")
    start.update(agent_id="agent_1 <private>hidden-id</private>")  # a subagent: its agent is named by it
    env = {**os.environ, "CMEM_HOOK_DETACH": "on"}
    subprocess.run(["sh", "-c", f"{CMEM} hook --agent cline TaskStart"], input=json.dumps(start), text=True,
                   check=True, env=env, cwd=project, capture_output=True)  # fmt: skip
    [data] = [p.read_text() for p in (home / process_session.FOLDER).iterdir()]
    assert "hidden-id" not in data
