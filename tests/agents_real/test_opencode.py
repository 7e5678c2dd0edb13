"""opencode (``opencode-ai``) driven by its real client: ``opencode run`` against the scripted chat
completions server (an ``@ai-sdk/openai-compatible`` provider with a ``baseURL`` in the person's own
``opencode.json``), after ``cmem install opencode`` (its plugin)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agents_real import harness as h
from tests.agents_real.contract import AgentContract
from tests.agents_real.model_server import ModelServer

PACKAGE = "opencode-ai"


def configure(server: ModelServer) -> Callable[[h.Run], list[Path]]:
    def write(run: h.Run) -> list[Path]:
        folder = Path(run.env["XDG_CONFIG_HOME"]) / "opencode"
        folder.mkdir(parents=True)
        config = folder / "opencode.json"
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": f"{server.url}/v1", "apiKey": "scripted"},
            "models": {"scripted-model": {"name": "Scripted", "tool_call": True}},
        }
        config.write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "model": "scripted/scripted-model",
            "permission": {"edit": "allow", "bash": "allow"},
            "provider": {"scripted": provider},
        }, indent=2) + "\n")  # fmt: skip
        return [config, folder / "plugins" / "cmem.js"]

    return write


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    opencode = h.client("opencode", PACKAGE)
    server = ModelServer().start()
    try:
        yield h.run_agent(
            "opencode",
            tmp_path_factory.mktemp("opencode"),
            server,
            configure=configure(server),
            start=lambda run, prompt: [
                str(opencode),
                "run",
                *prompt.split(),
            ],  # as typed: opencode quotes an argument with spaces
            env=lambda run: {
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                # the provider package opencode installs on first use: once per machine, not per test
                "XDG_CACHE_HOME": str(h.prefix() / "xdg-cache"),
            },
        )
    finally:
        server.stop()


class TestOpencode(AgentContract):
    agent = "opencode"
    note_session = False  # opencode gives its shell commands no session id
    imports = False  # cmem import opencode reads `opencode export` files, not the client's own store
