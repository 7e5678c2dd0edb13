"""Codex CLI (``@openai/codex``) driven by its real client: ``codex exec`` against the scripted OpenAI
Responses server (a ``[model_providers.scripted]`` with ``wire_api = "responses"`` in the person's own
``config.toml``), after ``cmem install codex``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

# a real client: seconds per session; `-m "not slow"` leaves them out
pytestmark = pytest.mark.slow

PACKAGE = "@openai/codex"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    codex_home = run.home / ".codex"
    codex_home.mkdir(parents=True)
    config = codex_home / "config.toml"
    config.write_text(
        "# my Codex settings\n"
        'model = "gpt-5.5"\n'  # a model Codex offers its apply_patch tool
        'model_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{server.url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "SCRIPTED_API_KEY"\n'
    )
    return [config, codex_home / "hooks.json", codex_home / "AGENTS.md"]


CLIENT = h.Client(
    agent="codex",
    program="codex",
    package=PACKAGE,
    configure=configure,
    command=lambda codex, prompt: [
        str(codex),
        "exec",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        prompt,
    ],  # fmt: skip
    env=lambda run, server: {"SCRIPTED_API_KEY": "sk-scripted", "CODEX_HOME": str(run.home / ".codex")},
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestCodex(AgentContract):
    agent = "codex"
    instructions = True  # $CODEX_HOME/AGENTS.md
