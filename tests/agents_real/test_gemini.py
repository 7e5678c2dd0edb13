"""Gemini CLI (``@google/gemini-cli``) driven by its real client: ``gemini -p`` against the scripted
``streamGenerateContent`` server (``GOOGLE_GEMINI_BASE_URL``, an API key), after ``cmem install gemini``."""

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

PACKAGE = "@google/gemini-cli"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    settings = run.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}, indent=2) + "\n"
    )
    return [settings]


CLIENT = h.Client(
    agent="gemini",
    program="gemini",
    package=PACKAGE,
    configure=configure,
    command=lambda gemini, prompt: [str(gemini), "-p", prompt, "--yolo"],
    env=lambda run, server: {
        "GEMINI_API_KEY": "scripted",
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # headless in a folder never trusted interactively
    },
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestGemini(AgentContract):
    agent = "gemini"
    # Gemini CLI 0.61 has no env file: the session is handed on by process (cmem_cli/core/process_session.py)
