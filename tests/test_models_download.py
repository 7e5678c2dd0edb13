"""`cmem models pull` against a real HTTP server on 127.0.0.1: success, resume, truncation, corruption,
hash mismatch, unreachable and stalled servers. Nothing here reaches the internet."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cmem_cli.core.errors import ModelError
from cmem_index.download import pull
from cmem_index.model_specs import parse_spec, resolve

REPO = Path(__file__).resolve().parent.parent
SPEC = "hf:acme/tiny-GGUF/tiny-q8.gguf"
PAYLOAD = b"GGUF" + bytes(range(256)) * 4096  # ~1 MiB, starts with the GGUF magic


class ModelServer(http.server.ThreadingHTTPServer):
    """Serves ``files`` at /OWNER/REPO/resolve/main/FILE with Range support and injectable faults."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.requests: list[dict[str, str | None]] = []
        self.cut_after: int | None = None  # close the connection after this many body bytes
        self.sent = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: ModelServer

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.server.requests.append({"path": self.path, "range": self.headers.get("Range")})
        data = self.server.files.get(self.path)
        if data is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        status = 200
        if rng := self.headers.get("Range"):
            start = int(rng.removeprefix("bytes=").split("-")[0])
            status = 206
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.server.cut_after is not None:
            body = body[: self.server.cut_after]
        self.wfile.write(body)
        self.server.sent += len(body)
        self.wfile.flush()
        if self.server.cut_after is not None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    srv = ModelServer()
    srv.files["/acme/tiny-GGUF/resolve/main/tiny-q8.gguf"] = PAYLOAD
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "models"


def dest_of(models_dir: Path) -> Path:
    return models_dir / "acme" / "tiny-GGUF" / "tiny-q8.gguf"


def test_pull_downloads_into_the_models_dir_with_progress(server: ModelServer, models_dir: Path) -> None:
    seen: list[tuple[int, int | None]] = []
    path = pull(SPEC, models_dir, endpoint=server.endpoint, progress=lambda d, t: seen.append((d, t)))
    assert path == dest_of(models_dir)
    assert path.read_bytes() == PAYLOAD
    assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))
    assert [s[0] for s in seen] == sorted(s[0] for s in seen)
    assert not list(models_dir.rglob("*.part")) and not list(models_dir.rglob("*.lock"))


def test_pulled_models_and_their_folders_are_private(server: ModelServer, tmp_path: Path) -> None:
    models_dir = tmp_path / "cache" / "cmem" / "models"
    previous = os.umask(0o022)  # the usual umask: mkdir(parents=True) made the folders above 0755
    try:
        path = pull(SPEC, models_dir, endpoint=server.endpoint)
    finally:
        os.umask(previous)
    folders = [p for p in path.parents if tmp_path in p.parents]
    assert [p.relative_to(tmp_path).as_posix() for p in folders] == [
        "cache/cmem/models/acme/tiny-GGUF",
        "cache/cmem/models/acme",
        "cache/cmem/models",
        "cache/cmem",
        "cache",
    ]
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in folders} == {"0o700"}
    assert oct(stat.S_IMODE(path.stat().st_mode)) == "0o600"


