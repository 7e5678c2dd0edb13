"""What a search query is embedded as: its parts (the whole, and a multi-line query's last line), averaged
into one search vector, all parts of one search in one call to the model."""

from __future__ import annotations

import math
from array import array

from cmem_index.hybrid import embed_search_queries, embed_search_query, query_parts, query_vector_scale


class RecordingEmbedder:
    """Fixed unit vectors per text; records each batch the search asks the model for."""

    VECTORS = {
        "where is the cache?": [1.0, 0.0, 0.0],
        "we moved it last week\nwhere is the cache?": [0.0, 1.0, 0.0],
        "cache": [0.0, 0.0, 1.0],
    }

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def query_vectors(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [self.VECTORS[text] for text in texts]


def floats(vector: bytes) -> list[float]:
    return list(array("f", vector))


def test_a_one_line_query_is_one_part() -> None:
    assert query_parts("where is the cache?") == ["where is the cache?"]


def test_a_multi_line_query_adds_its_last_non_blank_line() -> None:
    query = "we moved it last week\nwhere is the cache?\n\n  \n"
    assert query_parts(query) == [query, "where is the cache?"]


def test_one_line_vector_is_the_unit_vector_itself() -> None:
    embedder = RecordingEmbedder()
    vector = embed_search_query(embedder, "where is the cache?")
    assert floats(vector) == [1.0, 0.0, 0.0]
    assert query_vector_scale(vector) == 1.0


def test_multi_line_parts_are_embedded_in_one_call_and_averaged() -> None:
    embedder = RecordingEmbedder()
    query = "we moved it last week\nwhere is the cache?"
    vector = embed_search_query(embedder, query)
    assert embedder.batches == [[query, "where is the cache?"]]
    assert floats(vector) == [0.5, 0.5, 0.0]
    # sqlite-vec divides by the vector's length; the scale restores the mean of the two cosines
    assert math.isclose(query_vector_scale(vector), math.sqrt(0.5), rel_tol=1e-6)


def test_several_queries_share_one_call_and_keep_their_order() -> None:
    embedder = RecordingEmbedder()
    two_lines = "we moved it last week\nwhere is the cache?"
    short, whole = embed_search_queries(embedder, ["cache", two_lines])
    assert embedder.batches == [["cache", two_lines, "where is the cache?"]]
    assert floats(short) == [0.0, 0.0, 1.0]
    assert floats(whole) == [0.5, 0.5, 0.0]
