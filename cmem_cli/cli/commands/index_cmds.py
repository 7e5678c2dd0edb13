"""Index commands: `cmem index`, `cmem status`, `cmem watch`, `cmem collection add|list|remove`.

Thin wrappers over the API's index face (``memory.index``, :class:`cmem_cli.api.index.Index`): the CLI never
imports the index package. Everything heavy (apsw, numpy, llama.cpp, watchdog) loads inside the face's
calls, so other commands start fast.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.invocation import current_config
from cmem_cli.cli.render import dumps, escape_control, write

collection_app = typer.Typer(
    name="collection",
    help="Markdown folders indexed next to cmem's own memories (add, list, remove).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _summary(report: Any) -> str:
    parts = [
        f"{report.scanned} files",
        f"{report.read} read",
        f"{report.chunked} re-chunked",
        f"{report.removed} removed",
    ]
    if report.model:
        rate = f" ({report.embedded / report.embed_seconds:,.0f}/s)" if report.embed_seconds > 0 else ""
        parts.append(f"{report.embedded} embedded{rate}, {report.cache_hits} from cache")
    return f"indexed {', '.join(parts)} in {report.seconds:.2f}s"


def index_cmd(
    full: Annotated[
        bool, typer.Option("--full", help="Rebuild from scratch into a new file and swap it in atomically.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Update the search index from the export tree and your collections (only what changed)."""
    from cmem_cli.cli.invocation import open_api
    from cmem_cli.cli.progress import ProgressBar

    def keyword_only(why: str) -> None:
        print(f"cmem: keyword-only index: {escape_control(why)}", file=sys.stderr)

    def waiting() -> None:
        print("cmem: waiting for another cmem process to finish updating the index...", file=sys.stderr)

    progress = ProgressBar()
    try:
        with open_api() as memory:
            report = memory.index.build(
                full=full, progress=progress, on_wait=waiting, on_keyword_only=keyword_only
            )
    finally:
        progress.close()
    for error in report.errors:
        print(f"cmem: warning: {escape_control(error)}", file=sys.stderr)
    if as_json:
        write(dumps(report.to_json()) + "\n")
    else:
        print(_summary(report), file=sys.stderr)


def status_cmd(as_json: JsonOpt = False) -> None:
    """Show what the index holds (documents, chunks, vectors, stale entries, models, last run) and the
    remote: which, when it last synced, what waits to be pushed, a refused push. Reads local state only."""
    from cmem_cli.cli.invocation import open_api

    with open_api() as memory:
        info = memory.index.status()
        remote = memory.remote_status()
        info["remote"] = None if remote is None else remote.to_json()
        remote_rows = [["remote", "none"]] if remote is None else remote.table_rows()
    if as_json:
        write(dumps(info) + "\n")
        return
    write(_status_text(info, remote_rows))


def _status_text(info: dict[str, Any], remote_rows: list[list[str]]) -> str:
    """The status as ``key<TAB>value...`` lines when piped (scripts split on tabs, as for `cmem stats`), or
    with the keys and the collections' columns aligned on a terminal."""
    rows = [[escape_control(cell) for cell in row] for row in _status_rows(info) + remote_rows]
    if not sys.stdout.isatty():
        return "".join("\t".join(row) + "\n" for row in rows)
    key_width = max(len(row[0]) for row in rows)
    collections = [row for row in rows if row[0] == "collection"]
    widths = [max(len(row[i]) for row in collections) for i in range(1, 5)] if collections else []
    lines = []
    for row in rows:
        cells = [
            cell.ljust(widths[i]) if row[0] == "collection" and i < 4 else cell
            for i, cell in enumerate(row[1:])
        ]
        lines.append(f"{row[0].ljust(key_width)} {'  '.join(cells)}".rstrip())
    return "\n".join(lines) + "\n"


def _status_rows(info: dict[str, Any]) -> list[list[str]]:
    """What `cmem status` shows: one row per line, the key first (a collection's row has five values)."""
    rows = [["index", f"{info['index']}{'' if info['exists'] else ' (not built yet)'}"]]
    if info.get("error"):
        rows.append(["error", info["error"]])
    rows.append(["documents", str(info["documents"])])
    rows.append(["chunks", str(info["chunks"])])
    changes = info.get("changed_files")
    if changes and any(changes.values()):
        count = sum(changes.values())
        rows.append([
            "changed",
            f"{count} file{'s' if count != 1 else ''} since the last index run ({changes['added']} new, "
            f"{changes['modified']} modified, {changes['removed']} deleted): run `cmem index`",
        ])  # fmt: skip
    elif changes is not None:
        rows.append(["changed", "none since the last index run"])
    vector_note = "" if info["vectors_current"] or not info["vectors"] else " (made by another model: stale)"
    rows.append(["vectors", f"{info['vectors']}{vector_note}"])
    if info["stale_documents"]:
        rows.append(["stale", f"{info['stale_documents']} documents chunked with other settings"])
    if not info["machines_indexed"]:
        rows.append(["machines", "not in the index yet: run `cmem index` (it reads them from the files)"])
    if info["chunks_without_current_vectors"]:
        rows.append(["pending", f"{info['chunks_without_current_vectors']} chunks need embedding"])
    embed = info["models"]["embed"]
    if embed["available"]:
        rows.append(["embed model", str(embed["spec"])])
    else:
        rows.append(["embed model", f"none usable: {embed['hint']}"])
    rerank = info["models"]["rerank"]["spec"]
    rows.append(["reranker", rerank or "off"])
    for c in info["collections"]:
        rows.append(
            ["collection", c["name"], f"{c['documents']} docs", f"{c['chunks']} chunks", c["path"], c["mask"]]
        )
    for c in info["collections"]:
        for relpath in c["skipped_symlinks"]:
            rows.append(["skipped", f"{c['name']}:{relpath} (symlink outside the collection)"])
    last = info.get("last_run")
    if last:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["started_at"] / 1000))
        rows.append([
            "last run",
            f"{when}, {last['seconds']:.2f}s, {last['read']} read, {last['chunked']} re-chunked, "
            f"{last['embedded']} embedded",
        ])  # fmt: skip
    return rows


