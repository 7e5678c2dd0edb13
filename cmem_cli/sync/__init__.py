"""The git front end: `cmem sync init URL` and `cmem sync` share the export tree through git."""
