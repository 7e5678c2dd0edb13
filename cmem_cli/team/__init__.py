"""Team memory on PostgreSQL with pgvector: one shared, live memory for a whole team (docs/team.md)."""
