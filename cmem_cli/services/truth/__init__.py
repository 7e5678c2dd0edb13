"""Whether a memory still holds: code anchors and their staleness, branches, supersession and its candidates."""
