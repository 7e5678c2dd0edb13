"""Model specs: what a user writes in CMEM_EMBED_MODEL / the config, and where that lives on disk.

A spec is either ``hf:OWNER/REPO/FILE.gguf`` (a file in a Hugging Face repository, fetched only by
``cmem models pull``) or a local path. A bare file name such as ``minilm.gguf`` that does not exist
relative to the working directory means a file in the models directory, which is where
``cmem models import`` writes. Resolving a spec never touches the network: a model that is not on disk
is a one-line ModelError that says how to get it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from cmem_cli.core.errors import ModelError

HF_PREFIX = "hf:"
GGUF_MAGIC = b"GGUF"
DEFAULT_HF_ENDPOINT = "https://huggingface.co"


class ModelSpec(NamedTuple):
    """A parsed spec. For ``hf:`` specs ``owner``/``repo``/``filename`` are set; else ``path`` is."""

    raw: str
    owner: str | None = None
    repo: str | None = None
    filename: str | None = None
    path: Path | None = None

    @property
    def is_hf(self) -> bool:
        return self.owner is not None

    def local_path(self, models_dir: Path) -> Path:
        """Where this model's file is (or would be, once pulled)."""
        if self.path is not None:
            return self.path
        assert self.owner and self.repo and self.filename
        return models_dir / self.owner / self.repo / self.filename

    def url(self, endpoint: str | None = None) -> str:
        """The download URL of an ``hf:`` spec (``$CMEM_HF_ENDPOINT`` overrides the host)."""
        if not self.is_hf:
            raise ModelError(
                f"{self.raw} is a local file, not an hf: reference; there is nothing to download"
            )
        base = (endpoint or hf_endpoint()).rstrip("/")
        return f"{base}/{self.owner}/{self.repo}/resolve/main/{self.filename}"


def hf_endpoint() -> str:
    return os.environ.get("CMEM_HF_ENDPOINT") or DEFAULT_HF_ENDPOINT


def parse_spec(spec: str, models_dir: Path | None = None) -> ModelSpec:
    """Parse a spec without touching the disk beyond an existence check for bare names."""
    spec = spec.strip()
    if not spec:
        raise ModelError("empty model spec; use hf:OWNER/REPO/FILE.gguf or a path to a .gguf file")
    if spec.startswith(HF_PREFIX):
        return _parse_hf(spec)
    path = Path(spec).expanduser()
    is_bare_name = len(path.parts) == 1 and not path.is_absolute()
    if is_bare_name and models_dir is not None and not path.exists():
        path = models_dir / path
    return ModelSpec(raw=spec, path=path.absolute())


def _parse_hf(spec: str) -> ModelSpec:
    rest = spec[len(HF_PREFIX) :]
    parts = rest.split("/")
    bad = len(parts) < 3 or any(p in ("", ".", "..") for p in parts) or "\\" in rest
    if bad:
        raise ModelError(f"bad model spec {spec!r}: expected hf:OWNER/REPO/FILE.gguf")
    if not rest.lower().endswith(".gguf"):
        raise ModelError(f"bad model spec {spec!r}: the file must be a .gguf")
    filename = str(PurePosixPath(*parts[2:]))
    return ModelSpec(raw=spec, owner=parts[0], repo=parts[1], filename=filename)


def is_gguf(path: Path) -> bool:
    """True when the file starts with the GGUF magic (cheap: reads four bytes)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def how_to_get(spec: ModelSpec, role: str = "embed") -> str:
    if spec.is_hf:
        flag = " --rerank" if role == "rerank" else ""
        return (
            f"run `cmem models pull{flag}` to download it, or `cmem models import DIR` for a local checkpoint"
        )
    return "check the path, or run `cmem models import DIR` to convert a local checkpoint"


def resolve(spec: str, models_dir: Path, role: str = "embed") -> Path:
    """The local GGUF file for ``spec``. Never downloads; missing or non-GGUF files are a ModelError."""
    parsed = parse_spec(spec, models_dir)
    path = parsed.local_path(models_dir)
    label = "reranker" if role == "rerank" else "embedding model"
    try:
        exists = path.is_file()
    except OSError:  # a name too long for the filesystem, or a path through a file
        exists = False
    if not exists:
        where = "is not downloaded" if parsed.is_hf else "does not exist"
        raise ModelError(f"{label} {spec} {where} (expected {path}); {how_to_get(parsed, role)}")
    if not is_gguf(path):
        raise ModelError(f"{label} file {path} is not a GGUF file; {how_to_get(parsed, role)}")
    return path


__all__ = [
    "DEFAULT_HF_ENDPOINT",
    "GGUF_MAGIC",
    "ModelSpec",
    "hf_endpoint",
    "how_to_get",
    "is_gguf",
    "parse_spec",
    "resolve",
]
