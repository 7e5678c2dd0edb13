"""The markdown projection of the store: one front-mattered file per observation and summary."""
