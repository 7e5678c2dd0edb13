"""The update pass: change detection, the embedding cache, stale marking, collections and atomic rebuild."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cmem_cli.core.config import load_config
from cmem_index import indexer as indexer_module
from cmem_index.collections import add_collection, load_collections
from cmem_index.indexer import Indexer, rebuild
from cmem_index.store import IndexStore
from tests.index_helpers import CountingEmbedder, index_rows, index_value, observation_file, write

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def config(home: Path):
    cfg = load_config()
    cfg.ensure_home()
    return cfg


def run_pass(config, embedder=None, **kwargs):
    store = IndexStore.open(config.index_path)
    try:
        return Indexer(store, load_collections(config), embedder, **kwargs).run()
    finally:
        store.close()


def count(config, sql: str, params=()) -> int:
    store = IndexStore.open(config.index_path)
    try:
        return int(index_value(store, sql, params))
    finally:
        store.close()


def chunk_ids(config, path: str) -> list[int]:
    store = IndexStore.open(config.index_path)
    try:
        return [
            r[0]
            for r in index_rows(
                store,
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = ? ORDER BY c.seq",
                (path,),
            )
        ]
    finally:
        store.close()


def long_body(topic: str, sections: int = 6) -> str:
    return "\n".join(
        f"## {topic} part {i}\n\n" + f"The {topic} detail number {i} explains the behaviour at length. " * 12
        for i in range(sections)
    )


def test_touching_a_file_rereads_it_but_does_not_rechunk(config):
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha note", body="alpha body")
    observation_file(config.export_dir, "p/b.md", uid="U2", title="Beta note", body="beta body")
    first = run_pass(config)
    assert (first.read, first.chunked) == (2, 2)
    before = chunk_ids(config, "p/a.md")
    stat = (config.export_dir / "p/a.md").stat()
    os.utime(config.export_dir / "p/a.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    second = run_pass(config)
    assert (second.read, second.chunked, second.unchanged) == (1, 0, 1)
    assert chunk_ids(config, "p/a.md") == before
    third = run_pass(config)
    assert (third.read, third.chunked) == (0, 0), "the new mtime was recorded"


def test_changing_content_rechunks_only_that_file(config):
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha note", body="alpha body")
    observation_file(config.export_dir, "p/b.md", uid="U2", title="Beta note", body="beta body")
    run_pass(config)
    untouched = chunk_ids(config, "p/b.md")
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha note", body="alpha body, now longer")
    report = run_pass(config)
    assert (report.read, report.chunked) == (1, 1)
    assert chunk_ids(config, "p/b.md") == untouched
    assert count(config, "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id "
                 "WHERE d.path = 'p/a.md' AND c.text LIKE '%now longer%'") == 1  # fmt: skip


def test_a_second_run_embeds_nothing_and_unchanged_chunks_come_from_the_cache(config):
    write(config.export_dir, "notes/long.md", "# Long\n\n" + long_body("caching", 8))
    embedder = CountingEmbedder(max_tokens=120)
    first = run_pass(config, embedder)
    n_chunks = count(config, "SELECT count(*) FROM chunks")
    assert n_chunks > 3
    assert first.embedded == n_chunks == count(config, "SELECT count(*) FROM chunk_vectors")

    embedder.embedded.clear()
    second = run_pass(config, embedder)
    assert (second.read, second.embedded, embedder.embedded) == (0, 0, [])

    # Edit the last section: the file is re-chunked, but only chunks whose text changed are embedded.
    path = config.export_dir / "notes/long.md"
    path.write_text(path.read_text() + "\nOne more closing sentence about caching.\n")
    third = run_pass(config, embedder)
    assert third.chunked == 1
    assert 1 <= third.embedded <= 2, "only the chunks the edit reached"
    assert third.cache_hits == count(config, "SELECT count(*) FROM chunks") - third.embedded
    assert any("closing sentence" in text for _, text in embedder.embedded)
    assert count(config, "SELECT count(*) FROM chunks WHERE embedded_with IS NULL") == 0


def test_a_new_model_never_mixes_vectors_and_switching_back_reuses_the_cache(config):
    for i in range(3):
        observation_file(config.export_dir, f"p/{i}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    model_a, model_b = CountingEmbedder("model-a"), CountingEmbedder("model-b", dim=16)
    run_pass(config, model_a)
    store = IndexStore.open(config.index_path)
    assert store.vectors.model() == ("model-a", 32)
    store.close()

    report = run_pass(config, model_b)
    assert report.embedded == 3
    assert count(config, "SELECT count(*) FROM chunks WHERE embedded_with != 'model-b'") == 0
    assert count(config, "SELECT count(*) FROM chunk_vectors") == 3
    store = IndexStore.open(config.index_path)
    assert store.vectors.model() == ("model-b", 16)
    store.close()

    model_a.embedded.clear()
    back = run_pass(config, model_a)
    assert back.embedded == 0 and back.cache_hits == 3 and model_a.embedded == []


def test_vectors_of_a_model_that_is_not_the_configured_one_are_not_searched(config, monkeypatch):
    from cmem_index import hybrid

    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha note", body="alpha body")
    run_pass(config, CountingEmbedder("old-model"))
    monkeypatch.setattr("cmem_index.loading.load_embedder", lambda cfg: (CountingEmbedder("new-model"), None))
    results = hybrid.hybrid(config, "alpha", mode="hybrid")
    assert results.mode == "keyword"
    assert any("no vectors for the configured model" in note for note in results.notes)
    assert [h.uid for h in results] == ["U1"]


def test_a_chunker_change_marks_every_document_stale_and_the_next_pass_rechunks(config, monkeypatch):
    for i in range(3):
        observation_file(config.export_dir, f"p/{i}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    run_pass(config)
    monkeypatch.setattr(indexer_module, "CHUNKER_VERSION", "test-next")
    store = IndexStore.open(config.index_path)
    stale = index_value(
        store,
        "SELECT count(*) FROM documents WHERE chunked_with != ?",
        (indexer_module.chunker_signature(None),),
    )
    store.close()
    assert stale == 3
    report = run_pass(config)
    assert (report.read, report.chunked) == (3, 3)
    assert count(config, "SELECT count(*) FROM documents WHERE chunked_with LIKE 'vtest-next/%'") == 3


def test_deleted_files_and_removed_collections_leave_the_index(config, tmp_path):
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha", body="x")
    observation_file(config.export_dir, "p/b.md", uid="U2", title="Beta", body="y")
    notes = tmp_path / "notes"
    write(notes, "one.md", "# One\n\ntext\n")
    add_collection(config, str(notes), name="notes")
    run_pass(config)
    assert count(config, "SELECT count(*) FROM documents") == 3
    (config.export_dir / "p/b.md").unlink()
    assert run_pass(config).removed == 1
    (config.home / "collections.json").write_text('{"version": 1, "collections": []}')
    assert run_pass(config).removed == 1
    assert count(config, "SELECT count(*) FROM documents") == 1
    assert count(config, "SELECT count(*) FROM chunks") == count(config, "SELECT count(*) FROM chunks_fts")


def test_front_matter_becomes_metadata_and_context_not_chunk_text(config):
    observation_file(
        config.export_dir,
        "webapp/s1/a.md",
        uid="01JD3K8ZQ4W6N5T2X9Y7V0B1CD",
        obs_id=42,
        title="Fix JWT expiry check",
        body="*tokens expired one hour early*",
        type="bugfix",
        concepts=["auth", "JWT"],
        session="s1",
    )
    run_pass(config)
    store = IndexStore.open(config.index_path)
    doc = index_rows(
        store, "SELECT kind, uid, obs_id, type, project, session, agent, created_at, context FROM documents"
    )[0]
    texts = [r[0] for r in index_rows(store, "SELECT text FROM chunks")]
    concepts = sorted(r[0] for r in index_rows(store, "SELECT concept FROM concepts"))
    in_keyword_context = [
        len(index_rows(store, "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (f"context:{word}",)))
        for word in ("bugfix", "webapp", "jwt", "january", "tokens")
    ]
    store.close()
    assert doc[:7] == ("observation", "01JD3K8ZQ4W6N5T2X9Y7V0B1CD", 42, "bugfix", "webapp", "s1", "cli")
    assert doc[7] == 1767323045000
    # the embedder's title: title and concepts; type and project are keyword context only
    assert doc[8] == "Fix JWT expiry check (auth, JWT)"
    assert in_keyword_context == [1, 1, 1, 1, 0]  # the date: 2 January 2026
    assert concepts == ["auth", "jwt"]
    assert all("uid:" not in t and "cmem:" not in t for t in texts)


def test_full_rebuild_swaps_in_a_new_index_and_keeps_the_cache(config):
    for i in range(4):
        observation_file(config.export_dir, f"p/{i}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    embedder = CountingEmbedder()
    run_pass(config, embedder)
    embedder.embedded.clear()
    reader = IndexStore.open(config.index_path, readonly=True)  # a search holding the old index open
    observation_file(config.export_dir, "p/new.md", uid="UN", title="New note", body="fresh")
    report = rebuild(config.index_path, load_collections(config), embedder)
    assert report.full and report.chunked == 5
    assert report.embedded == 1 and report.cache_hits == 4, "vectors were carried over"
    assert index_value(reader, "SELECT count(*) FROM documents") == 5, "an open reader sees the new index"
    reader.close()
    assert not config.index_path.with_name("index.db.rebuild").exists()


def test_an_interrupted_rebuild_leaves_the_old_index_working(config):
    for i in range(200):
        observation_file(config.export_dir, f"p/{i:03}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    run_pass(config)

    def interrupt(phase, done, total):
        if phase == "read" and done >= 64:
            raise KeyboardInterrupt

    (config.export_dir / "p/000.md").unlink()
    with pytest.raises(KeyboardInterrupt):
        rebuild(config.index_path, load_collections(config), None, progress=interrupt)
    assert count(config, "SELECT count(*) FROM documents") == 200
    assert not config.index_path.with_name("index.db.rebuild").exists()


def test_a_rebuild_killed_outright_leaves_the_old_index_working(config):
    for i in range(150):
        observation_file(config.export_dir, f"p/{i:03}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    run_pass(config)
    (config.export_dir / "p/000.md").unlink()
    script = textwrap.dedent(
        """
        import os, signal, sys
        from cmem_cli.core.config import load_config
        from cmem_index.collections import load_collections
        from cmem_index.indexer import rebuild

        def die(phase, done, total):
            if phase == "read" and done >= 64:
                os.kill(os.getpid(), signal.SIGKILL)

        config = load_config()
        rebuild(config.index_path, load_collections(config), None, progress=die)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=os.environ.copy(), timeout=60)
    assert proc.returncode == -9
    assert config.index_path.with_name("index.db.rebuild").exists(), "the kill happened mid-build"
    assert count(config, "SELECT count(*) FROM documents") == 150
    # The next rebuild clears the leftover and completes.
    report = rebuild(config.index_path, load_collections(config), None)
    assert report.chunked == 149
    assert count(config, "SELECT count(*) FROM documents") == 149


