"""What the MCP SDK's server answers to the handshake, recorded once so that `cmem mcp` can answer it before
the SDK has loaded (:mod:`cmem_cli.mcp.front`).

``handshake.json`` beside this module holds, for every protocol version the SDK negotiates by ``initialize``
(and for one it does not know: its counter-offer), the SDK's own answers to ``initialize``, ``tools/list``
and ``resources/templates/list``. ``python scripts/generate.py`` records them by driving the real server
(the front switched off) over its pipes, and tests/test_generated.py fails when they are stale (a new search
field, a changed description).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("handshake.json")
UNKNOWN = "0000-00-00"  # a version no SDK speaks: what the server counter-offers is recorded under "*"
FRONT_SWITCH = "CMEM_MCP_FRONT"  # "off": `cmem mcp` is the SDK's server alone, from the first message
METHODS = ("tools/list", "resources/templates/list")


def load() -> dict[str, Any]:
    """The recorded answers: ``{version or "*": {method: result}}``."""
    return json.loads(PATH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def record() -> dict[str, Any]:
    """Drive the SDK's server as a client would, once per protocol version, and keep its results."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    answers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CMEM_HOME": home, FRONT_SWITCH: "off"}
        env.pop("CMEM_PROJECT", None)
        for version in (*HANDSHAKE_PROTOCOL_VERSIONS, UNKNOWN):
            answers["*" if version == UNKNOWN else version] = _exchange(version, env, home)
    return answers


def _exchange(version: str, env: dict[str, str], cwd: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "cmem", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(METHODS, start=2)),
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    by_id: dict[Any, dict[str, Any]] = {}
    try:
        for message in messages:  # one at a time: each answered before the next is sent
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            while "id" in message and message["id"] not in by_id:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"`cmem mcp` ended before answering {message['method']}")
                answer = json.loads(line)
                by_id[answer.get("id")] = answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    result = {"initialize": by_id[1]["result"]}
    for n, method in enumerate(METHODS, start=2):
        result[method] = by_id[n]["result"]
    return result


def text(answers: dict[str, Any]) -> str:
    """The file's text: stable, so that a regeneration changes it only when an answer changed."""
    return json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
