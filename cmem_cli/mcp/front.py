"""`cmem mcp`'s first answers before the MCP SDK has loaded.

Clients (Codex, Gemini CLI, opencode, Claude Code) start their MCP servers with every session and wait for
``initialize`` and ``tools/list``; importing the SDK (pydantic, anyio, starlette's types) takes most of a
second. So the process answers those from the SDK's own recorded answers (:mod:`cmem_cli.mcp.handshake`)
with a few lines of stdlib JSON-RPC, while a second thread imports the SDK and starts its server. Every
other message goes to that server, in order: first a copy of the client's ``initialize`` (its answer
dropped, the client already has it), so the server knows its client, then whatever the client sent. From
then on this module only passes lines both ways.

The wire is kept as the SDK keeps it: the real stdin and stdout are moved to descriptors of their own and
fd 0 and 1 point at /dev/null and stderr, so nothing a handler or a library prints can break a frame.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cmem_cli.core.config import Config

PRIVATE_ID = "cmem-front-initialize"  # the id of the copy of ``initialize`` the SDK's server gets


class Wire:
    """The client's side: lines in, whole lines out (one writer at a time)."""

    def __init__(self) -> None:
        self.reader = os.fdopen(os.dup(0), "rb")
        self._out = os.fdopen(os.dup(1), "wb")
        self._lock = threading.Lock()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)

    def send(self, line: bytes) -> None:
        with self._lock:
            self._out.write(line.rstrip(b"\r\n") + b"\n")
            self._out.flush()


class Backend:
    """The SDK's server on a thread of its own, fed through a pipe; lines for it wait until it is up."""

    def __init__(self, config: Config, wire: Wire) -> None:
        self._config, self._wire = config, wire
        self._lock = threading.Lock()
        self._queue: list[bytes] = []
        self._live = False
        self._started = False
        self._up = threading.Event()  # the server reads its pipe (its queue was handed over)
        self._to_sdk_r, self._to_sdk_w = os.pipe()
        self._from_sdk_r, self._from_sdk_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="cmem-mcp-sdk", daemon=True)
        self._pump = threading.Thread(target=self._copy_out, name="cmem-mcp-out", daemon=True)

    def load(self) -> None:
        """Start importing the SDK (once): after the first answer, so that the import does not delay it."""
        if not self._started:
            self._started = True
            self._thread.start()

    def send(self, line: bytes) -> None:
        self.load()
        with self._lock:
            if self._live:
                _write_all(self._to_sdk_w, line.rstrip(b"\r\n") + b"\n")
            else:
                self._queue.append(line)

    def finish(self) -> None:
        """The client closed its side: let the server answer what it was sent, then stop it."""
        if not self._started:
            return  # never needed: the client asked nothing the front did not answer
        self._up.wait()
        with self._lock:
            if self._to_sdk_w >= 0:
                os.close(self._to_sdk_w)
                self._to_sdk_w = -1
        self._thread.join()
        if self._pump.is_alive():
            self._pump.join()

    def _run(self) -> None:
        try:
            import anyio
            from mcp.server.stdio import stdio_server

            from cmem_cli.mcp.server import build_server

            server, tools = build_server(self._config)
        except Exception as exc:  # the SDK missing or broken: one line, and the client sees the server end
            print(f"cmem: mcp: cannot start the MCP server: {type(exc).__name__}: {exc}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(1)
        self._pump.start()
        with self._lock:
            for line in self._queue:
                _write_all(self._to_sdk_w, line.rstrip(b"\r\n") + b"\n")
            self._queue.clear()
            self._live = True
        self._up.set()
        lowlevel = server._lowlevel_server

        async def serve() -> None:
            stdin = anyio.wrap_file(open(self._to_sdk_r, encoding="utf-8", errors="replace"))  # noqa: SIM115
            stdout = anyio.wrap_file(open(self._from_sdk_w, "w", encoding="utf-8"))  # noqa: SIM115
            try:
                async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
                    await lowlevel.run(read, write, lowlevel.create_initialization_options())
            finally:
                await stdout.aclose()

        try:
            anyio.run(serve)
        except KeyboardInterrupt:
            pass
        finally:
            tools.close()

    def _copy_out(self) -> None:
        with open(self._from_sdk_r, "rb") as lines:
            for line in lines:
                if PRIVATE_ID.encode() in line and _id(line) == PRIVATE_ID:
                    continue  # the answer to our copy of initialize: the client has its own
                self._wire.send(line)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _id(line: bytes) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) else None


class Handshake:
    """The answers this module gives itself: ``initialize`` (well-formed), then ``ping``, ``tools/list`` and
    ``resources/templates/list`` without a cursor, for the version ``initialize`` agreed."""

    def __init__(self) -> None:
        from cmem_cli.mcp.handshake import load

        self._answers = load()
        self.version: str | None = None

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method, params = message.get("method"), message.get("params")
        if method == "initialize":
            if self.version is not None or not isinstance(params, dict) or not _well_formed(params):
                return None
            asked = params["protocolVersion"]
            if asked not in self._answers:  # a revision the SDK may know otherwise: it answers itself
                return None
            self.version = asked
            return self._answers[asked]["initialize"]  # type: ignore[no-any-return]
        if self.version is None or params not in (None, {}):
            return None
        if method == "ping":
            return {}
        if method in ("tools/list", "resources/templates/list"):
            return self._answers[self.version][method]  # type: ignore[no-any-return]
        return None


def _well_formed(params: Any) -> bool:
    return (
        isinstance(params, dict)
        and isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(params.get("clientInfo"), dict)
        and isinstance(params["clientInfo"].get("name"), str)
        and isinstance(params["clientInfo"].get("version"), str)
    )


def start(config: Config) -> int:
    """`cmem mcp`: this front, or the SDK's server alone where ``CMEM_MCP_FRONT=off``."""
    from cmem_cli.mcp.handshake import FRONT_SWITCH

    if os.environ.get(FRONT_SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        from cmem_cli.mcp.server import serve as serve_sdk

        return serve_sdk(config)
    return serve(config)


def serve(config: Config, wire: Wire | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    wire = wire or Wire()
    handshake = Handshake()
    backend = Backend(config, wire)
    with contextlib.suppress(KeyboardInterrupt):
        _loop(wire.reader, wire, handshake, backend)
    backend.finish()
    return 0


def _loop(reader: IO[bytes], wire: Wire, handshake: Handshake, backend: Backend) -> None:
    for line in reader:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
            result = handshake.answer(message)
            if result is not None:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                wire.send(json.dumps(reply, ensure_ascii=False).encode())
                if message["method"] == "initialize":  # the server must know its client too
                    backend.send(json.dumps({**message, "id": PRIVATE_ID}).encode())
                continue
        backend.send(line)