def test_the_title_heading_is_embedded_once_and_takes_no_room_in_the_first_chunk(config):
    title = "Cache invalidation in the image resizer"
    body = " ".join(f"word{i}" for i in range(150))
    observation_file(config.export_dir, "webapp/s/title.md", uid="UTITLE", title=title, body=body)
    embedder = CountingEmbedder(max_tokens=178)  # room for the body alone, not for the heading as well
    run_pass(config, embedder)
    assert len(embedder.embedded) == 1
    prompt_title, text = embedder.embedded[0]
    assert prompt_title.startswith(title)
    assert title not in text and text.startswith("word0") and text.endswith("word149")
    store = IndexStore.open(config.index_path)
    try:
        (chunk_text, line), *_ = index_rows(store, "SELECT text, start_line FROM chunks")
    finally:
        store.close()
    assert chunk_text.startswith(f"# {title}")  # keyword search and display keep the heading
    assert line == 11  # the heading's line in the file


def test_a_document_that_is_only_its_title_is_embedded_as_the_title(config):
    observation_file(config.export_dir, "webapp/s/short.md", uid="USHORT", title="Bart danced at the party")
    embedder = CountingEmbedder()
    run_pass(config, embedder)
    assert embedder.embedded == [("Bart danced at the party", "")]


def test_progress_moves_file_by_file_and_within_an_embedding_page(config):
    for i in range(20):
        body = "\n\n".join(f"## Part {j}\n\n" + f"topic {i} part {j} " * 40 for j in range(8))
        observation_file(config.export_dir, f"p/{i:03}.md", uid=f"U{i}", title=f"Note {i}", body=body)
    seen: list[tuple[str, int, int]] = []
    run_pass(config, CountingEmbedder(max_tokens=64), progress=lambda *event: seen.append(event))
    reads = [done for phase, done, _ in seen if phase == "read"]
    assert reads == list(range(1, 21))
    embeds = [(done, total) for phase, done, total in seen if phase == "embed"]
    total = embeds[0][1]
    assert total > indexer_module.EMBED_PROGRESS_STEP * 2 and total <= indexer_module.EMBED_PAGE
    steps = [done for done, _ in embeds]
    assert steps == sorted(steps) and steps[-1] == total
    assert len([d for d in steps if 0 < d < total]) >= 2  # moves inside the one page, not only at its end


