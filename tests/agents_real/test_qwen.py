"""Qwen Code (``@qwen-code/qwen-code``) driven by its real client: ``qwen -p --yolo`` against the scripted chat
completions server (``OPENAI_BASE_URL`` with the ``openai`` auth type in the person's ``settings.json``), after
``cmem install qwen``."""

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

PACKAGE = "@qwen-code/qwen-code"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    settings = run.home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True)
    # as Qwen Code leaves it: it adds "$version" to a settings file without one
    person = {"security": {"auth": {"selectedType": "openai"}}, "$version": 4}
    settings.write_text(json.dumps(person, indent=2) + "\n")
    return [settings, run.home / ".qwen" / "QWEN.md"]


CLIENT = h.Client(
    agent="qwen",
    program="qwen",
    package=PACKAGE,
    configure=configure,
    command=lambda qwen, prompt: [str(qwen), "-p", prompt, "--yolo"],
    env=lambda run, server: {
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_MODEL": "scripted-model",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    },
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestQwen(AgentContract):
    agent = "qwen"
    imports = False  # no `cmem import qwen`
    instructions = True  # ~/.qwen/QWEN.md
    cannot = {"session end": "`qwen -p` fires no SessionEnd (only its interactive UI and ACP do)"}
