"""Download GGUF models: the only code in cmem that touches the network, used by ``cmem models pull``.

The file is streamed into ``NAME.part`` next to its destination and renamed into place only after the
size (Content-Length), the optional sha256 and the GGUF magic all check out, so a model path either
does not exist or holds a complete file. An interrupted download resumes from the ``.part`` file with an
HTTP Range request. urllib only: no new dependency for a feature most runs never use.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from cmem_cli.core.config import FILE_MODE, make_private_dirs
from cmem_cli.core.errors import ModelError
from cmem_cli.core.version import VERSION as __version__
from cmem_index.model_specs import GGUF_MAGIC, ModelSpec, parse_spec

CHUNK = 1 << 20
DEFAULT_TIMEOUT = 30.0

# (bytes done, total bytes or None when the server does not say)
Progress = Callable[[int, int | None], None]


def pull(
    spec: str | ModelSpec,
    models_dir: Path,
    *,
    progress: Progress | None = None,
    sha256: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    endpoint: str | None = None,
) -> Path:
    """Make ``spec`` available locally and return its path; downloads only what is missing."""
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec, models_dir)
    dest = parsed.local_path(models_dir)
    if not parsed.is_hf:
        if not dest.is_file():
            raise ModelError(f"{dest} does not exist; `cmem models pull` only downloads hf: references")
        return dest
    if dest.is_file():
        return dest
    return download(parsed.url(endpoint), dest, progress=progress, sha256=sha256, timeout=timeout)


def download(
    url: str,
    dest: Path,
    *,
    progress: Progress | None = None,
    sha256: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Path:
    """Fetch ``url`` into ``dest`` atomically, resuming a previous ``dest.part``."""
    try:
        make_private_dirs(dest.parent)
    except OSError as exc:
        raise ModelError(f"cannot create {dest.parent}: {exc.strerror}") from None
    part = dest.with_name(dest.name + ".part")
    with _exclusive(dest.with_name(dest.name + ".lock")):
        if dest.is_file():  # another process finished it while we waited for the lock
            return dest
        _fetch(url, part, progress=progress, timeout=timeout)
        _verify(part, url, sha256)
        os.replace(part, dest)
    return dest


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One downloader per file: two pulls appending to the same .part would corrupt it."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ModelError(f"another `cmem models pull` is already downloading {lock_path.stem}") from None
        yield
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            lock_path.unlink()


def _request(url: str, offset: int) -> urllib.request.Request:
    headers = {"User-Agent": f"cmem/{__version__}", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.Request(url, headers=headers)


def _open(url: str, offset: int, timeout: float) -> http.client.HTTPResponse:
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(_request(url, offset), timeout=timeout)
        return response
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            raise  # handled by the caller: the .part is stale
        hint = " (check the model spec)" if exc.code == 404 else ""
        raise ModelError(f"cannot download {url}: HTTP {exc.code} {exc.reason}{hint}") from None
    except urllib.error.URLError as exc:
        raise ModelError(f"cannot download {url}: {_reason(exc.reason)}") from None
    except TimeoutError:
        raise ModelError(f"cannot download {url}: timed out after {timeout:g}s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise ModelError(f"cannot download {url}: {_reason(exc)}") from None


def _reason(reason: object) -> str:
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


def _fetch(url: str, part: Path, *, progress: Progress | None, timeout: float) -> None:
    if not url.startswith(("http://", "https://")):
        raise ModelError(f"cannot download {url}: only http and https URLs are supported")
    offset = part.stat().st_size if part.exists() else 0
    try:
        response = _open(url, offset, timeout)
    except urllib.error.HTTPError:  # 416: the server has nothing after our offset; start over
        part.unlink()
        offset = 0
        response = _open(url, 0, timeout)
    with response:
        if offset and response.status != 206:  # server ignored the Range header: start over
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        done = offset
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if offset else os.O_TRUNC)
        if progress:
            progress(done, total)
        try:
            with os.fdopen(os.open(part, flags, FILE_MODE), "wb") as out:
                os.fchmod(out.fileno(), FILE_MODE)  # a .part left by an older version may be 0644
                while True:
                    chunk = response.read(CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
                out.flush()
                os.fsync(out.fileno())
        except TimeoutError:
            raise ModelError(
                f"download of {url} stalled (no data for {timeout:g}s) after {done} bytes; "
                "run the same command again to resume"
            ) from None
        except (http.client.IncompleteRead, ConnectionError) as exc:
            raise ModelError(
                f"download of {url} was cut off after {done} bytes ({_reason(exc)}); "
                "run the same command again to resume"
            ) from None
        except OSError as exc:
            raise ModelError(f"cannot write {part}: {exc.strerror}") from None
    if total is not None and done != total:
        raise ModelError(
            f"download of {url} was truncated: got {done} of {total} bytes; "
            "run the same command again to resume"
        )


def _verify(part: Path, url: str, sha256: str | None) -> None:
    """Reject a complete-looking file that is not the model: wrong hash or not a GGUF at all."""
    with open(part, "rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        part.unlink()
        raise ModelError(f"{url} is not a GGUF file (bad magic {magic!r}); nothing was installed")
    if sha256:
        digest = hashlib.sha256()
        with open(part, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                digest.update(block)
        if digest.hexdigest() != sha256.lower():
            part.unlink()
            raise ModelError(f"{url} failed its sha256 check; nothing was installed")


__all__ = ["DEFAULT_TIMEOUT", "Progress", "download", "pull"]