def test_cmem_section_headings_are_not_embedded_but_stay_searchable(config):
    from cmem_cli.core.fields import LINKS_MARKER, OBSERVATION_HEADINGS
    from export.markdown import render_observation

    record = {
        "uid": "01SECTIONS", "type": "discovery", "title": "Parser drops trailing commas",
        "project": "webapp", "created_at": 1_700_000_000_000, "updated_at": 1_700_000_000_000,
        "facts": ["commas vanish at EOF"], "files_read": ["src/parse.py"],
        "narrative": "The tokenizer stops one byte early.\n\n## Repro\n\nFeed it `[1,2,]`.",
    }  # fmt: skip
    links = [{"type": "related", "id": 2, "uid": "01B", "title": "Lexer rewrite", "href": "x.md"}]
    text = render_observation(record, links)
    written = {line for line in text.splitlines() if line.startswith("## ") or line == LINKS_MARKER}
    # the export writes exactly the headings the index drops (and a narrative's own, which it keeps)
    assert written == {*OBSERVATION_HEADINGS, LINKS_MARKER, "## Repro"}
    write(config.export_dir, "webapp/s/sections.md", text)
    embedder = CountingEmbedder()
    run_pass(config, embedder)
    embedded = "\n".join(body for _, body in embedder.embedded)
    for heading in (*OBSERVATION_HEADINGS, LINKS_MARKER):
        assert heading not in embedded
    for kept in ("commas vanish at EOF", "src/parse.py", "one byte early", "## Repro", "Lexer rewrite"):
        assert kept in embedded
    # keyword search and display keep them
    assert count(config, "SELECT count(*) FROM chunks WHERE text LIKE '%## Narrative%'") == 1


