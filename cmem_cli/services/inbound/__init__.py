"""What comes in from elsewhere: git's arrivals, hand edits of the export tree, the one way in (reconcile)."""
