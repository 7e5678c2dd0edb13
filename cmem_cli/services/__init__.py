"""What cmem does, shared by every front end: writes (privacy and the file transaction), search over store and index, details, the briefing, export upkeep, doctor."""