AWKWARD_NAMES = [
    "a.md",
    "a-b.md",
    "a/b.md",
    "a/a.md",
    "ab/c.md",
    "B.md",
    "é.md",
    "z/y/x.md",
    "a b.md",
    "a_/q.md",
]


def test_the_walk_yields_paths_in_the_order_sqlite_sorts_them(tmp_path):
    import apsw

    from cmem_index.scan import walk

    for name in AWKWARD_NAMES:
        write(tmp_path, name, "# t\n")
    walked = [path for path, _ in walk(tmp_path, "**/*.md")]
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t(path TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(p,) for p in AWKWARD_NAMES])
    assert walked == [r[0] for r in conn.execute("SELECT path FROM t ORDER BY path")]
    assert walked == sorted(AWKWARD_NAMES)


def test_an_update_pass_reads_exactly_what_changed_among_awkward_names(config):
    root = config.export_dir
    for i, name in enumerate(AWKWARD_NAMES):
        observation_file(root, f"p/{name}", uid=f"U{i}", title=f"note {i}", body=f"body {i}")
    first = run_pass(config)
    assert (first.scanned, first.read, first.removed) == (len(AWKWARD_NAMES), len(AWKWARD_NAMES), 0)
    (root / "p/a/b.md").unlink()
    (root / "p/ab/c.md").unlink()
    observation_file(root, "p/a/aa.md", uid="N1", title="new one", body="fresh")
    observation_file(root, "p/a.md", uid="U0", title="note 0", body="changed body, longer than before")
    second = run_pass(config)
    assert (second.scanned, second.read, second.removed, second.unchanged) == (
        len(AWKWARD_NAMES) - 1,
        2,
        2,
        0,
    )
    paths = {r for (r,) in index_rows(IndexStore.open(config.index_path), "SELECT path FROM documents")}
    expected = {f"p/{n}" for n in AWKWARD_NAMES} - {"p/a/b.md", "p/ab/c.md"} | {"p/a/aa.md"}
    assert paths == expected
    third = run_pass(config)
    assert (third.read, third.removed) == (0, 0)


def test_only_the_dropped_chunks_cached_vectors_are_pruned(config):
    embedder = CountingEmbedder()
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha", body="alpha words")
    observation_file(config.export_dir, "p/b.md", uid="U2", title="Beta", body="beta words")
    run_pass(config, embedder)
    assert count(config, "SELECT count(*) FROM embed_cache") == 2
    (config.export_dir / "p/a.md").unlink()
    run_pass(config, embedder)
    assert count(config, "SELECT count(*) FROM embed_cache") == 1
    assert count(config, "SELECT count(*) FROM embed_cache e JOIN chunks c ON c.hash = e.hash") == 1


