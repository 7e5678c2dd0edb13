"""Reading memories back: search, timeline windows, details, the briefing, recall and captured activity."""
