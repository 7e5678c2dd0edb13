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
    import importlib

    from tests.agents_real import contract, harness

    checks = sorted(n for n in dir(contract.AgentContract) if n.startswith("test_"))
    data: dict[str, Any] = json.loads(Path(target).read_text()) if Path(target).exists() else {}
    for name, outcomes in sorted(_OUTCOMES.items()):
        if any(check not in outcomes for check in checks):
            continue  # only an agent whose every check ran (a module may have more tests of its own)
        module = importlib.import_module(f"tests.agents_real.test_{name.replace('-', '_')}")
        spec: harness.Client = module.CLIENT
        [cls] = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, contract.AgentContract)
                 and c is not contract.AgentContract]  # fmt: skip
        data[spec.agent] = {
            "package": spec.package,
            "version": harness.pinned(spec.package),
            "imports": cls.imports,
            "note_session": cls.note_session,
            "instructions": cls.instructions,
            "cannot": dict(sorted(cls.cannot.items())),
            "checks": {check: outcomes[check] for check in checks},
        }
    Path(target).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