def test_a_tool_call_capture_is_embedded_by_its_title_alone_and_repeats_share_a_vector(config):
    embedder = CountingEmbedder()
    diff = "- old line of code\n+ new line of code with a retry backoff"
    observation_file(config.export_dir, "p/c1.md", uid="C1", title="Edited src/app.py", body=diff,
                     tools_used=["Edit"])  # fmt: skip
    observation_file(config.export_dir, "p/c2.md", uid="C2", title="Edited src/app.py", body="+ other",
                     tools_used=["Edit"])  # fmt: skip
    observation_file(
        config.export_dir, "p/d.md", uid="D1", title="Retry with backoff", body="We chose jitter."
    )
    report = run_pass(config, embedder)
    assert sorted(embedder.embedded) == [
        ("Edited src/app.py", ""),
        ("Retry with backoff", "We chose jitter."),
    ]
    assert report.embedded == 2  # the second capture of the same title reuses the first one's vector
    assert count(config, "SELECT count(*) FROM chunks WHERE embedded_with IS NOT NULL") == 3
    # the whole capture stays searchable by its words
    assert count(config, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'backoff'") == 2


def keyword_segments(config) -> int:
    """How many segments FTS5's structure record lists for the chunks (after its cookie and levels)."""
    from cmem_cli.core.bm25 import _varint

    store = IndexStore.open(config.index_path, readonly=True)
    try:
        (blob,) = index_rows(store, "SELECT block FROM chunks_fts_data WHERE id = 10")[0]
    finally:
        store.close()
    at = 8 if blob[4:8] == b"\xff\x00\x00\x01" else 4  # the cookie, then the marker of a v2 structure
    while blob[at] & 0x80:  # skip the number of levels
        at += 1
    return _varint(blob[at + 1 :])


@pytest.mark.parametrize(("merge_from", "merged"), [(150, True), (10_000, False)])
def test_a_pass_that_rewrites_much_of_the_index_merges_its_keywords(config, monkeypatch, merge_from, merged):
    """Each write batch leaves a segment in the full-text index and each deleted chunk a tombstone, which
    every search steps over; a pass that rewrote a tenth of the index or more merges them into one."""
    monkeypatch.setattr(indexer_module, "MERGE_FROM", merge_from)
    for i in range(200):  # four write batches
        observation_file(config.export_dir, f"p/{i:03}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    run_pass(config)
    assert (keyword_segments(config) == 1) is merged


def test_a_kill_while_the_keyword_index_merges_loses_nothing(config):
    """kill -9 inside the merge's transaction: the index stays as the pass wrote it, and the next pass and
    search go on (the FTS5 index passes its own integrity check)."""
    for i in range(200):
        observation_file(config.export_dir, f"p/{i:03}.md", uid=f"U{i}", title=f"Note {i}", body=f"body {i}")
    script = textwrap.dedent(
        """
        import os, signal
        from cmem_cli.core.config import load_config
        from cmem_index import indexer
        from cmem_index.collections import load_collections
        from cmem_index.store import IndexStore

        indexer.MERGE_FROM = 1
        config = load_config()
        store = IndexStore.open(config.index_path)

        steps = 0

        def twenty_steps_in():
            global steps
            steps += store.conn.in_transaction
            if steps == 20:
                os.kill(os.getpid(), signal.SIGKILL)
            return False

        def die_in_the_merge(phase, done, total):
            if phase == "keywords":  # the merge's transaction is next: die twenty steps into it
                store.conn.set_progress_handler(twenty_steps_in, 1)

        indexer.Indexer(store, load_collections(config), None, progress=die_in_the_merge).run()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=os.environ.copy(), timeout=60)
    assert proc.returncode == -9
    assert keyword_segments(config) > 1  # killed before the merge committed
    assert count(config, "SELECT count(*) FROM documents") == 200
    report = run_pass(config)
    assert (report.read, report.removed) == (0, 0)
    store = IndexStore.open(config.index_path)
    try:
        store.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        from cmem_index.retrieve import DocFilters, keyword

        assert len(keyword(store, "note body", DocFilters(), 500)) == 200
    finally:
        store.close()
