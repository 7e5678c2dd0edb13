"""Field names every layer agrees on: the store's columns, the export's sections, the index's documents."""

from __future__ import annotations

# A session summary's text fields, in the order files and briefings show them.
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")
