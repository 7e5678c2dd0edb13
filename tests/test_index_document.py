"""Reading markdown for the index: front matter is metadata and context, never chunk text."""

from __future__ import annotations

from cmem_index.document import as_epoch_ms, parse_markdown
from cmem_index.scan import compile_mask


def test_cmem_front_matter_becomes_metadata_title_and_context():
    text = (
        '---\ncmem: observation\nid: 42\nuid: "01JD"\ntype: bugfix\ntitle: Fix JWT expiry check\n'
        'project: webapp\nconcepts: [auth, jwt]\ncreated_at: "2026-11-22T17:12:39.123Z"\nkey: null\n---\n'
        "# Fix JWT expiry check\n\nbody\n"
    )
    doc = parse_markdown(text, "webapp/s/x.md")
    assert doc.kind == "observation"
    assert doc.body == "# Fix JWT expiry check\n\nbody\n"
    assert doc.body_line == 12
    # keyword search matches type, project and date too; the embedder sees the title and the concepts only
    assert doc.keyword_context == "Fix JWT expiry check (bugfix, webapp, 22 November 2026; auth, jwt)"
    assert doc.context == "Fix JWT expiry check (auth, jwt)"
    assert as_epoch_ms(doc.meta["created_at"]) == 1795367559123


def test_the_date_the_front_matter_states_becomes_keyword_context_in_english_words():
    def keyword_context(front: str) -> str:
        return parse_markdown(f"---\ntitle: Post\n{front}\n---\nbody\n", "p.md").keyword_context

    assert keyword_context("date: 2021-03-05") == "Post (5 March 2021)"  # YAML gives a date
    assert keyword_context('date: "2021-03-05T23:30:00-05:00"') == "Post (5 March 2021)"  # not converted
    assert keyword_context("created_at: 2022-11-04T15:56:00Z\ndate: 1999-01-01") == "Post (4 November 2022)"
    assert keyword_context("date: someday") == "Post"
    assert keyword_context("date: 20210305") == "Post"


def test_broken_yaml_front_matter_is_still_kept_out_of_the_body():
    doc = parse_markdown("---\ntitle: Slow listing: add an index\ntags: [a\n---\nReal content.\n", "n.md")
    assert doc.body == "Real content.\n"
    assert doc.title == "Slow listing: add an index"
    assert doc.kind is None


def test_titles_fall_back_to_the_first_heading_then_the_file_name():
    assert parse_markdown("intro\n\n# The Heading #\n\ntext", "a/b.md").title == "The Heading"
    assert parse_markdown("no heading at all", "dir/my-note.md").title == "my-note"
    summary = parse_markdown("---\ncmem: summary\nrequest: Speed up search\n---\nbody", "s.md")
    assert summary.kind == "summary" and summary.title == "Speed up search"


def test_a_rule_that_is_not_at_the_top_is_body_text():
    doc = parse_markdown("text\n---\nmore\n---\n", "r.md")
    assert doc.meta == {} and doc.body.startswith("text")


def test_dates_of_every_yaml_shape_become_epoch_ms():
    import datetime as dt

    assert as_epoch_ms("2023-12-25") == 1703462400000
    assert as_epoch_ms(dt.date(2023, 12, 25)) == 1703462400000
    assert as_epoch_ms(dt.datetime(2023, 12, 25, tzinfo=dt.UTC)) == 1703462400000
    assert as_epoch_ms("not a date") is None and as_epoch_ms(True) is None


def test_collection_masks_match_relative_paths_like_shell_globs():
    md = compile_mask("**/*.md")
    assert md("a.md") and md("x/y/z.md") and not md("a.mdx") and not md("a.txt")
    top = compile_mask("*.md")
    assert top("a.md") and not top("x/a.md")
    multi = compile_mask("docs/**/*.{md,markdown}")
    assert multi("docs/a.markdown") and multi("docs/x/y.md") and not multi("other/a.md")
