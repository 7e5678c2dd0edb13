"""Kilo Code's CLI (``@kilocode/cli``, the linux-x64 binary ``@kilocode/cli-linux-x64``) driven by its real
client: ``kilo run`` against the scripted chat completions server (an ``@ai-sdk/openai-compatible`` provider
with a ``baseURL`` in the person's own ``kilo.json``), after ``cmem install kilo`` (its plugin)."""

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

PACKAGE = "@kilocode/cli-linux-x64"  # the binary that runs (the npm wrapper @kilocode/cli is 7.8.1)


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    folder = Path(run.env["XDG_CONFIG_HOME"]) / "kilo"
    folder.mkdir(parents=True)
    config = folder / "kilo.json"
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": f"{server.url}/v1", "apiKey": "scripted"},
        "models": {"scripted-model": {"name": "Scripted", "tool_call": True}},
    }
    config.write_text(json.dumps({
        "$schema": "https://app.kilo.ai/config.json",  # Kilo adds it to a config without one
        "model": "scripted/scripted-model",
        "permission": {"edit": "allow", "bash": "allow"},
        "snapshot": False,  # its git snapshot of the work tree took minutes on a loaded machine
        "provider": {"scripted": provider},
    }, indent=2) + "\n")  # fmt: skip
    # @kilocode/plugin 7.7.9 is not published (7.3.1 is the last): without this, each start asks the
    # registry again, 0.7 to 54 s here
    h.plugin_package_installed(folder, "@kilocode/plugin", h.pinned(PACKAGE))
    return [config, folder / "plugins" / "cmem.js", folder / "AGENTS.md"]


CLIENT = h.Client(
    agent="kilo",
    program="kilo",
    package=PACKAGE,
    configure=configure,
    # the words as typed (`kilo run make it so`), as opencode takes them
    command=lambda kilo, prompt: [str(kilo), "run", *prompt.split()],
    env=lambda run, server: {
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_DISABLE_MODELS_FETCH": "1",
        # nothing that calls Kilo's own services (no network here: each waits for its timeout)
        "KILO_DISABLE_SHARE": "1",
        "KILO_DISABLE_SESSION_INGEST": "1",
        "KILO_DISABLE_PRESENCE": "1",
        "KILO_TELEMETRY_LEVEL": "off",
        "KILO_DISABLE_LSP_DOWNLOAD": "1",
        # the provider package Kilo installs on first use: once per machine, not per test
        "XDG_CACHE_HOME": str(h.prefix() / "xdg-cache"),
    },
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestKilo(AgentContract):
    agent = "kilo"
    imports = False  # no `cmem import kilo`
    instructions = True  # ~/.config/kilo/AGENTS.md
