"""`cmem models list|pull|import|path`: the embedding and reranking models cmem uses.

Only `cmem models pull` touches the network. Everything heavy (the downloader, the gguf writer, numpy) is
imported inside the command that needs it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.invocation import current_config
from cmem_cli.cli.render import Column, dumps, emit_rows, escape_control, resolve_format, write
from cmem_cli.core.config import Config
from cmem_cli.core.errors import ModelError

models_app = typer.Typer(
    name="models",
    help="Embedding and reranking models: list, pull (download), import (convert a local checkpoint), path.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

SpecArg = Annotated[
    str | None,
    typer.Argument(
        help="hf:OWNER/REPO/FILE.gguf or a path (default: the configured model).", metavar="[SPEC]"
    ),
]
RerankOpt = Annotated[bool, typer.Option("--rerank", help="Use the configured reranker, not the embedder.")]


def _configured(config: Config, rerank: bool) -> str:
    spec = config.rerank_model if rerank else config.embed_model
    if not spec:
        role, var, key = (
            ("reranker", "CMEM_RERANK_MODEL", "rerank")
            if rerank
            else ("embedding model", "CMEM_EMBED_MODEL", "embed")
        )
        raise ModelError(f"no {role} configured; set {var} or `[models] {key} = ...` in the config file")
    return spec


def _describe(config: Config, role: str, spec: str | None) -> dict[str, Any]:
    from cmem_index.model_specs import is_gguf, parse_spec

    row: dict[str, Any] = {"role": role, "spec": spec, "path": None, "present": False, "size": None}
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


def _files(models_dir: Path) -> list[dict[str, Any]]:
    if not models_dir.is_dir():
        return []
    found = sorted(p for p in models_dir.rglob("*.gguf") if p.is_file())
    return [{"path": str(p), "size": p.stat().st_size} for p in found]


def _state(row: dict[str, Any]) -> str:
    if row["present"]:
        return "present"
    return f"error: {row['error']}" if "error" in row else "missing"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def list_cmd(as_json: JsonOpt = False) -> None:
    """Show the configured models, whether they are on disk, and every GGUF in the models directory."""
    config = current_config()
    rows = [
        _describe(config, "embed", config.embed_model),
        _describe(config, "rerank", config.rerank_model),
    ]
    files = _files(config.models_dir)
    if as_json:
        write(dumps({"models_dir": str(config.models_dir), "configured": rows, "files": files}) + "\n")
        return
    listing = [
        {
            "role": row["role"],
            "spec": row["spec"] or "off",
            "state": "-" if row["spec"] is None else _state(row),
            "size": _size(row["size"]),
            "path": row["path"] or "-",
        }
        for row in rows
    ]
    listing += [
        {
            "role": "file",
            "spec": Path(f["path"]).name,
            "state": "present",
            "size": _size(f["size"]),
            "path": f["path"],
        }
        for f in files
    ]
    columns = [
        Column("role", "ROLE", priority=0),
        Column("spec", "MODEL", max_width=60, priority=1, shrink_to=24),
        Column("state", "STATE", priority=0),
        Column("size", "SIZE", justify="right", priority=3),
        Column("path", "PATH", priority=2, shrink_to=24),
    ]
    emit_rows(listing, columns, resolve_format(None, False))
    if not any(row["present"] for row in rows):
        print(
            "cmem: no model on disk; `cmem models pull` downloads the configured one, "
            "`cmem models import DIR` converts a local checkpoint",
            file=sys.stderr,
        )


class _Bar:
    """A rich download bar on stderr, only when stderr is a terminal."""

    def __init__(self, label: str):
        self.progress: Any = None
        self.task: Any = None
        if not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR"))),
            transient=True,
        )
        self.task = self.progress.add_task(label, total=None)

    def __enter__(self) -> _Bar:
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress:
            self.progress.stop()

    def __call__(self, done: int, total: int | None) -> None:
        if self.progress:
            self.progress.update(self.task, completed=done, total=total)


def pull_cmd(
    spec: SpecArg = None,
    rerank: RerankOpt = False,
    sha256: Annotated[
        str | None, typer.Option("--sha256", help="Expected SHA-256 of the file.", metavar="HEX")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the server (connect and each read).")
    ] = 30.0,
    as_json: JsonOpt = False,
) -> None:
    """Download a model (default: the configured embedding model) into the models directory."""
    from cmem_index.download import pull
    from cmem_index.model_specs import parse_spec

    config = current_config()
    spec = spec or _configured(config, rerank)
    parsed = parse_spec(spec, config.models_dir)
    dest = parsed.local_path(config.models_dir)
    existed = dest.is_file()
    with _Bar(dest.name) as bar:
        path = pull(parsed, config.models_dir, progress=bar, sha256=sha256, timeout=timeout)
    if as_json:
        result = {"spec": spec, "path": str(path), "size": path.stat().st_size, "downloaded": not existed}
        write(dumps(result) + "\n")
        return
    write(f"{escape_control(str(path))}\n")
    if existed:
        print("cmem: already present, nothing downloaded", file=sys.stderr)


def import_cmd(
    directory: Annotated[
        Path, typer.Argument(help="A Hugging Face BERT sentence-transformers checkpoint.", metavar="DIR")
    ],
    name: Annotated[
        str | None, typer.Option("--name", help="File name in the models directory (NAME.gguf).", metavar="N")
    ] = None,
    outtype: Annotated[
        str,
        typer.Option(
            "--outtype",
            help="Weight type: auto (bf16 on CPUs with native bf16, else f16), f32, f16, bf16, q8_0.",
        ),
    ] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file of that name.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Convert a local checkpoint (safetensors, config, vocab, pooling config) into a GGUF model, no torch."""
    from cmem_index.importer import default_name, import_checkpoint

    config = current_config()
    directory = _checkpoint_folder(directory)
    stem = (name or default_name(directory)).removesuffix(".gguf")
    if not stem or "/" in stem or stem.startswith("."):
        raise ModelError(f"bad model name {stem!r}: use a plain file name")
    dest = config.models_dir / f"{stem}.gguf"
    result = import_checkpoint(directory, dest, name=stem, outtype=outtype, overwrite=force)
    role, var, key = (
        ("reranker", "CMEM_RERANK_MODEL", "rerank")
        if result.pooling == "rank"
        else ("embedder", "CMEM_EMBED_MODEL", "embed")
    )
    if as_json:
        write(
            dumps(
                {
                    "path": str(result.path),
                    "name": result.name,
                    "role": key,
                    "pooling": result.pooling,
                    "outtype": result.outtype,
                    "tensors": result.n_tensors,
                    "size": result.path.stat().st_size,
                }
            )
            + "\n"
        )
    else:
        write(f"{escape_control(str(result.path))}\n")
    if key == "embed" and _needs_embedder(config):
        from cmem_cli.services.config_edit import set_config_value

        written = set_config_value("models", "embed", dest.name)
        print(
            f"cmem: no embedding model was usable, so {dest.name} is now the embedder "
            f'([models] embed = "{dest.name}" in {written})',
            file=sys.stderr,
        )
        return
    print(
        f"cmem: to use it as the {role}, set {var}={dest.name} "
        f'or add `[models] {key} = "{dest.name}"` to {_config_hint()}',
        file=sys.stderr,
    )


