"""The Embedder API the indexer codes against, on the real MiniLM GGUF built by the importer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cmem_cli.core.errors import ModelError
from cmem_index.embedder import FORMATS, Embedder, detect_family
from cmem_index.llama_runtime import POOLING_LAST, POOLING_MEAN, pack
from tests.model_fixtures import build_minilm_gguf

REPO = Path(__file__).resolve().parent.parent

DOCS = [
    ("Cats", "The cat sat on the mat and purred in the afternoon sun."),
    ("SQLite", "Enable WAL mode so readers do not block the single writer."),
    (None, "Photosynthesis turns light into chemical energy in plants."),
    ("Deploy", "Roll back the release when the health check fails twice."),
]


@pytest.fixture(scope="module")
def embedder(minilm_gguf: Path) -> Embedder:
    return Embedder.load(minilm_gguf)


def test_shape_dimensions_and_limits(embedder: Embedder) -> None:
    assert (embedder.dim, embedder.max_tokens, embedder.family) == (384, 256, "plain")
    vectors = embedder.embed_documents(DOCS)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("where did the cat sit?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert embedder.embed_documents([]).shape == (0, 384)
    empty = embedder.embed_documents([(None, "")])  # [CLS] [SEP] still pools to a vector
    assert empty.shape == (1, 384) and abs(float(np.linalg.norm(empty)) - 1.0) < 1e-5


def test_query_is_closest_to_the_matching_document(embedder: Embedder) -> None:
    vectors = embedder.embed_documents(DOCS)
    for query, expected in [
        ("where did the cat sit?", 0),
        ("database concurrency with one writer", 1),
        ("how do plants make energy", 2),
        ("undo a bad deployment", 3),
    ]:
        assert int(np.argmax(vectors @ embedder.embed_query(query))) == expected, query


def test_batched_results_follow_input_order_and_match_one_at_a_time(embedder: Embedder) -> None:
    texts = [text for _, text in DOCS] + ["short", "a much longer text " * 40]
    together = embedder.embed_texts(texts)
    alone = np.stack([embedder.embed_texts([t])[0] for t in texts])
    # packed batches change the matrix shapes, so bf16 rounding differs in the last digits only
    assert (together * alone).sum(axis=1).min() > 0.9999
    reversed_ = embedder.embed_texts(texts[::-1])[::-1]
    assert (together * reversed_).sum(axis=1).min() > 0.9999


def test_plain_family_joins_title_and_text(embedder: Embedder) -> None:
    with_title = embedder.embed_documents([("Cats", "The cat sat on the mat.")])[0]
    joined = embedder.embed_texts(["Cats\nThe cat sat on the mat."])[0]
    assert float(with_title @ joined) > 0.99999


def test_long_texts_are_truncated_to_max_tokens_not_rejected(embedder: Embedder) -> None:
    long = " ".join(f"word{i}" for i in range(3000))
    assert embedder.count_tokens(long) > 1000
    cut = embedder._model.detokenize(embedder._model.tokenize(long)[: embedder.max_tokens - 2])
    a = embedder.embed_documents([(None, long)])[0]
    b = embedder.embed_documents([(None, cut)])[0]
    assert float(a @ b) > 0.9999


def test_count_tokens_and_text_budget(embedder: Embedder) -> None:
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("") == 0
    assert embedder.text_budget() == 254  # 256 minus [CLS] and [SEP]
    assert embedder.text_budget("A title") == 254 - embedder.count_tokens("A title\n")


def test_fingerprint_is_stable_and_changes_with_the_model(embedder: Embedder, minilm_gguf, tmp_path) -> None:
    again = Embedder.load(minilm_gguf)
    assert again.fingerprint == embedder.fingerprint
    other = Embedder.load(build_minilm_gguf(tmp_path, "f32"))
    assert other.fingerprint != embedder.fingerprint


def test_parallel_contexts_give_the_same_vectors(minilm_gguf: Path, embedder: Embedder) -> None:
    texts = [f"document number {i} about {topic}" for i, topic in enumerate(["cats", "sql", "rust"] * 6)]
    single = Embedder.load(minilm_gguf, n_threads=1, workers=1).embed_texts(texts)
    assert (single * embedder.embed_texts(texts)).sum(axis=1).min() > 0.9999


def test_a_second_context_is_made_only_for_a_batch_that_needs_it(minilm_gguf: Path) -> None:
    """A search embeds one query: it pays for one context; a batch of several groups makes the others."""
    embedder = Embedder.load(minilm_gguf, n_threads=2, workers=2)
    pool = embedder._context
    embedder.query_vector("token refresh race")
    assert len(pool.contexts) == 1
    embedder.embed_texts([f"document {i} " + "about caching and retries " * 40 for i in range(12)])
    assert len(pool.contexts) == 2


def test_packing_respects_the_token_and_sequence_limits() -> None:
    lengths = [200, 10, 250, 30, 30, 256, 1]
    groups = pack(lengths, batch_tokens=256, max_seqs=3)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in g) <= 256 and len(g) <= 3 for g in groups)
    with pytest.raises(ModelError):
        pack([257], batch_tokens=256, max_seqs=3)


def test_family_detection_and_prompt_formats() -> None:
    assert detect_family("gemma-embedding", "EmbeddingGemma 300m", POOLING_MEAN) == "embeddinggemma"
    assert detect_family("qwen3", "Qwen3 Embedding 0.6B", POOLING_LAST) == "qwen3-embedding"
    assert detect_family("nomic-bert", "nomic-embed-text-v1.5", POOLING_MEAN) == "nomic"
    assert detect_family("bert", "all-MiniLM-L6-v2", POOLING_MEAN) == "plain"
    gemma = FORMATS["embeddinggemma"]
    assert gemma.format_query("cats") == "task: search result | query: cats"
    assert gemma.format_document("Pets", "The cat.") == "title: Pets | text: The cat."
    assert gemma.format_document(None, "The cat.") == "title: none | text: The cat."
    qwen = FORMATS["qwen3-embedding"]
    assert qwen.format_query("cats").startswith("Instruct: ") and qwen.format_query("cats").endswith(
        "\nQuery:cats"
    )
    assert qwen.format_document("Pets", "The cat.") == "Pets\nThe cat."
    assert FORMATS["plain"].format_query("cats") == "cats"


def test_a_reranker_or_a_missing_file_is_not_an_embedder(tmp_path: Path) -> None:
    from tests.model_fixtures import build_tiny_reranker_gguf

    with pytest.raises(ModelError, match="not an embedding model"):
        Embedder.load(build_tiny_reranker_gguf(tmp_path))
    with pytest.raises(ModelError, match="does not exist"):
        Embedder.load(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="cannot load model"):
        Embedder.load(junk)


def test_llama_cpp_stays_silent_on_stderr(minilm_gguf: Path) -> None:
    code = (
        "import sys; from pathlib import Path; import cmem_index.loading, cmem_index.model_specs; "
        "from cmem_index.embedder import Embedder; "
        f"e = Embedder.load(Path({str(minilm_gguf)!r})); e.embed_documents([(None, 'hello world')]); "
        "print(e.dim)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("384\n", "")


def test_importing_the_embedder_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, cmem_index.embedder, cmem_index.reranker, cmem_index.download, cmem_index.importer, cmem_index.model_specs; "
        "print(sorted(m for m in ('numpy', 'llama_cpp', 'gguf') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stderr


def test_query_vector_without_numpy_matches_the_batched_path(embedder: Embedder) -> None:
    query = "where did the cat sit?"
    plain = np.array(embedder.query_vector(query), dtype=np.float32)
    batched = embedder.embed_texts([query])[0]  # the plain family's query format is the text itself
    assert plain.shape == (384,)
    assert abs(float(np.linalg.norm(plain)) - 1.0) < 1e-6
    assert float(plain @ batched) > 0.99999


def test_a_few_query_vectors_in_one_batch_match_each_alone(embedder: Embedder) -> None:
    queries = ["where did the cat sit?", "What did see at the council meeting?", "a third, longer query " * 3]
    together = embedder.query_vectors(queries)
    for query, vector in zip(queries, together, strict=True):
        alone = np.array(embedder.query_vector(query), dtype=np.float32)
        assert float(alone @ np.array(vector, dtype=np.float32)) > 0.99999


def test_embedding_a_query_loads_only_the_llama_bindings(minilm_gguf: Path) -> None:
    """A search embeds one query: it must not pay for numpy or llama_cpp's high-level package (~0.1 s each),
    nor for dataclasses or the importer, and a later ``import llama_cpp`` by other code must still get the
    real, complete package."""
    code = (
        "import sys; from pathlib import Path; import cmem_index.loading, cmem_index.model_specs; "
        "from cmem_index.embedder import Embedder; "
        f"e = Embedder.load(Path({str(minilm_gguf)!r})); v = e.query_vector('hello world'); "
        "print(len(v), sorted(m for m in ('numpy', 'llama_cpp', 'llama_cpp.llama', 'jinja2', 'dataclasses', "
        "'cmem_index.importer') if m in sys.modules)); "
        "import llama_cpp; print(hasattr(llama_cpp, 'Llama'), llama_cpp.llama_cpp is "
        "sys.modules['llama_cpp.llama_cpp'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["384 []", "True True"]