def test_a_resumed_part_left_readable_becomes_private(server: ModelServer, models_dir: Path) -> None:
    dest = dest_of(models_dir)
    dest.parent.mkdir(parents=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(PAYLOAD[:1000])
    part.chmod(0o644)
    assert pull(SPEC, models_dir, endpoint=server.endpoint).read_bytes() == PAYLOAD
    assert oct(stat.S_IMODE(dest.stat().st_mode)) == "0o600"


def test_pull_uses_cmem_hf_endpoint(server: ModelServer, models_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("CMEM_HF_ENDPOINT", server.endpoint + "/")
    assert parse_spec(SPEC).url() == f"{server.endpoint}/acme/tiny-GGUF/resolve/main/tiny-q8.gguf"
    assert pull(SPEC, models_dir).read_bytes() == PAYLOAD


def test_a_present_model_is_not_downloaded_again(server: ModelServer, models_dir: Path) -> None:
    pull(SPEC, models_dir, endpoint=server.endpoint)
    before = len(server.requests)
    pull(SPEC, models_dir, endpoint=server.endpoint)
    assert len(server.requests) == before


def test_pull_resumes_a_partial_file_with_a_range_request(server: ModelServer, models_dir: Path) -> None:
    dest = dest_of(models_dir)
    dest.parent.mkdir(parents=True)
    half = len(PAYLOAD) // 2
    dest.with_name(dest.name + ".part").write_bytes(PAYLOAD[:half])
    path = pull(SPEC, models_dir, endpoint=server.endpoint)
    assert path.read_bytes() == PAYLOAD
    assert server.requests[-1]["range"] == f"bytes={half}-"
    assert server.sent == len(PAYLOAD) - half  # only the missing half crossed the wire


def test_truncated_download_fails_and_installs_nothing_then_resumes(
    server: ModelServer, models_dir: Path
) -> None:
    server.cut_after = 300_000
    with pytest.raises(ModelError) as info:
        pull(SPEC, models_dir, endpoint=server.endpoint, timeout=5)
    assert "run the same command again to resume" in info.value.message
    assert "\n" not in info.value.message
    dest = dest_of(models_dir)
    assert not dest.exists()
    part = dest.with_name(dest.name + ".part")
    assert part.stat().st_size == 300_000
    server.cut_after = None
    assert pull(SPEC, models_dir, endpoint=server.endpoint).read_bytes() == PAYLOAD
    assert server.requests[-1]["range"] == "bytes=300000-"


def test_a_file_without_the_gguf_magic_is_rejected(server: ModelServer, models_dir: Path) -> None:
    server.files["/acme/tiny-GGUF/resolve/main/tiny-q8.gguf"] = b"<html>login required</html>" * 100
    with pytest.raises(ModelError, match="not a GGUF file"):
        pull(SPEC, models_dir, endpoint=server.endpoint)
    assert not dest_of(models_dir).exists()
    assert not list(models_dir.rglob("*.part"))


def test_sha256_mismatch_installs_nothing(server: ModelServer, models_dir: Path) -> None:
    with pytest.raises(ModelError, match="sha256"):
        pull(SPEC, models_dir, endpoint=server.endpoint, sha256="0" * 64)
    assert not dest_of(models_dir).exists()
    good = hashlib.sha256(PAYLOAD).hexdigest()
    assert pull(SPEC, models_dir, endpoint=server.endpoint, sha256=good.upper()).read_bytes() == PAYLOAD


def test_missing_file_on_the_server_is_a_clear_error(server: ModelServer, models_dir: Path) -> None:
    with pytest.raises(ModelError, match="HTTP 404"):
        pull("hf:acme/tiny-GGUF/other.gguf", models_dir, endpoint=server.endpoint)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_fails_quickly(models_dir: Path) -> None:
    start = time.monotonic()
    with pytest.raises(ModelError, match="cannot download"):
        pull(SPEC, models_dir, endpoint=f"http://127.0.0.1:{_free_port()}", timeout=5)
    assert time.monotonic() - start < 5
    assert not dest_of(models_dir).exists()


def test_a_stalled_server_times_out(models_dir: Path) -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        start = time.monotonic()
        with pytest.raises(ModelError, match="timed out"):
            pull(SPEC, models_dir, endpoint=f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5)
        assert time.monotonic() - start < 5


def test_resolving_a_missing_model_never_touches_the_network(
    server: ModelServer, models_dir, monkeypatch
) -> None:
    monkeypatch.setenv("CMEM_HF_ENDPOINT", server.endpoint)
    with pytest.raises(ModelError, match="cmem models pull"):
        resolve(SPEC, models_dir)
    assert server.requests == []


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_pull_prints_the_path_and_reports_json(server: ModelServer, tmp_path: Path) -> None:
    env = {
        "CMEM_HOME": str(tmp_path / "home"),
        "CMEM_MODELS_DIR": str(tmp_path / "models"),
        "CMEM_HF_ENDPOINT": server.endpoint,
        "CMEM_EMBED_MODEL": SPEC,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    first = run_cli(["models", "pull"], env)
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.strip())
    assert path.read_bytes() == PAYLOAD and first.stderr == ""
    again = run_cli(["models", "pull", "--json"], env)
    assert json.loads(again.stdout) == {
        "spec": SPEC,
        "path": str(path),
        "size": len(PAYLOAD),
        "downloaded": False,
    }
    assert run_cli(["models", "path"], env).stdout.strip() == str(path)


def test_cli_pull_failure_is_one_line_with_the_model_exit_code(tmp_path: Path) -> None:
    env = {
        "CMEM_HOME": str(tmp_path / "home"),
        "CMEM_MODELS_DIR": str(tmp_path / "models"),
        "CMEM_HF_ENDPOINT": f"http://127.0.0.1:{_free_port()}",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    result = run_cli(["models", "pull", SPEC, "--timeout", "3"], env)
    assert result.returncode == 8
    assert result.stdout == ""
    assert result.stderr.startswith("cmem: cannot download http://127.0.0.1:")
    assert result.stderr.count("\n") == 1
