"""Chunker properties: exact coverage, bounded overlap, fences kept whole, sensible cut points."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmem_index.chunker import chunk_markdown, estimate_tokens

WORDS = st.sampled_from(
    [
        "memory",
        "agent",
        "index",
        "token",
        "fence",
        "vector",
        "search",
        "über",
        "naïve",
        "日本語",
        "x",
        "longword",
    ]
)


def _sentence() -> st.SearchStrategy[str]:
    return st.lists(WORDS, min_size=1, max_size=25).map(lambda ws: " ".join(ws) + ".")


_paragraph = st.lists(_sentence(), min_size=1, max_size=12).map(lambda ss: " ".join(ss) + "\n")
_heading = st.tuples(st.integers(1, 6), WORDS).map(lambda t: "#" * t[0] + " " + t[1] + "\n")
_list = st.lists(_sentence(), min_size=1, max_size=6).map(lambda ss: "".join(f"- {s}\n" for s in ss))
_blank = st.just("\n")
_rule = st.just("---\n")
_code_line = st.lists(WORDS, min_size=0, max_size=12).map(lambda ws: "    " + " ".join(ws) + "\n")


@st.composite
def _fence(draw: st.DrawFn) -> tuple[str, str]:
    marker = draw(st.sampled_from(["```", "~~~", "````"]))
    lines = draw(st.lists(_code_line | _blank | _heading | _rule, min_size=0, max_size=60))
    return ("fence", f"{marker}python\n{''.join(lines)}{marker}\n")


@st.composite
def markdown_documents(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]]]:
    """A document and the (start, end) character span of each fenced block in it."""
    blocks = draw(
        st.lists(
            _paragraph.map(lambda s: ("text", s))
            | _heading.map(lambda s: ("text", s))
            | _list.map(lambda s: ("text", s))
            | _blank.map(lambda s: ("text", s))
            | _rule.map(lambda s: ("text", s))
            | _fence(),
            min_size=1,
            max_size=40,
        )
    )
    text, fences = "", []
    for kind, block in blocks:
        if kind == "fence":
            if text and not text.endswith("\n"):
                text += "\n"
            fences.append((len(text), len(text) + len(block)))
        text += block
    return text, fences


def _assert_invariants(body: str, fences: list[tuple[int, int]], max_tokens: int, overlap: float) -> None:
    chunks = chunk_markdown(body, max_tokens=max_tokens, overlap=overlap)
    if not body.strip():
        assert chunks == []
        return
    assert chunks[0].start == 0
    assert chunks[-1].end == len(body)
    for chunk in chunks:
        assert chunk.text == body[chunk.start : chunk.end]
        assert chunk.text
    overlap_budget = int(max_tokens * overlap)
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert before.start < after.start, "every chunk makes progress"
        assert after.start <= before.end, "no text falls between two chunks"
        repeated = body[after.start : before.end]
        assert estimate_tokens(repeated) <= overlap_budget, "duplication stays within the overlap"
    for start, end in fences:
        for chunk in chunks:
            assert not start < chunk.start < end, "a chunk starts inside a fence"
            assert not start < chunk.end < end, "a chunk ends inside a fence"
    for chunk in chunks:
        if chunk.tokens > max_tokens:
            assert any(chunk.start <= s and e <= chunk.end for s, e in fences), "only a whole fence oversizes"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_documents(), st.integers(min_value=24, max_value=400), st.sampled_from([0.0, 0.15, 0.3]))
def test_chunks_cover_the_body_exactly_overlap_little_and_never_split_a_fence(doc, max_tokens, overlap):
    body, fences = doc
    _assert_invariants(body, fences, max_tokens, overlap)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=3000), st.integers(min_value=8, max_value=200))
def test_arbitrary_text_is_covered_without_loss(body, max_tokens):
    _assert_invariants(body, [], max_tokens, 0.15)


def test_cuts_prefer_a_heading_near_the_limit_over_a_line_end():
    para = "word " * 40 + "\n"  # ~50 tokens a line
    body = "# One\n" + para * 14 + "## Two\n" + para * 4 + "plain\n" * 40
    assert len(chunk_markdown(body, max_tokens=1100, overlap=0.0)) == 1  # ~1000 tokens fit
    chunks = chunk_markdown(body, max_tokens=900, overlap=0.0)
    assert chunks[1].text.startswith("## Two")  # 200 tokens before the limit, and still the best cut


def test_a_fence_larger_than_the_budget_stays_one_chunk():
    fence = "```\n" + "code line here\n" * 200 + "```\n"
    body = "intro paragraph\n\n" + fence + "\nafter\n"
    chunks = chunk_markdown(body, max_tokens=100, overlap=0.15)
    whole = [c for c in chunks if fence in c.text]
    assert len(whole) == 1
    assert all(c.text.count("```") in (0, 2) for c in chunks)


def test_start_line_counts_from_the_first_body_line_and_skips_leading_blanks():
    body = "# Title\n\n" + "".join(f"para {i} " * 30 + "\n\n" for i in range(30))
    chunks = chunk_markdown(body, max_tokens=120, overlap=0.15, first_line=10)
    assert chunks[0].start_line == 10
    lines = body.splitlines()
    for chunk in chunks:
        first_text_line = next(line for line in chunk.text.splitlines() if line.strip())
        assert lines[chunk.start_line - 10].endswith(first_text_line)  # long lines may be cut mid-line


def test_a_single_huge_line_is_split_at_sentences():
    body = " ".join(f"Sentence number {i} says something." for i in range(400))
    chunks = chunk_markdown(body, max_tokens=100, overlap=0.15)
    assert len(chunks) > 5
    assert all(c.tokens <= 100 for c in chunks)
    assert all(c.text.rstrip().endswith(".") for c in chunks[:-1])


def test_model_tokenizer_counts_replace_the_estimate():
    body = "alpha beta gamma\n" * 100
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split()) + 2  # like a BERT tokenizer: [CLS] and [SEP] on every call

    chunks = chunk_markdown(body, max_tokens=30, overlap=0.0, count_tokens=count)
    assert calls, "the pluggable counter is used"
    assert all(c.tokens <= 30 for c in chunks)
    assert all(c.tokens >= 27 for c in chunks[:-1]), "special tokens are not counted once per line"


def test_empty_and_blank_bodies_have_no_chunks():
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n   \n") == []
