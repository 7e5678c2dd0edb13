"""opencode (``opencode-ai``) driven by its real client: ``opencode run`` against the scripted chat
completions server (an ``@ai-sdk/openai-compatible`` provider with a ``baseURL`` in the person's own
``opencode.json``), after ``cmem install opencode`` (its plugin)."""

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

PACKAGE = "opencode-ai"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
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
        "snapshot": False,  # its git snapshot of the work tree took minutes on a loaded machine
        "provider": {"scripted": provider},
    }, indent=2) + "\n")  # fmt: skip
    h.plugin_package_installed(folder, "@opencode-ai/plugin", h.pinned(PACKAGE))
    return [config, folder / "plugins" / "cmem.js"]


CLIENT = h.Client(
    agent="opencode",
    program="opencode",
    package=PACKAGE,
    configure=configure,
    # the words as typed (`opencode run make it so`): opencode quotes an argument holding spaces
    command=lambda opencode, prompt: [str(opencode), "run", *prompt.split()],
    env=lambda run, server: {
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        # the provider package opencode installs on first use: once per machine, not per test
        "XDG_CACHE_HOME": str(h.prefix() / "xdg-cache"),
    },
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestOpencode(AgentContract):
    agent = "opencode"
    # opencode has no env file: the session is handed on by process (cmem_cli/core/process_session.py)
    imports = False  # cmem import opencode reads `opencode export` files, not the client's own store
