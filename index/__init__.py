"""The derived, rebuildable search index over markdown collections (QMD-style)."""
