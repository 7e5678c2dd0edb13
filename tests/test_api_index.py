"""The index's face in the Python API (``memory.index``): build, status, collections and their documents,
models; what `cmem index`, `cmem collection` and `cmem models` stand on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cmem_cli.api import Memory, ModelError, NotFound


@pytest.fixture
def memory(home):
    with Memory() as m:
        yield m


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "deploy.md").write_text("# Deploying\n\nThe canary rollout waits ten minutes per stage.\n")
    (folder / "backup.md").write_text("# Backups\n\nSnapshots run nightly at two.\n")
    return folder


def test_a_collection_added_built_searched_and_removed_through_the_api(memory, notes, cli):
    added = memory.index.add_collection(notes, name="notes")
    assert (added.name, added.root) == ("notes", notes.resolve())
    assert [c.name for c in memory.index.collections()] == ["memories", "notes"]
    assert memory.index.collection_roots()["notes"] == notes.resolve()
    memory.add("Rollout policy", narrative="canary first", project="demo")
    said: list[str] = []
    report = memory.index.build(on_keyword_only=said.append)
    assert report.read == 3 and report.errors == []  # two notes and the memory's file
    assert len(said) == 1 and "no embedding model" in said[0]
    assert memory.index.status()["collections"][1]["documents"] == 2
    assert [h.path for h in memory.search("canary rollout", mode="keyword") if h.kind == "document"] == [
        "notes:deploy.md"
    ]
    removed, dropped = memory.index.remove_collection("notes")
    assert (removed.name, dropped) == ("notes", 2)
    assert memory.index.status()["documents"] == 1  # the memory stays
    assert [h.kind for h in memory.search("canary rollout", mode="keyword")] == ["observation"]
    assert cli("collection", "list").stdout.count("\n") == 1  # the CLI sees what the API did
    assert notes.joinpath("deploy.md").is_file()  # the files are not touched


def test_dropping_a_collection_s_documents_leaves_the_others(memory, notes, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nalpha\n")
    memory.index.add_collection(notes, name="notes")
    memory.index.add_collection(other, name="other")
    memory.index.build()
    assert memory.index.drop_documents("notes") == 2
    collections = {c["name"]: c["documents"] for c in memory.index.status()["collections"]}
    assert collections == {"memories": 0, "notes": 0, "other": 1}


def test_a_full_build_replaces_the_index_and_keeps_what_it_holds(memory, notes):
    memory.index.add_collection(notes, name="notes")
    memory.index.build()
    report = memory.index.build(full=True)
    assert report.full is True and report.read == 2
    assert memory.index.status()["documents"] == 2


def test_without_an_index_nothing_is_dropped_and_an_unknown_collection_is_not_found(memory):
    assert memory.index.drop_documents("notes") == 0
    with pytest.raises(NotFound):
        memory.index.remove_collection("notes")
    assert memory.index.status()["exists"] is False


def test_models_say_what_is_configured_and_refuse_what_is_missing(memory, monkeypatch, home):
    models = memory.index.models
    assert [row["role"] for row in models.configured()] == ["embed", "rerank"]
    assert models.files() == []
    assert models.needs_embedder() is False  # CMEM_EMBED_MODEL=none is a choice made in the environment
    with pytest.raises(ModelError, match="no embedding model configured"):
        models.path()
    with pytest.raises(ModelError, match="no reranker configured"):
        models.pull(role="rerank")
    missing = models.local_path("hf:owner/repo/model.gguf")
    assert missing == models.directory / "owner" / "repo" / "model.gguf"
    with pytest.raises(ModelError):
        models.path("hf:owner/repo/model.gguf")
    monkeypatch.delenv("CMEM_EMBED_MODEL")
    assert Memory().index.models.needs_embedder() is True  # the default model is not on disk


def test_the_index_face_loads_nothing_heavy_until_asked():
    probe = (
        "import sys\n"
        "from cmem_cli.api import Memory\n"
        "index = Memory().index\n"
        "index.models\n"
        "heavy = ('apsw', 'numpy', 'llama_cpp', 'watchdog', 'cmem_index')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


JSON_TYPES = Path(__file__).resolve().parents[1] / "cmem_cli" / "core" / "json_types.py"


def test_every_type_memory_index_returns_is_importable_from_the_api() -> None:
    """Each class named in the return annotations of ``memory.index`` and ``memory.index.models`` is in
    ``cmem_cli.api.__all__`` and is the class the index defines (a caller annotates with it)."""
    import inspect
    import re

    import cmem_cli.api as api
    from cmem_cli.api.index import Index, Models
    from cmem_index.collections import Collection
    from cmem_index.indexer import IndexReport

    returned = {"Index"}  # memory.index itself
    for face in (Index, Models):
        for name, member in vars(face).items():
            if name.startswith("_"):
                continue
            function = member.fget if isinstance(member, property) else member
            returned |= set(re.findall(r"\b[A-Z]\w+", str(inspect.signature(function).return_annotation)))
    # JSON shapes (TypedDicts for the type checker only, core/json_types.py) are annotated with under
    # TYPE_CHECKING; every class a caller gets at run time is the API's
    json_shapes = set(re.findall(r"^    class (\w+)\(TypedDict\)", JSON_TYPES.read_text(), re.M))
    assert returned & json_shapes == {"ModelJson", "ModelFileJson"}
    assert returned - json_shapes - {"Path", "Any", "None"} == {
        "Index",
        "Models",
        "IndexReport",
        "Collection",
        "Watcher",
        "ImportResult",
    }
    assert returned - json_shapes - {"Path", "Any", "None"} <= set(api.__all__)
    assert (api.IndexReport, api.Collection, api.Index) == (IndexReport, Collection, Index)
