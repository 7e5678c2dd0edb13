"""`cmem models list|pull|import|path`: the embedding and reranking models cmem uses.

They stand on the API's face (``memory.index.models``, :class:`cmem_cli.api.index.Models`). Only `cmem
models pull` touches the network. Everything heavy (the downloader, the gguf writer, numpy) loads inside the
call that needs it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.invocation import current_config
from cmem_cli.cli.render import Column, dumps, emit_rows, escape_control, resolve_format, write

if TYPE_CHECKING:
    from cmem_cli.api.index import Models
    from cmem_cli.core.json_types import ModelJson

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


def _models() -> Models:
    """The API's face of this home's model files (nothing is opened: models are files, not rows)."""
    from cmem_cli.api import Memory

    return Memory(config=current_config()).index.models


def _state(row: ModelJson) -> str:
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
    models = _models()
    rows = models.configured()
    files = models.files()
    if as_json:
        write(dumps({"models_dir": str(models.directory), "configured": rows, "files": files}) + "\n")
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
    models = _models()
    role = "rerank" if rerank else "embed"
    spec = spec or models.spec(role)
    dest = models.local_path(spec)
    existed = dest.is_file()
    with _Bar(dest.name) as bar:
        path = models.pull(spec, progress=bar, sha256=sha256, timeout=timeout)
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
    models = _models()
    result = models.import_checkpoint(directory, name=name, outtype=outtype, overwrite=force)
    dest = result.path
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
    if key == "embed" and models.needs_embedder():
        written = models.choose_embedder(dest.name)
        print(
            f"cmem: no embedding model was usable, so {dest.name} is now the embedder "
            f'([models] embed = "{dest.name}" in {written})',
            file=sys.stderr,
        )
        return
    print(
        f"cmem: to use it as the {role}, set {var}={dest.name} "
        f'or add `[models] {key} = "{dest.name}"` to {models.config_file()}',
        file=sys.stderr,
    )


def path_cmd(spec: SpecArg = None, rerank: RerankOpt = False, as_json: JsonOpt = False) -> None:
    """Print the local file of a model (default: the configured embedding model); fails when missing."""
    models = _models()
    role = "rerank" if rerank else "embed"
    spec = spec or models.spec(role)
    path = models.path(spec, role=role)
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
