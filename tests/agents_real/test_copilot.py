"""GitHub Copilot CLI (``@github/copilot``, its linux-x64 binary beside) driven by its real client:
``copilot -p --allow-all-tools`` with a provider of the person's own (``COPILOT_PROVIDER_BASE_URL``, BYOK)
against the scripted chat completions server, after ``cmem install copilot``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

# a real client: seconds per session; `-m "not slow"` leaves them out
pytestmark = pytest.mark.slow

PACKAGE = "@github/copilot"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    copilot = run.home / ".copilot"
    return [copilot / "hooks" / "cmem.json", copilot / "mcp-config.json", copilot / "copilot-instructions.md"]


def environment(run: h.Run, server: ModelServer) -> dict[str, str]:
    return {
        "COPILOT_PROVIDER_BASE_URL": f"{server.url}/v1",
        "COPILOT_PROVIDER_API_KEY": "sk-scripted",
        "COPILOT_MODEL": "scripted-model",
        "COPILOT_AUTO_UPDATE": "false",
    }


CLIENT = h.Client(
    agent="copilot",
    program="copilot",
    package=PACKAGE,
    configure=configure,
    command=lambda copilot, prompt: [str(copilot), "-p", prompt, "--allow-all"],
    env=environment,
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestCopilot(AgentContract):
    agent = "copilot"
    imports = False  # no `cmem import copilot`
    instructions = True  # ~/.copilot/copilot-instructions.md
    cannot = {
        "turn summary": "its Stop hook carries no answer text and there is no transcript cmem reads",
    }


@pytest.fixture(scope="module")
def claude_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    """One scripted session in a repository whose `.claude/settings.json` holds cmem's project-scope Claude
    Code hooks, with no Copilot hooks installed."""
    server = ModelServer().start()
    try:
        run, _ = h.prepare(CLIENT, tmp_path_factory.mktemp("copilot-claude"), server)
        run.cmem("install", "claude-code", "--scope", "project")
        run.sessions.append(
            h.session(CLIENT, run, server, h.FIRST_PROMPT, h.first_script(run.repo, h.cmem_executable()))
        )
        h.wait_for_hooks(run)
        yield run
    finally:
        server.stop()


def test_copilot_headless_does_not_run_the_repositorys_claude_code_hooks(claude_project: h.Run) -> None:
    """Copilot CLI 1.0.102's `copilot -p` does not run `.claude/settings.json` hooks (the issue's claim may
    hold for its TUI or another version; cmem_cli/capture/agents/copilot.py records such calls as
    `copilot`): cmem has no session, only the note the agent added, with no session."""
    run = claude_project
    assert h.ANSWER in run.sessions[0].stdout  # the session ran to its answer
    assert run.rows("SELECT session_id FROM sessions") == []
    assert run.rows("SELECT title, session, agent FROM observations") == [(h.NOTE_TITLE, None, "cli")]