def _checkpoint_folder(directory: Path) -> Path:
    """The checkpoint itself, or its ``model/`` folder when given the Python package that ships one."""
    nested = directory / "model"
    if not (directory / "config.json").is_file() and (nested / "config.json").is_file():
        return nested
    return directory


def _needs_embedder(config: Any) -> bool:
    """True when no embedding model is usable and none was chosen in the environment, which wins over the
    config file (so writing the file would change nothing in this shell)."""
    from cmem_cli.core.errors import CmemError
    from cmem_index.loading import embed_model_path

    if os.environ.get("CMEM_EMBED_MODEL"):
        return False
    try:
        embed_model_path(config)
    except CmemError:
        return True
    return False


def _config_hint() -> str:
    from cmem_cli.core.config import config_file_path

    return str(config_file_path())


def path_cmd(spec: SpecArg = None, rerank: RerankOpt = False, as_json: JsonOpt = False) -> None:
    """Print the local file of a model (default: the configured embedding model); fails when missing."""
    from cmem_index.model_specs import resolve

    config = current_config()
    spec = spec or _configured(config, rerank)
    path = resolve(spec, config.models_dir, role="rerank" if rerank else "embed")
    if as_json:
        write(dumps({"spec": spec, "path": str(path), "size": path.stat().st_size}) + "\n")
    else:
        write(f"{escape_control(str(path))}\n")


models_app.command("list")(list_cmd)
models_app.command("pull")(pull_cmd)
models_app.command("import")(import_cmd)
models_app.command("path")(path_cmd)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app)
