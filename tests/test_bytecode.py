"""cmem's bytecode exists where Python looks for it even where PYTHONDONTWRITEBYTECODE is set: the first run
compiles it (detached), `cmem install` compiles it, and `cmem doctor` says when start-up pays for it.

Each test gives its processes an empty bytecode folder of their own (PYTHONPYCACHEPREFIX), so that what
they find compiled is what cmem compiled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

STALE = "from cmem_cli.core.bytecode import stale_modules; print(len(stale_modules()))"


def no_bytecode_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc")}
    env.update(extra)
    return env


def stale_count(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-c", STALE], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def cmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_run_without_bytecode_compiles_cmem_once_in_the_background(home, tmp_path):
    env = no_bytecode_env(tmp_path)
    assert stale_count(env) > 100  # nothing compiled in the empty folder
    assert cmem(env, "--version").returncode == 0
    deadline = time.monotonic() + 180
    while stale_count(env) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert stale_count(env) == 0


def test_doctor_warns_that_start_up_compiles_and_fix_compiles(home, tmp_path):
    env = no_bytecode_env(tmp_path, CMEM_COMPILE="off")
    first = cmem(env, "doctor", "--json")
    [check] = [c for c in json.loads(first.stdout)["checks"] if c["name"] == "bytecode"]
    assert first.returncode == 0, first.stderr  # a warning: nothing is wrong with the memory
    assert check["status"] == "warn" and "every start-up compiles them" in check["detail"]

    fixed = cmem(env, "doctor", "--fix", "--json")
    [check] = [c for c in json.loads(fixed.stdout)["checks"] if c["name"] == "bytecode"]
    assert check["status"] == "fixed" and stale_count(env) == 0
    again = json.loads(cmem(env, "doctor", "--json").stdout)["checks"]
    assert [c["status"] for c in again if c["name"] == "bytecode"] == ["ok"]


def test_install_compiles_what_its_hooks_will_start(home, tmp_path):
    env = no_bytecode_env(tmp_path, CMEM_COMPILE="off")
    result = cmem(env, "install", "claude-code")
    assert result.returncode == 0, result.stderr
    assert "compiled" in result.stderr and stale_count(env) == 0
