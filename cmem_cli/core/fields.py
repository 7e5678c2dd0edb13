"""Field names every layer agrees on: the store's columns, the export's sections, the index's documents."""

from __future__ import annotations

# A session summary's text fields, in the order files and briefings show them.
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")

# The vocabularies the store's CHECK constraints enforce and the CLI offers as choices.
OBSERVATION_TYPES = (
    "decision",
    "bugfix",
    "feature",
    "refactor",
    "discovery",
    "change",
    "error",
    "insight",
    "question",
)
LINK_TYPES = ("caused_by", "led_to", "related", "supersedes", "reverts")
SESSION_STATUSES = ("active", "completed", "failed", "abandoned")

# A search's row orders and modes: what ``core.query.Query`` checks, the option table offers and the index runs.
ORDERS = ("relevance", "newest", "oldest")
MODES = ("auto", "keyword", "vector", "hybrid")

# The project option of the reads (search, timeline, context, view): the Query's table (core/query_fields.py)
# and the CLI's option table both say it with these, so `cmem context` need not load the Query's table.
PROJECT_FLAGS = ("--project", "-p")
# Whose memories a read keeps (the Query's ``machine``, and `timeline`'s, `session list`'s and `view`'s)
MACHINE_FLAGS = ("--machine",)
MACHINE_HELP = (
    "Only what was written on this machine (its name: CMEM_MACHINE, the config file's machine, its team "
    "name or its host name)."
)
SCOPED_PROJECT_HELP = (
    "Only this project (default: inside a git repository, its project; elsewhere every project)."
)

# The section headings cmem's export writes into every observation file, and the marker before its links. They
# are the same in every file, so the embedder does not see them (they would pull every vector towards the
# same words); keyword search and display keep them.
OBSERVATION_HEADINGS = ("## Facts", "## Files", "## Narrative", "## Related")
LINKS_MARKER = "<!-- cmem:links -->"
