"""Claude Code (``@anthropic-ai/claude-code``) driven by its real client: ``claude -p`` against the scripted
Anthropic Messages server (``ANTHROPIC_BASE_URL``), after ``cmem install claude-code``."""

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

PACKAGE = "@anthropic-ai/claude-code"


def configure(run: h.Run, server: ModelServer) -> list[Path]:
    settings = run.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"includeCoAuthoredBy": False}, indent=4) + "\n")
    return [settings, run.home / ".claude" / "CLAUDE.md"]


CLIENT = h.Client(
    agent="claude-code",
    program="claude",
    package=PACKAGE,
    configure=configure,
    command=lambda claude, prompt: [str(claude), "-p", prompt, "--dangerously-skip-permissions"],
    env=lambda run, server: {
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-scripted",
        "IS_SANDBOX": "1",  # --dangerously-skip-permissions as root (CI containers)
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    },
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Run]:
    yield from h.module_run(CLIENT, tmp_path_factory)


class TestClaudeCode(AgentContract):
    agent = "claude-code"
    instructions = True  # ~/.claude/CLAUDE.md
