"""Cline's CLI (``cline``, its linux-x64 binary ``@cline/cli-linux-x64`` beside) driven by its real client:
``cline PROMPT --auto-approve true`` with an ``openai`` provider (``cline auth -b URL``) against the scripted
chat completions server, after ``cmem install cline``."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cmem_cli.capture.agents.cline import EVENTS
from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

# a real client: seconds per session; `-m "not slow"` leaves them out
pytestmark = pytest.mark.slow

PACKAGE = "cline"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    auth = ["auth", "-p", "openai", "-k", "sk-scripted", "-m", "scripted-model", "-b", f"{server.url}/v1"]
    subprocess.run([str(CLIENT.path()), *auth], env=run.env, cwd=run.repo, check=True, capture_output=True,
                   timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    documents = run.home / "Documents" / "Cline"
    hooks = [documents / "Hooks" / event for event in EVENTS]
    mcp = run.home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    return [*hooks, documents / "Rules" / "cmem.md", mcp]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


CLIENT = h.Client(
    agent="cline",
    program="cline",
    package=PACKAGE,
    configure=configure,
    command=lambda cline, prompt: [str(cline), prompt, "--auto-approve", "true"],
    # its hub daemon outlives the run (the harness stops it): one of its own per run, not a machine-wide one
    env=lambda run, server: {"CLINE_HUB_PORT": str(free_port())},
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestCline(AgentContract):
    agent = "cline"
    imports = False  # no `cmem import cline`
    instructions = True  # ~/Documents/Cline/Rules/cmem.md
    cannot = {
        "prompt recall": "`cline PROMPT` fires no UserPromptSubmit",
        "prompts": "`cline PROMPT` fires no UserPromptSubmit and TaskStart carries no prompt",
        "session end": "`cline PROMPT` fires no SessionShutdown",
        "briefing": "the CLI runs TaskStart hooks detached and drops their contextModification",
    }
