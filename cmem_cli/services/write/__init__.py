"""Writing this home's memories: the write transaction over store and files, records, sessions, export, privacy."""
