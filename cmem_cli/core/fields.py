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
