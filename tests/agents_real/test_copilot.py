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
        "prompt recall": "cmem's Copilot adapter gives no prompt recall yet (issue 44)",
        "turn summary": "its Stop hook carries no answer text and there is no transcript cmem reads",
        "briefing": "it does not read SessionStart's output (its hooks reference: not processed)",
    }
