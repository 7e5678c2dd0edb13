"""Factory Droid (``@factory/cli``, the linux-x64 binary ``@factory/cli-linux-x64``) driven by its real client:
``droid exec`` with a custom model (``provider: generic-chat-completion-api`` in the person's own
``~/.factory/settings.json``) against the scripted chat completions server, after ``cmem install droid``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

# a real client: seconds per session; `-m "not slow"` leaves them out
pytestmark = pytest.mark.slow

PACKAGE = "@factory/cli-linux-x64"  # the binary that runs (the npm wrapper @factory/cli is 0.225.1)
MODEL = "scripted-model"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    factory = run.home / ".factory"
    factory.mkdir(parents=True)
    settings = factory / "settings.json"
    model = {
        "model": MODEL,
        "displayName": "Scripted",
        "baseUrl": f"{server.url}/v1",
        "apiKey": "sk-scripted",
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 4096,
    }
    settings.write_text(json.dumps({"customModels": [model]}, indent=2) + "\n")
    return [settings, factory / "hooks.json", factory / "mcp.json", factory / "AGENTS.md"]


CLIENT = h.Client(
    agent="droid",
    program="droid",
    package=PACKAGE,
    configure=configure,
    command=lambda droid, prompt: [
        str(droid),
        "exec",
        "-m",
        f"custom:{MODEL}",
        "--skip-permissions-unsafe",
        prompt,
    ],
    env=lambda run, server: {},
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestDroid(AgentContract):
    agent = "droid"
    imports = False  # no `cmem import droid`
    instructions = True  # ~/.factory/AGENTS.md
    cannot = {
        "prompts": "`droid exec` fires no UserPromptSubmit",
        "prompt recall": "`droid exec` fires no UserPromptSubmit",
        "failed commands": "a tool call that fails fires no PostToolUse",
    }
