"""Codex CLI (``@openai/codex``) driven by its real client: ``codex exec`` against the scripted OpenAI
Responses server (a ``[model_providers.scripted]`` with ``wire_api = "responses"`` in the person's own
``config.toml``), after ``cmem install codex``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

PACKAGE = "@openai/codex"


def configure(server: ModelServer) -> Callable[[h.Run], list[Path]]:
    def write(run: h.Run) -> list[Path]:
        codex_home = run.home / ".codex"
        codex_home.mkdir(parents=True)
        config = codex_home / "config.toml"
        config.write_text(
            "# my Codex settings\n"
            'model = "gpt-5.5"\n'
            'model_provider = "scripted"\n\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{server.url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_API_KEY"\n'
        )
        return [config, codex_home / "hooks.json", codex_home / "AGENTS.md"]

    return write


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    codex = h.client("codex", PACKAGE)
    server = ModelServer().start()
    try:
        yield h.run_agent(
            "codex",
            tmp_path_factory.mktemp("codex"),
            server,
            configure=configure(server),
            start=lambda run, prompt: [
                str(codex),
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
                prompt,
            ],  # fmt: skip
            env=lambda run: {"SCRIPTED_API_KEY": "sk-scripted", "CODEX_HOME": str(run.home / ".codex")},
        )
    finally:
        server.stop()


class TestCodex(AgentContract):
    agent = "codex"
    instructions = True  # $CODEX_HOME/AGENTS.md
