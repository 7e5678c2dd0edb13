"""The model files a home uses (the embedder and the reranker): what is configured and on disk, download,
import of a local checkpoint, and where a model's file is. `cmem models` and the Python API
(:class:`cmem_cli.api.index.Models`) call these rather than the index's modules.

Only :func:`pull` touches the network. The downloader, the gguf writer and numpy load inside the function
that needs them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cmem_cli.core.config import Config, config_file_path
from cmem_cli.core.errors import CmemError, ModelError

if TYPE_CHECKING:
    from cmem_cli.core.json_types import ModelFileJson, ModelJson
    from cmem_index.importer import ImportResult

ROLES = {  # role -> (what it is called, its environment variable, its key under [models])
    "embed": ("embedding model", "CMEM_EMBED_MODEL", "embed"),
    "rerank": ("reranker", "CMEM_RERANK_MODEL", "rerank"),
}


def configured_spec(config: Config, role: str) -> str:
    """The configured model of ``role`` (``embed`` or ``rerank``); ModelError when there is none."""
    spec = config.rerank_model if role == "rerank" else config.embed_model
    if not spec:
        what, var, key = ROLES[role]
        raise ModelError(f"no {what} configured; set {var} or `[models] {key} = ...` in the config file")
    return spec


def describe(config: Config, role: str) -> ModelJson:
    """The configured model of ``role``: its spec, local path, whether that file is a GGUF on disk, its
    size (or ``error`` when the spec cannot be read). JSON-ready."""
    from cmem_index.model_specs import is_gguf, parse_spec

    spec = config.rerank_model if role == "rerank" else config.embed_model
    row: ModelJson = {"role": role, "spec": spec, "path": None, "present": False, "size": None}
    if spec is None:
        return row
    try:
        path = parse_spec(spec, config.models_dir).local_path(config.models_dir)
    except ModelError as exc:
        row["error"] = exc.message
        return row
    row["path"] = str(path)
    if path.is_file():
        row["present"] = is_gguf(path)
        row["size"] = path.stat().st_size
    return row


def files(config: Config) -> list[ModelFileJson]:
    """Every GGUF file in the models directory, with its size."""
    models_dir = config.models_dir
    if not models_dir.is_dir():
        return []
    found = sorted(p for p in models_dir.rglob("*.gguf") if p.is_file())
    return [{"path": str(p), "size": p.stat().st_size} for p in found]


def local_path(config: Config, spec: str) -> Path:
    """Where ``spec``'s file is, or would be once pulled (a bad spec is a ModelError)."""
    from cmem_index.model_specs import parse_spec

    return parse_spec(spec, config.models_dir).local_path(config.models_dir)


def pull(
    config: Config,
    spec: str,
    *,
    progress: Callable[[int, int | None], None] | None = None,
    sha256: str | None = None,
    timeout: float = 30.0,
) -> Path:
    """Make ``spec`` available in the models directory (downloads only what is missing); its path."""
    from cmem_index.download import pull as download

    return download(spec, config.models_dir, progress=progress, sha256=sha256, timeout=timeout)


def checkpoint_folder(directory: Path) -> Path:
    """The checkpoint itself, or its ``model/`` folder when given the Python package that ships one."""
    nested = directory / "model"
    if not (directory / "config.json").is_file() and (nested / "config.json").is_file():
        return nested
    return directory


def import_checkpoint(
    config: Config,
    directory: Path,
    *,
    name: str | None = None,
    outtype: str = "auto",
    overwrite: bool = False,
) -> ImportResult:
    """Convert a local checkpoint into ``NAME.gguf`` in the models directory (no torch)."""
    from cmem_index.importer import default_name
    from cmem_index.importer import import_checkpoint as convert

    directory = checkpoint_folder(directory)
    stem = (name or default_name(directory)).removesuffix(".gguf")
    if not stem or "/" in stem or stem.startswith("."):
        raise ModelError(f"bad model name {stem!r}: use a plain file name")
    dest = config.models_dir / f"{stem}.gguf"
    return convert(directory, dest, name=stem, outtype=outtype, overwrite=overwrite)


def resolve(config: Config, spec: str, role: str) -> Path:
    """The local GGUF file of ``spec``; never downloads (missing or not a GGUF is a ModelError)."""
    from cmem_index.model_specs import resolve as find

    return find(spec, config.models_dir, role=role)


def needs_embedder(config: Config) -> bool:
    """True when no embedding model is usable and none was chosen in the environment, which wins over the
    config file (so writing the file would change nothing in this shell)."""
    from cmem_index.loading import embed_model_path

    if os.environ.get("CMEM_EMBED_MODEL"):
        return False
    try:
        embed_model_path(config)
    except CmemError:
        return True
    return False


def choose_embedder(file_name: str) -> Path:
    """Make ``file_name`` (in the models directory) the embedder in the config file; the file's path."""
    from cmem_cli.services.upkeep.config_edit import set_config_value

    return set_config_value("models", "embed", file_name)


def config_file() -> Path:
    """The config file a model choice is written to."""
    return config_file_path()
