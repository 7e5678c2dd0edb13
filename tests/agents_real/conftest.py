"""Keeps what the real-client harness found, per agent, when ``CMEM_AGENTS_RESULTS`` names a file: the
client version and each check's outcome. ``python scripts/generate.py`` makes docs/agents.md's table of
tested agents from the committed copy (tests/agents_real/results.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

_OUTCOMES: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path, _, rest = report.nodeid.partition("::")
    if "agents_real/test_" not in path or report.when != "call" and report.passed:
        return
    agent = Path(path).stem.removeprefix("test_").replace("_", "-")
    name = rest.rsplit("::", 1)[-1]
    _OUTCOMES.setdefault(agent, {})[name] = report.passed and not hasattr(report, "wasxfail")


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("CMEM_AGENTS_RESULTS")
    if not target or hasattr(session.config, "workerinput") or not _OUTCOMES:
        return
    from tests.agents_real import contract, harness

    checks = sorted(n for n in dir(contract.AgentContract) if n.startswith("test_"))
    data: dict[str, Any] = json.loads(Path(target).read_text()) if Path(target).exists() else {}
    for item in session.items:
        cls = getattr(item, "cls", None)
        agent = getattr(cls, "agent", None)
        outcomes = _OUTCOMES.get(Path(str(item.path)).stem.removeprefix("test_").replace("_", "-"), {})
        if agent is None or sorted(outcomes) != checks:
            continue  # only an agent whose every check ran
        package = getattr(item.module, "PACKAGE", "")
        data[agent] = {
            "package": package,
            "version": harness.pinned(package),
            "imports": cls.imports,
            "note_session": cls.note_session,
            "instructions": cls.instructions,
            "checks": {name: outcomes[name] for name in checks},
        }
    Path(target).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
