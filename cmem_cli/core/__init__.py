"""The kernel: errors and exit codes, config and paths, time, ids, FTS query building, filters, SQLite connections and migrations. Imports nothing else of cmem."""