def watch_cmd(
    debounce: Annotated[
        float, typer.Option("--debounce", help="Seconds of quiet before re-indexing.", min=0.05, max=60.0)
    ] = 1.0,
) -> None:
    """Watch the export tree and every collection; adopt hand edits and re-index until Ctrl-C / SIGTERM.
    With a team database, also push local writes within seconds and pull what others push."""
    from cmem_cli.cli.invocation import open_api

    config = current_config()

    def report(r: Any) -> None:
        if r.read or r.removed or r.embedded:
            print(f"cmem: {_summary(r)}", file=sys.stderr, flush=True)

    def error(message: str) -> None:
        from cmem_cli.cli.guard import unsecret  # a team database's message may quote a URL

        print(f"cmem: {escape_control(unsecret(message))}", file=sys.stderr, flush=True)

    def adopt(paths: list[Path] | None) -> None:
        with open_api(write=True) as memory:
            result = memory.adopt_edits(paths)
        for path, reason in result.invalid + result.conflicts:
            error(f"{path}: {reason}")
        if result.adopted or result.created or result.forgotten:
            counts = (
                f"{len(result.adopted)} edited, {len(result.created)} new, {len(result.forgotten)} deleted"
            )
            print(f"cmem: adopted {counts}", file=sys.stderr, flush=True)

    with open_api() as memory:
        watcher, keyword_only = memory.index.watcher(
            debounce=debounce, on_report=report, on_error=error, on_export_change=adopt
        )
    if keyword_only is not None:
        print(f"cmem: keyword-only index: {escape_control(keyword_only)}", file=sys.stderr, flush=True)
    watcher.install_signal_handlers()
    team = _team_live(config, error)
    print("cmem: watching; Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        watcher.run()
    finally:
        if team is not None:
            team.stop()
    print("cmem: stopped", file=sys.stderr, flush=True)


def _team_live(config: Any, error: Any) -> Any:
    """With a team database, keep it live beside the watcher (push within seconds, pull on NOTIFY)."""
    from cmem_cli.cli.invocation import open_api

    def say(message: str) -> None:
        print(f"cmem: {escape_control(message)}", file=sys.stderr, flush=True)

    with open_api(write=True) as memory:
        remote = memory.remote
        live = remote.live(on_report=say, on_error=error) if remote is not None else None
    if live is not None:
        live.start()
    return live


@collection_app.command("add")
def collection_add(
    directory: Annotated[str, typer.Argument(help="Folder of markdown files.", metavar="DIR")],
    name: Annotated[
        str | None, typer.Option("--name", help="Collection name (default: folder name).")
    ] = None,
    mask: Annotated[
        str | None, typer.Option("--mask", help="Glob of files to index, relative to DIR (default **/*.md).")
    ] = None,
) -> None:
    """Add a folder of markdown to the index; prints the collection name."""
    from cmem_cli.cli.invocation import open_api

    with open_api() as memory:
        collection = memory.index.add_collection(directory, name=name, mask=mask)
    write(f"{collection.name}\n")
    print(f"cmem: added {collection.root} ({collection.mask}); run `cmem index` to index it", file=sys.stderr)


@collection_app.command("list")
def collection_list(as_json: JsonOpt = False) -> None:
    """List collections ('memories' is cmem's own export tree)."""
    from cmem_cli.cli.invocation import open_api

    with open_api() as memory:
        collections = memory.index.collections()
    if as_json:
        write(dumps([c.to_json() for c in collections]) + "\n")
        return
    for c in collections:
        write(f"{escape_control(c.name)}\t{escape_control(str(c.root))}\t{escape_control(c.mask)}\n")


@collection_app.command("remove")
def collection_remove(name: Annotated[str, typer.Argument(help="Collection name.", metavar="NAME")]) -> None:
    """Stop indexing a collection and drop its documents from the index (files are not touched)."""
    from cmem_cli.cli.invocation import open_api

    with open_api() as memory:
        removed, dropped = memory.index.remove_collection(name)
    where = (
        f"{dropped} documents dropped from the index"
        if dropped is not None
        else "the next `cmem index` drops it"
    )
    print(f"cmem: removed collection {removed.name} ({where})", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("index")(index_cmd)
    app.command("status")(status_cmd)
    app.command("watch")(watch_cmd)
    app.add_typer(collection_app)
