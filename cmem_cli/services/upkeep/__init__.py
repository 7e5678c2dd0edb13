"""Keeping a home sound: doctor and its checks, crash recovery, export upkeep, the index and its models, config."""
