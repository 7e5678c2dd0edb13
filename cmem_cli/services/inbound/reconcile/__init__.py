"""One way in: how a memory that arrives from elsewhere (git sync, the team database, a hand edit of the
export tree) is merged with this home's version and written.

- :mod:`.rule`: the one merge rule, field by field, for both remotes, and the one conflict copy.
- :mod:`.upsert`: the one upsert of a record by uid (its session, the key rule), on the store.
- :mod:`.writer`: the inbound writer (rows, links, forgets, export files) that git arrivals, team
  pulls and pushes, and the adoption of hand edits write through.

Submodules are imported by name: this package imports none of them, so the write service can use
:mod:`.upsert` without loading the writer (which stands on the write service).
"""
